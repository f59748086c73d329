"""Prefix-affine vs round-robin routing over two replicas of the SmolLM2 judge.

The K criterion calls of one item share their prompt up to the last lines; vLLM reuses a
prefix only on the replica that computed it. This starts a second replica of the CPU
judge (the venv and model of ``deploy/cpu-judge``, started with the same vLLM arguments
as ``cpujudge.sh``, on its own port and the other half of the CPUs), then scores the
same items with the bench rubric through the scoring engine, in three arms, alternating:

- ``affine``: the judge's two base URLs (the shared judge and the new replica), routing
  ``affine`` (the default);
- ``round_robin``: the same two URLs, routing ``round_robin`` (the behaviour before);
- ``single``: the new replica alone.

Every run has a fresh rubric version (a run tag heads its instructions), so neither the
verdict cache nor an earlier run's prefix blocks help. Each replica of the run first scores
one warm-up item alone (``warm_rubric``), so the measured hit rates are those of the steady
state; the cold hit rate, warm-up included, is shown too. Around each run, vLLM's own
counters ``vllm:prefix_cache_queries_total`` / ``vllm:prefix_cache_hits_total`` are
read from each replica's ``/metrics``: the hit rate is hit tokens per queried token,
and the tokens left to prefill are their difference. The shared judge also serves tests
and other benches: a run whose query counters grew by more than its own prompt tokens
is marked unclean (its hit rate is still shown; the medians use clean runs when there
are any). Figures are medians over the repeats; affine vs round-robin is the median of
the ratios of runs made one after the other.

    .venv/bin/python -m bench.routing [--items 24] [--repeats 3] [--port 8103]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness import (
    BENCH_DIR,
    PRIMARY_URL,
    Process,
    cache_root,
    distinct_items,
    http_get,
    log,
    machine,
    rubric_variant,
)
from bench.items import bench_items
from bench.outputs import add_out_argument, write_results
from bench.steps import counters
from rewardsvc.application.items import read_item
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import ItemIn, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import Judge
from rewardsvc.library.registry import load_pool
from rewardsvc.scoring.engine import Engine

POOL = BENCH_DIR.parent / "deploy" / "cpu-judge" / "judges.yaml"
MODEL = "smollm2-135m-instruct"
ARMS = ("affine", "affine_unbounded", "round_robin", "single")
# The arm without a load bound: the most load_factor allows.
UNBOUNDED = 100.0


def replica_cpus() -> str:
    """The second half of this process's CPUs (the shared SmolLM2 judge has the first),
    as vLLM's ``VLLM_CPU_OMP_THREADS_BIND`` list; ``auto`` on one CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return "auto"
    half = cpus[len(cpus) // 2 :]
    return ",".join(str(c) for c in half)


def start_replica(port: int, logs: Path) -> Process:
    """A second SmolLM2 server, as ``cpujudge.sh`` starts one (same venv, model, args)."""
    root = cache_root() / "cpu-judge"
    python = root / "venv" / "bin" / "python"
    model = root / "models" / MODEL
    if not python.exists() or not model.exists():
        raise SystemExit(f"no CPU judge install under {root}: run deploy/cpu-judge/cpujudge.sh")
    if http_get(f"http://127.0.0.1:{port}/v1/models")[0] != 0:
        raise SystemExit(f"port {port} is taken; pass --port")
    env = dict(os.environ)
    env.update(
        {
            "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"),
            "VLLM_CPU_OMP_THREADS_BIND": replica_cpus(),
            "VLLM_CACHE_ROOT": str(root / "vllm-cache"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
    )
    argv = [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        "2048",
        "--max-logprobs",
        "20",
        "--block-size",
        "32",
        "--dtype",
        "float32",
        "--enforce-eager",
    ]
    log(f"starting a second {MODEL} replica on :{port} (CPUs {env['VLLM_CPU_OMP_THREADS_BIND']})")
    return Process(f"replica-{port}", argv, env, logs)


def metrics_of(url: str) -> str:
    """A replica's /metrics from its /v1 base URL."""
    return url.removesuffix("/v1") + "/metrics"


async def one_run(
    arm: str, urls: dict[str, str], base: JudgeConfig, tag: str, count: int
) -> dict[str, Any]:
    """Score ``count`` bench items × the bench rubric's criteria once in ``arm``."""
    used = [urls["replica"]] if arm == "single" else [urls["shared"], urls["replica"]]
    routing = "round_robin" if arm == "round_robin" else "affine"
    update: dict[str, Any] = {"base_urls": used, "routing": routing}
    if arm == "affine_unbounded":
        update["load_factor"] = UNBOUNDED
    config = base.model_copy(update=update)
    rubric: Rubric = rubric_variant(tag, judges=["primary"])
    raws = distinct_items(bench_items(), count, "r")  # the same items in every run
    batch: list[ItemIn] = [read_item(i, raw) for i, raw in enumerate(raws)]
    judge = Judge("primary", config)
    engine = Engine({"primary": judge})
    async with httpx.AsyncClient(timeout=30) as http:
        cold = {u: await counters(http, metrics_of(u)) for u in used}
        await warm_rubric(rubric, config, used)
        before = {u: await counters(http, metrics_of(u)) for u in used}
        start = time.perf_counter()
        result = await engine.score(rubric, batch, ScoreOptions(use_cache=False))
        elapsed = time.perf_counter() - start
        after = {u: await counters(http, metrics_of(u)) for u in used}
    calls = {u: e.calls for u, e in zip(used, judge.backend.endpoints, strict=True)}
    await engine.aclose()
    per_url = {
        u: {k: after[u][k] - before[u][k] for k in ("queries", "hits")} | {"calls": calls[u]}
        for u in used
    }
    own_cold = {
        k: after[urls["replica"]][k] - cold[urls["replica"]][k] for k in ("queries", "hits")
    }
    queries = sum(c["queries"] for c in per_url.values())
    hits = sum(c["hits"] for c in per_url.values())
    prompt_tokens = result.usage.prompt_tokens
    statuses = [r.status for r in result.items]
    own = per_url[urls["replica"]]
    return {
        "arm": arm,
        "tag": tag,
        "items": count,
        "elapsed_s": round(elapsed, 3),
        "rewards_per_s": round(count / elapsed, 3),
        "ok_items": sum(s in ("ok", "degraded") for s in statuses),
        "judge_calls": result.usage.judge_calls,
        "per_url": per_url,
        "prompt_tokens": prompt_tokens,
        "queried_tokens": queries,
        "hit_tokens": hits,
        "prefilled_tokens": queries - hits,
        "hit_rate": round(hits / queries, 4) if queries else 0.0,
        # Equal when no other client reached the replicas during the run.
        "clean": queries == prompt_tokens,
        # The bench's own replica serves nobody else: its hit rate is always clean.
        "replica_hit_rate": round(own["hits"] / own["queries"], 4) if own["queries"] else 0.0,
        "replica_hit_rate_cold": round(own_cold["hits"] / own_cold["queries"], 4)
        if own_cold["queries"]
        else 0.0,
        "replica_prefill_per_call": round((own["queries"] - own["hits"]) / own["calls"], 1)
        if own["calls"]
        else 0.0,
    }


async def warm_rubric(rubric: Rubric, config: JudgeConfig, used: list[str]) -> None:
    """Score one warm-up item on each replica alone: each computes the run's rubric head
    (the prefix every call of the run shares) once, as at the start of any real run.

    The measured counters start after it, so the hit rates compare routings in the steady
    state a training run spends its time in; without it, two replicas prefill the head
    twice where one replica prefills it once (shown as the cold hit rate). The warm-up
    item's task is none of the measured items' tasks, so it caches nothing they use."""
    warm = distinct_items(bench_items()[-1:], 1, "warm")
    for url in used:
        engine = Engine(
            {"primary": Judge("primary", config.model_copy(update={"base_urls": [url]}))}
        )
        await engine.score(rubric, [read_item(0, warm[0])], ScoreOptions(use_cache=False))
        await engine.aclose()


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    """The median of ``key`` over the clean runs (all runs when none is clean)."""
    clean = [r[key] for r in runs if r["clean"]] or [r[key] for r in runs]
    return round(statistics.median(clean), 4) if clean else None


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b`` to three places, None without a ``b``."""
    return round(a / b, 3) if a is not None and b else None


async def measure(count: int, repeats: int, urls: dict[str, str]) -> dict[str, Any]:
    """Warm both replicas up, then ``repeats`` rounds of every arm, the order rotating."""
    base = load_pool(POOL).judges["primary"]
    stamp = time.strftime("%H%M%S")
    for arm in ("affine", "single"):
        await one_run(arm, urls, base, f"warm-{stamp}-{arm}", 4)
    runs: list[dict[str, Any]] = []
    for r in range(repeats):
        order = ARMS[r % len(ARMS) :] + ARMS[: r % len(ARMS)]
        for arm in order:
            # The tag heads every prompt of the run: tags of one token length (digits are
            # single tokens) keep the arms' prompts aligned alike on the KV blocks, which
            # the prefix cache reuses whole (an arm's name there moved every boundary).
            tag = f"{stamp}-{r}-{ARMS.index(arm)}"
            run = await one_run(arm, urls, base, tag, count)
            run["repeat"] = r
            log(
                f"repeat {r} {arm}: {run['rewards_per_s']} rewards/s, hit rate on the "
                f"bench's replica {run['replica_hit_rate']} "
                f"({run['replica_prefill_per_call']} tokens prefilled per call)"
            )
            runs.append(run)
    by_arm = {arm: [r for r in runs if r["arm"] == arm] for arm in ARMS}
    summary: dict[str, dict[str, Any]] = {}
    for arm, arm_runs in by_arm.items():
        summary[arm] = {
            key: median_of(arm_runs, key)
            for key in ("rewards_per_s", "hit_rate", "prefilled_tokens", "queried_tokens")
        }
        for key in ("replica_hit_rate", "replica_hit_rate_cold", "replica_prefill_per_call"):
            summary[arm][key] = round(statistics.median(r[key] for r in arm_runs), 4)
        summary[arm]["clean_runs"] = sum(r["clean"] for r in arm_runs)
        summary[arm]["runs"] = len(arm_runs)
    per_round: dict[str, list[float]] = {"affine": [], "affine_unbounded": []}
    for r in range(repeats):
        rnd = {x["arm"]: x for x in runs if x["repeat"] == r}
        for arm, ratios in per_round.items():
            ratios.append(round(rnd[arm]["rewards_per_s"] / rnd["round_robin"]["rewards_per_s"], 3))
    s = summary
    return {
        "items": count,
        "criteria": len(rubric_variant("probe").criteria),
        "repeats": repeats,
        "urls": urls,
        "machine": machine(),
        "runs": runs,
        "summary": summary,
        "rewards_per_s_over_round_robin": {
            arm: {"median": statistics.median(x), "each": x} for arm, x in per_round.items()
        },
        "replica_hit_rate_over_round_robin": {
            arm: ratio(s[arm]["replica_hit_rate"], s["round_robin"]["replica_hit_rate"])
            for arm in ("affine", "affine_unbounded")
        },
        "replica_hit_rate_over_single": {
            arm: ratio(s[arm]["replica_hit_rate"], s["single"]["replica_hit_rate"])
            for arm in ("affine", "affine_unbounded", "round_robin")
        },
        "hit_rate_over_single": {
            arm: ratio(s[arm]["hit_rate"], s["single"]["hit_rate"])
            for arm in ("affine", "affine_unbounded", "round_robin")
        },
        "replica_cold_hit_rate_over_single": {
            arm: ratio(s[arm]["replica_hit_rate_cold"], s["single"]["replica_hit_rate_cold"])
            for arm in ("affine", "affine_unbounded", "round_robin")
        },
        "replica_prefill_per_call_over_round_robin": {
            arm: ratio(
                s[arm]["replica_prefill_per_call"], s["round_robin"]["replica_prefill_per_call"]
            )
            for arm in ("affine", "affine_unbounded", "single")
        },
    }


REPLICAS = {"affine": 2, "affine_unbounded": 2, "round_robin": 2, "single": 1}


def markdown(result: dict[str, Any], command: str) -> str:
    """The results as Markdown: the medians, the ratios, then every run."""
    s = result["summary"]
    speed = result["rewards_per_s_over_round_robin"]
    hit_rr = result["replica_hit_rate_over_round_robin"]
    hit_one = result["replica_hit_rate_over_single"]
    cold_one = result["replica_cold_hit_rate_over_single"]
    both_one = result["hit_rate_over_single"]
    prefill = result["replica_prefill_per_call_over_round_robin"]
    lines = [
        "# Prefix-affine routing over two judge replicas",
        "",
        f"`{command}`: {result['items']} bench items × {result['criteria']} criteria of "
        f"`bench/rubric.yaml` per run, {result['repeats']} rounds of the arms in rotating "
        "order, a fresh rubric version per run, each replica warmed on it with one "
        "item of a task not measured before the counters start (the cold hit rate counts "
        "the warm-up too). Replicas: SmolLM2-135M on vLLM (CPU), "
        f"`{result['urls']['shared']}` (shared with other users of this machine) and "
        f"`{result['urls']['replica']}` (started by this bench, on the other CPU). Arms: "
        "`affine` (the default, load factor 1.25), `affine_unbounded` (load factor 100: "
        "no spill), `round_robin` (each call to the next URL), `single` (the bench's "
        "replica alone). Prefix-cache figures from each replica's own `/metrics` "
        "(`vllm:prefix_cache_hits_total` / `queries_total`).",
        "",
        "| arm | replicas | rewards/s | hit rate, bench's replica | cold hit rate, bench's "
        "replica | tokens prefilled per call, bench's replica | hit rate, both replicas "
        "| clean runs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for arm, replicas in REPLICAS.items():
        a = s[arm]
        lines.append(
            f"| {arm} | {replicas} | {a['rewards_per_s']} | {a['replica_hit_rate']} | "
            f"{a['replica_hit_rate_cold']} | "
            f"{a['replica_prefill_per_call']} | {a['hit_rate']} | "
            f"{a['clean_runs']} of {a['runs']} |"
        )
    lines += [
        "",
        "Ratios (medians; rewards/s as the median of per-round ratios):",
        "",
        f"- rewards/s ÷ round-robin: affine **{speed['affine']['median']}** "
        f"(rounds {speed['affine']['each']}), unbounded "
        f"**{speed['affine_unbounded']['median']}** (rounds {speed['affine_unbounded']['each']})",
        f"- hit rate on the bench's replica ÷ round-robin: affine **{hit_rr['affine']}**, "
        f"unbounded **{hit_rr['affine_unbounded']}**",
        f"- hit rate over both replicas ÷ one replica alone (target: at least 1): affine "
        f"**{both_one['affine']}**, unbounded **{both_one['affine_unbounded']}**, "
        f"round-robin **{both_one['round_robin']}**",
        f"- hit rate on the bench's replica, two replicas ÷ that replica alone: affine "
        f"**{hit_one['affine']}**, unbounded "
        f"**{hit_one['affine_unbounded']}**, round-robin **{hit_one['round_robin']}**; "
        f"cold (warm-up included: the rubric head prefilled once per replica): affine "
        f"{cold_one['affine']}, unbounded {cold_one['affine_unbounded']}, round-robin "
        f"{cold_one['round_robin']}",
        f"- tokens prefilled per call on the bench's replica ÷ round-robin: affine "
        f"**{prefill['affine']}**, unbounded **{prefill['affine_unbounded']}**, one replica "
        f"**{prefill['single']}**",
        "",
        "The bench's replica serves no one else, so its figures are exact in every run; the "
        "shared judge also served tests and other benches, so figures over both replicas "
        "are medians over clean runs (no other client's tokens in its counters), or over "
        "all runs when none is clean. Every run (per URL: calls, queried / hit tokens):",
        "",
        "| round | arm | rewards/s | hit rate, both | per URL | clean |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in result["runs"]:
        per = "; ".join(
            f"{c['calls']} calls, {c['queries']:.0f}/{c['hits']:.0f}" for c in r["per_url"].values()
        )
        lines.append(
            f"| {r['repeat']} | {r['arm']} | {r['rewards_per_s']} | {r['hit_rate']} | "
            f"{per} | {'yes' if r['clean'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Start the second replica, run the arms, stop it; write ``<out>.md`` and ``.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--port", type=int, default=8103, help="port of the second replica")
    add_out_argument(parser)
    args = parser.parse_args()
    shared = os.environ.get("BENCH_PRIMARY_URL", PRIMARY_URL).rstrip("/")
    if http_get(f"{shared}/models")[0] != 200:
        raise SystemExit(f"the CPU judge at {shared} does not answer: cpujudge.sh start")
    replica_url = f"http://127.0.0.1:{args.port}/v1"
    logs = cache_root() / "bench-routing" / "logs"
    with start_replica(args.port, logs) as replica:
        replica.wait_http(f"{replica_url}/models", timeout=600)
        urls = {"shared": shared, "replica": replica_url}
        result = asyncio.run(measure(args.items, args.repeats, urls))
    command = f".venv/bin/python -m bench.routing --items {args.items} --repeats {args.repeats}"
    write_results(args.out, "routing", result, markdown(result, command))


if __name__ == "__main__":
    main()
