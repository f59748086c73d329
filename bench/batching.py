"""Criteria batching vs per-criterion calls vs the sequential TRL-style peer, on the CPU judge.

One ``rewardsvc serve`` holds two pool judges on the same real SmolLM2 server: ``percrit``
(method ``logprob``: one call per criterion) and ``batched`` (method ``batched``: one call
per item reading all criteria). Each round scores the bench items with both, through HTTP as
a trainer does (batches of ``--batch-size``, ``--concurrency`` requests in flight), and runs
the TRL-style peer of ``bench.peers`` (one 1-10 call per completion, in sequence) on the same
items; the order of the three rotates between rounds, and the median round of each is
reported. Before each run the judge's prefix cache is emptied (``harness.reset_prefix_cache``)
and every run scores its own rubric copy (``harness.rubric_variant``) after a warm-up on
held-out items, so neither rewardsvc's verdict cache nor vLLM's prefix cache carries over
(the peer's prompt has no run tag: without the reset it found the items it scored in the
round before still cached).

Figures: judge prompt tokens per reward, the prompt tokens the judge computed per reward (not
found in its prefix cache) beside the least its prompt layout allows (``bench.prefill``),
rewards/s, the Pearson and Spearman correlation of
the two methods' rewards (and of their criterion scores) on the same items, and the mean
reward by item kind. Target (issue 18): batched ≥ 1.5× the peer's rewards/s in the same run,
with per-criterion probabilities and good answers ranked above bad ones and attacks.

    .venv/bin/python -m bench.batching [--items 16] [--repeats 3] [--out bench/results]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import re
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import peers, prefill
from bench.e2e import Contender, peer_run, service_contender
from bench.harness import (
    PRIMARY_MODEL,
    PRIMARY_URL,
    http_get,
    judge_entry,
    log,
    machine,
    prefix_counters,
    reset_prefix_cache,
    rewardsvc_service,
    rubric_variant,
    send_batches,
    served_models,
)
from bench.items import bench_items, warmup_items
from bench.outputs import add_out_argument, write_results
from rewardsvc.application.items import read_item
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges import prompts
from rewardsvc.judges.batching import batch_prompt
from rewardsvc.judges.methods import method_for
from rewardsvc.judges.shapes import CHAT, shape_for
from rewardsvc.monitor.stats import pearson, spearman

METHODS = {"percrit": "logprob", "batched": "batched"}
_SERVED = re.compile(r"^vllm:request_success_total\{[^}]*\} ([0-9.e+]+)$", re.M)
TARGET = 1.5


def correlations(a: Sequence[float], b: Sequence[float]) -> dict[str, float | int]:
    """Pearson and Spearman correlation of paired values (NaN when undefined)."""

    def shown(value: float | None) -> float:
        return math.nan if value is None else round(value, 3)

    return {"n": len(a), "pearson": shown(pearson(a, b)), "spearman": shown(spearman(a, b))}


def judge_counters() -> dict[str, float]:
    """Requests the judge server has finished (``vllm:request_success_total``, all reasons)
    and its prefix-cache counters: prompt tokens queried and found cached."""
    status, text = http_get(re.sub(r"/v1/?$", "", PRIMARY_URL) + "/metrics")
    if status != 200:
        return {"served": math.nan, "queries": math.nan, "hits": math.nan}
    return {"served": sum(float(v) for v in _SERVED.findall(text)), **prefix_counters(text)}


def call_messages(who: str, rubric: Rubric, items: Sequence[dict[str, Any]]) -> list[Any]:
    """The chat messages of every judge call a contender makes for ``items``, in order."""
    out: list[Any] = []
    for item in items:
        if who == "trl":
            out.append(
                peers.trl_messages(
                    rubric, item["prompt"], item["completion"], item.get("reference")
                )
            )
            continue
        rollout = read_item(0, item).rollout
        assert rollout is not None, item
        if who == "batched":
            out.append(batch_prompt(rubric, rubric.criteria, rollout, CHAT).prompt.messages)
        else:
            out += [
                prompts.criterion_prompt(
                    rubric, c, rollout, prompts.Asking(method_for("logprob"), shape_for("chat"))
                ).messages
                for c in rubric.criteria
            ]
    return out


def least_prefill(
    who: str, rubric: Rubric, items: Sequence[dict[str, Any]], warm: Sequence[dict[str, Any]]
) -> float:
    """Prompt tokens per reward that a contender's calls compute on the judge with a perfect
    prefix cache, its warm-up seen first (``bench.prefill``)."""

    def tokens(its: Sequence[dict[str, Any]]) -> list[list[int]]:
        return [
            prefill.tokenize(PRIMARY_URL, PRIMARY_MODEL, m) for m in call_messages(who, rubric, its)
        ]

    block = prefill.block_size(PRIMARY_URL)
    return prefill.least_prefill(tokens(warm), tokens(items), block) / len(items)


def criterion_scores(results: Sequence[dict[str, Any]], judge: str) -> dict[tuple[str, str], float]:
    """``(item id, criterion id) -> score`` of one judge's criteria in a run's results."""
    out = {}
    for res in results:
        criteria = (res.get("judges") or {}).get(judge, {}).get("criteria") or {}
        for cid, c in criteria.items():
            if c.get("score") is not None:
                out[(res["id"], cid)] = float(c["score"])
    return out


def median(runs: list[tuple[Contender, Any]]) -> tuple[Contender, Any]:
    """The run with the median rewards/s (its raw results along), noting every run's rate."""
    ordered = sorted(runs, key=lambda r: r[0].rewards_per_s)
    chosen = ordered[len(ordered) // 2]
    chosen[0].notes["runs_rewards_per_s"] = [round(c.rewards_per_s, 3) for c, _ in runs]
    return chosen


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run the rounds and return the figures."""
    if PRIMARY_MODEL not in served_models(PRIMARY_URL):
        raise RuntimeError(f"the judge {PRIMARY_MODEL} does not answer at {PRIMARY_URL}")
    items = bench_items(args.items)
    warm = warmup_items(args.warmup)
    run_id = time.strftime("%Y%m%d%H%M%S")
    pool = {
        "judges": {
            name: {**judge_entry(PRIMARY_URL, PRIMARY_MODEL), "method": method}
            for name, method in METHODS.items()
        }
    }
    # One rubric copy per run, for its warm-up and its items alike (so the rubric's part of
    # the prompt is cached when the items come, as the peer's is): no verdict carries over
    # between rounds, and the prefix cache is emptied before each run.
    rubrics = {
        (name, r): rubric_variant(f"{run_id}-{name}-{r}", judges=[name])
        for name in METHODS
        for r in range(args.repeats)
    }
    runs: dict[str, list[tuple[Contender, Any]]] = {name: [] for name in (*METHODS, "trl")}
    resets: list[bool] = []
    with rewardsvc_service(args.workdir, pool, list(rubrics.values())) as svc:
        for r in range(args.repeats):
            order = ["percrit", "batched", "trl"]
            order = order[r % 3 :] + order[: r % 3]
            for who in order:
                log(f"round {r + 1}/{args.repeats}: {who}, {len(items)} items")
                resets.append(reset_prefix_cache(PRIMARY_URL))
                if who == "trl":
                    rubric = rubric_variant(f"{run_id}-trl-{r}")
                    peers.trl_style(PRIMARY_URL, PRIMARY_MODEL, rubric, warm, [])
                    before = judge_counters()
                    got = peers.trl_style(PRIMARY_URL, PRIMARY_MODEL, rubric, items, [])
                    contender = peer_run("TRL-style reward func (1-10, sequential)", items, got)
                    own = got.calls
                    runs[who].append((contender, got.rewards))
                else:
                    sizes = {"batch_size": args.batch_size, "concurrency": args.concurrency}
                    await send_batches(svc.url, rubrics[(who, r)].id, warm, **sizes)
                    before = judge_counters()
                    batch = await send_batches(svc.url, rubrics[(who, r)].id, items, **sizes)
                    contender = service_contender(
                        f"rewardsvc {who} (method {METHODS[who]})", "rewardsvc", items, batch
                    )
                    own = contender.calls
                    runs[who].append((contender, batch.results))
                # Other clients of the shared judge slow every contender; say how many.
                after = judge_counters()
                contender.notes["foreign_requests"] = after["served"] - before["served"] - own
                # Prompt tokens the judge computed (not found in its prefix cache) per reward:
                # on a CPU judge, where prefill compute is the limit, what sets rewards/s.
                computed = (after["queries"] - before["queries"]) - (after["hits"] - before["hits"])
                contender.notes["prefilled_tokens_per_reward"] = computed / len(items)
                layout = rubric if who == "trl" else rubrics[(who, r)]
                contender.notes["least_prefill_per_reward"] = least_prefill(
                    who, layout, items, warm
                )
                log(
                    f"  {who}: {contender.rewards_per_s:.3f} rewards/s "
                    f"({contender.notes['foreign_requests']:.0f} foreign requests meanwhile)"
                )

    chosen = {who: median(got) for who, got in runs.items()}
    per, bat = chosen["percrit"][1], chosen["batched"][1]
    by_id = {x["id"]: x["reward"] for x in per}
    pairs = [(by_id[x["id"]], x["reward"]) for x in bat if by_id.get(x["id"]) is not None]
    pairs = [(a, b) for a, b in pairs if b is not None]
    crit_a, crit_b = criterion_scores(per, "percrit"), criterion_scores(bat, "batched")
    shared = sorted(set(crit_a) & set(crit_b))
    probs_in_range = all(
        0.0 < c["score"] < 1.0
        for x in bat
        for c in ((x.get("judges") or {}).get("batched", {}).get("criteria") or {}).values()
        if c.get("score") is not None
    )
    speed = {who: c.rewards_per_s for who, (c, _) in chosen.items()}
    kinds = chosen["batched"][0].by_kind
    ranked = all(kinds.get("good", math.nan) > kinds.get(k, math.nan) for k in ("bad", "attack"))
    ratio = speed["batched"] / speed["trl"] if speed["trl"] else math.nan
    return {
        "judge": {"url": PRIMARY_URL, "model": PRIMARY_MODEL},
        "items": len(items),
        "warmup_items": len(warm),
        "repeats": args.repeats,
        "batch_size": args.batch_size,
        "concurrency": args.concurrency,
        "prefix_cache_reset_before_each_run": all(resets),
        "contenders": {who: c.as_dict() for who, (c, _) in chosen.items()},
        "agreement": {
            "rewards": correlations([a for a, _ in pairs], [b for _, b in pairs]),
            "criteria": correlations([crit_a[k] for k in shared], [crit_b[k] for k in shared]),
            "mean_abs_reward_diff": round(statistics.mean(abs(a - b) for a, b in pairs), 3)
            if pairs
            else math.nan,
        },
        "target": {
            "batched_over_trl": round(ratio, 3),
            "batched_over_percrit": round(speed["batched"] / speed["percrit"], 3),
            "ratio_met": ratio >= TARGET,
            "good_above_bad_and_attack": ranked,
            "criterion_probabilities_in_0_1": probs_in_range,
        },
        "machine": machine(),
    }


def markdown(result: dict[str, Any], command: str) -> str:
    """The figures as the Markdown report."""
    t = result["target"]
    lines = [
        "# Criteria batching vs per-criterion calls vs the sequential 1-10 peer",
        "",
        f"`{command}`: {result['items']} bench items (after {result['warmup_items']} warm-up "
        f"items) on the real CPU judge {result['judge']['model']}, {result['repeats']} rounds "
        "in rotating order, median round of each contender; rewardsvc fed over HTTP in "
        f"batches of {result['batch_size']}, {result['concurrency']} requests in flight. "
        "The judge's prefix cache was emptied before each run: "
        f"{'yes' if result.get('prefix_cache_reset_before_each_run') else '**no**'}.",
        "",
        "| contender | rewards/s (runs) | judge calls | prompt tokens / reward | "
        "completion tokens / reward | prefilled tokens / reward (least possible) | valid | "
        "good | partial | bad | attack | foreign |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in result["contenders"].values():
        k = c["by_kind"]
        runs = ", ".join(f"{x:.2f}" for x in c["notes"].get("runs_rewards_per_s", []))
        lines.append(
            f"| {c['name']} | {c['rewards_per_s']:.3f} ({runs}) | {c['calls']} | "
            f"{c['prompt_tokens'] / c['items']:.0f} | {c['completion_tokens'] / c['items']:.1f} | "
            f"{c['notes'].get('prefilled_tokens_per_reward', math.nan):.0f} "
            f"({c['notes'].get('least_prefill_per_reward', math.nan):.0f}) | "
            f"{c['valid']}/{c['items']} | {k.get('good', '-')} | {k.get('partial', '-')} | "
            f"{k.get('bad', '-')} | {k.get('attack', '-')} | "
            f"{c['notes'].get('foreign_requests', math.nan):.0f} |"
        )
    a = result["agreement"]
    lines += [
        "",
        f"Agreement of batched with per-criterion scoring on the same items: rewards Pearson "
        f"{a['rewards']['pearson']}, Spearman {a['rewards']['spearman']} (n={a['rewards']['n']}), "
        f"mean |difference| {a['mean_abs_reward_diff']}; criterion scores Pearson "
        f"{a['criteria']['pearson']}, Spearman {a['criteria']['spearman']} "
        f"(n={a['criteria']['n']}).",
        "",
        f"Target: batched / TRL-style rewards/s = **{t['batched_over_trl']}** (target ≥ "
        f"{TARGET}: {'met' if t['ratio_met'] else 'NOT met'}); batched / per-criterion = "
        f"{t['batched_over_percrit']}; batched ranks good above bad and attack: "
        f"{t['good_above_bad_and_attack']}; every batched criterion probability in (0, 1): "
        f"{t['criterion_probabilities_in_0_1']}.",
        "",
        "`prefilled tokens`: prompt tokens the judge computed, not found in its prefix cache "
        "(vLLM's `vllm:prefix_cache_queries_total` minus `hits_total`), per reward; in "
        "brackets, what the contender's prompts cost with a perfect prefix cache "
        "(`bench/prefill.py`: each call computes what it does not share, in whole KV blocks, "
        "with an earlier prompt). "
        "`foreign`: requests the judge server finished during the median run that were not "
        "the contender's (other clients of the shared judge), from vLLM's "
        "`vllm:request_success_total`. The judge is a 135M model on a shared, loaded CPU: "
        "the figures show cost and mechanics, not judging quality.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Run the measurement and write ``<out>.json`` and ``<out>.md``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=16, help="bench items, at most 64")
    parser.add_argument("--warmup", type=int, default=4, help="held-out warm-up items per run")
    parser.add_argument("--repeats", type=int, default=3, help="rounds (rotating order)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=2, help="requests in flight")
    add_out_argument(parser)
    parser.add_argument("--workdir", type=Path, help="service files (default: a temporary folder)")
    args = parser.parse_args()
    args.workdir = args.workdir or Path(tempfile.mkdtemp(prefix="rewardsvc-bench-batching-"))
    result = asyncio.run(measure(args))
    command = (
        f".venv/bin/python -m bench.batching --items {args.items} --repeats {args.repeats} "
        f"--batch-size {args.batch_size} --concurrency {args.concurrency}"
    )
    write_results(args.out, "batching", result, markdown(result, command))


if __name__ == "__main__":
    main()
