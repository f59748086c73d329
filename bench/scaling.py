"""Part 4: how cost grows with batch size, criteria and judges; cache and dedup on GRPO.

Shape on a stub judge with a small fixed latency (``bench/stub.py``, 5 ms per call), every
point on fresh distinct items and its own rubric copy (no cache carry-over):

- rewards/s as items per request grow (1..64, 4 requests in flight);
- rewards/s as criteria per rubric grow (1..20, batches of 8);
- rewards/s as judges per rubric grow (1..4 pool judges on the stub, batches of 8).

Then a GRPO-shaped workload: each step sends one request per prompt holding its group of
8 completions, sampled with repeats from that prompt's four completions (so a group holds
duplicates), and prompts recur in later steps (epochs), as in a small RL dataset. It runs
three ways: every call sent (``use_cache: false``), in-flight dedup only (cache size 0),
and cache + dedup (defaults).

With ``real_points``, a few points are repeated on the real CPU judge (criteria 1 vs 5,
batch 1 vs 8, one vs two judges when the secondary judge is up) and the GRPO workload too.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from bench.harness import (
    PRIMARY_MODEL,
    PRIMARY_URL,
    SECONDARY_MODEL,
    SECONDARY_URL,
    RunContext,
    distinct_items,
    judge_entry,
    log,
    rewardsvc_service,
    rubric_variant,
    send_batches,
    served_models,
    start_stub,
)
from bench.items import KINDS, SCENARIOS, bench_items
from bench.overhead import MAX_CONCURRENCY as STUB_MAX_CONCURRENCY
from rewardsvc.core.rubric import Rubric

STUB_DELAY_MS = 5.0
BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64)
CRITERIA_COUNTS = (1, 2, 5, 10, 20)
JUDGE_COUNTS = (1, 2, 3, 4)
STUB_JUDGES = ("primary", "secondary", "third", "fourth")
CONCURRENT_REQUESTS = 4
GROUP = 8
# How often a GRPO sample repeats each completion of its prompt (good answers are common).
KIND_WEIGHTS = (0.4, 0.3, 0.2, 0.1)


async def measure(
    url: str,
    rubric: Rubric,
    items: Sequence[dict[str, Any]],
    batch_size: int,
    concurrency: int = CONCURRENT_REQUESTS,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Send ``items`` and return rewards/s and what the service reports it did."""
    run = await send_batches(
        url, rubric.id, items, batch_size=batch_size, concurrency=concurrency, options=options
    )
    judges = len(rubric.judges)
    planned = len(items) * len(rubric.criteria) * judges
    calls = int(run.usage("judge_calls"))
    hits = int(run.usage("cache_hits"))
    return {
        "items": len(items),
        "batch_size": batch_size,
        "criteria": len(rubric.criteria),
        "judges": judges,
        "elapsed_s": run.elapsed_s,
        "rewards_per_s": len(items) / run.elapsed_s,
        "planned_calls": planned,
        "judge_calls": calls,
        "cache_hits": hits,
        "deduplicated": planned - calls - hits,
        "judge_calls_per_s": calls / run.elapsed_s,
        "statuses": run.statuses(),
    }


def grpo_workload(
    steps: int, prompts_per_step: int, scenarios: int, seed: int = 0
) -> list[list[list[dict[str, Any]]]]:
    """Steps of groups of items: ``prompts_per_step`` groups of ``GROUP`` completions each,
    prompts cycling through the first ``scenarios`` scenarios (so they recur across steps)."""
    rng = random.Random(seed)
    pool = SCENARIOS[:scenarios]
    out = []
    for step in range(steps):
        groups = []
        for j in range(prompts_per_step):
            scenario = pool[(step * prompts_per_step + j) % len(pool)]
            by_kind = {it["metadata"]["kind"]: it for it in scenario.items()}
            kinds = rng.choices(KINDS, weights=KIND_WEIGHTS, k=GROUP)
            groups.append([{**by_kind[k], "id": f"s{step}-p{j}-g{g}"} for g, k in enumerate(kinds)])
        out.append(groups)
    return out


async def run_grpo(
    url: str, rubric: Rubric, steps: list[list[list[dict[str, Any]]]], use_cache: bool
) -> dict[str, Any]:
    """Run the GRPO steps one after the other, the groups of a step concurrently."""
    totals: dict[str, Any] = {"items": 0, "elapsed_s": 0.0, "judge_calls": 0, "cache_hits": 0}
    options = None if use_cache else {"use_cache": False}
    for groups in steps:
        items = [it for g in groups for it in g]
        got = await measure(url, rubric, items, GROUP, concurrency=len(groups), options=options)
        for key in ("items", "elapsed_s", "judge_calls", "cache_hits"):
            totals[key] += got[key]
    planned = totals["items"] * len(rubric.criteria) * len(rubric.judges)
    totals.update(
        planned_calls=planned,
        deduplicated=planned - totals["judge_calls"] - totals["cache_hits"],
        rewards_per_s=totals["items"] / totals["elapsed_s"],
        distinct_items=len(
            {(it["prompt"], it["completion"]) for s in steps for g in s for it in g}
        ),
    )
    return totals


async def grpo_modes(
    ctx: RunContext, tag: str, pool: dict[str, Any], steps: list[list[list[dict[str, Any]]]]
) -> dict[str, Any]:
    """The GRPO workload with no cache and no dedup, dedup only, and cache + dedup."""
    out = {}
    modes = (
        ("every call sent", None, False),
        ("dedup only", 0, True),
        ("cache + dedup", None, True),
    )
    for i, (mode, cache_size, use_cache) in enumerate(modes):
        rubric = rubric_variant(f"{ctx.run_id}-{tag}-grpo-{i}")
        warm = rubric_variant(f"{ctx.run_id}-{tag}-grpo-warm-{i}")
        with rewardsvc_service(
            ctx.workdir / f"scaling-{tag}-grpo-{i}", pool, [rubric, warm], cache_size=cache_size
        ) as svc:
            await measure(svc.url, warm, distinct_items(bench_items(), 8, "warm"), GROUP)
            log(f"grpo ({tag}): {mode}")
            out[mode] = await run_grpo(svc.url, rubric, steps, use_cache)
    return out


async def run(ctx: RunContext) -> dict[str, Any]:
    """Run part 4 and return its results."""
    stub, url = start_stub(ctx.workdir / "scaling" / "logs", STUB_DELAY_MS)
    try:
        stub_results = await _stub_points(ctx, url)
    finally:
        stub.stop()
    real = await _real_points(ctx) if ctx.real_points else None
    return {"stub_delay_ms": STUB_DELAY_MS, "stub": stub_results, "real": real}


async def _stub_points(ctx: RunContext, url: str) -> dict[str, Any]:
    pool = {
        "judges": {
            name: judge_entry(url, f"fake-{name}", max_concurrency=STUB_MAX_CONCURRENCY)
            for name in STUB_JUDGES
        }
    }
    n = ctx.scaling_items
    points: dict[str, list[tuple[str, Rubric]]] = {
        "batch_size": [(str(b), rubric_variant(f"{ctx.run_id}-b{b}")) for b in BATCH_SIZES],
        "criteria": [
            (str(k), rubric_variant(f"{ctx.run_id}-k{k}", criteria=k)) for k in CRITERIA_COUNTS
        ],
        "judges": [
            (str(j), rubric_variant(f"{ctx.run_id}-j{j}", judges=STUB_JUDGES[:j]))
            for j in JUDGE_COUNTS
        ],
    }
    warm = rubric_variant(f"{ctx.run_id}-scale-warm", judges=STUB_JUDGES)
    rubrics = [warm] + [r for pts in points.values() for _, r in pts]
    out: dict[str, Any] = {}
    with rewardsvc_service(ctx.workdir / "scaling", pool, rubrics) as svc:
        await measure(svc.url, warm, distinct_items(bench_items(), 64, "warm"), 8)
        for dim, pts in points.items():
            out[dim] = []
            for value, rubric in pts:
                batch = int(value) if dim == "batch_size" else 8
                # At least two rounds of full batches from every in-flight request.
                count = max(n, 2 * batch * CONCURRENT_REQUESTS)
                items = distinct_items(bench_items(), count, f"{dim}-{value}")
                got = await measure(svc.url, rubric, items, batch)
                log(f"scaling (stub) {dim}={value}: {got['rewards_per_s']:.0f} rewards/s")
                out[dim].append({"value": int(value), **got})
    steps = grpo_workload(steps=8, prompts_per_step=8, scenarios=len(SCENARIOS))
    single = {"judges": {"primary": pool["judges"]["primary"]}}
    out["grpo"] = await grpo_modes(ctx, "stub", single, steps)
    return out


async def _real_points(ctx: RunContext) -> dict[str, Any] | None:
    if PRIMARY_MODEL not in served_models(PRIMARY_URL):
        log("scaling: primary judge down, skipping the real-judge points")
        return None
    judges = {"primary": judge_entry(PRIMARY_URL, PRIMARY_MODEL)}
    two = SECONDARY_MODEL in served_models(SECONDARY_URL)
    if two:
        judges["secondary"] = judge_entry(SECONDARY_URL, SECONDARY_MODEL, api="completion")
    pool = {"judges": judges}
    n = 8 if ctx.quick else 16
    specs = [
        ("criteria=1, batch 8", 1, 8, ["primary"]),
        ("criteria=5, batch 8", 5, 8, ["primary"]),
        ("criteria=5, batch 1", 5, 1, ["primary"]),
    ]
    if two:
        specs.append(("criteria=5, batch 8, 2 judges", 5, 8, ["primary", "secondary"]))
    rubrics = [
        rubric_variant(f"{ctx.run_id}-real-{i}", criteria=k, judges=js)
        for i, (_, k, _, js) in enumerate(specs)
    ]
    warm = rubric_variant(f"{ctx.run_id}-real-warm", judges=list(judges))
    out: dict[str, Any] = {"points": []}
    with rewardsvc_service(ctx.workdir / "scaling-real", pool, [warm, *rubrics]) as svc:
        await measure(svc.url, warm, distinct_items(bench_items(), 4, "warm"), 4)
        for (label, _, batch, _), rubric in zip(specs, rubrics, strict=True):
            items = distinct_items(bench_items(), n, f"real-{rubric.id}")
            got = await measure(svc.url, rubric, items, batch)
            log(f"scaling (real) {label}: {got['rewards_per_s']:.2f} rewards/s")
            out["points"].append({"label": label, **got})
    steps = grpo_workload(
        steps=2 if ctx.quick else 4, prompts_per_step=4, scenarios=4 if ctx.quick else 8
    )
    out["grpo"] = await grpo_modes(ctx, "real", {"judges": {"primary": judges["primary"]}}, steps)
    return out
