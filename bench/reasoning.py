"""What a reasoning judge costs per verdict, beside a plain logprob judge, on the CPU judges.

Both contenders are the same SmolLM2-135M weights on one CPU half: ``plain`` is the default
``primary`` judge (:8101, method logprob: one constrained token), ``think-B`` is the optional
``smollm2-think`` judge (:8103, ``--reasoning-parser deepseek_r1``) with ``reasoning:
{budget_tokens: B}`` (vLLM's thinking budget, ``min_tokens: B`` so the tiny model does not end
its turn inside its thinking). Each scores the same criterion of the bench items, one call per
verdict, ``--concurrency`` calls in flight, after the server's prefix cache is emptied and a
warm-up. Figures per verdict: judge calls, prompt, completion and reasoning tokens, the
median latency, and verdicts/s.

    deploy/cpu-judge/cpujudge.sh start smollm2-think && deploy/cpu-judge/cpujudge.sh wait
    .venv/bin/python -m bench.reasoning [--items 32] [--budgets 16,64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.items import bench_items, warmup_items
from bench.outputs import add_out_argument, write_results
from rewardsvc.application.items import read_item
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.judge import Judge

# Kept free of bench.harness (psutil, the bench extra): it needs the service's venv only.
BENCH_DIR = Path(__file__).resolve().parent
PLAIN_URL = "http://127.0.0.1:8101/v1"
THINK_URL = "http://127.0.0.1:8103/v1"
RUBRIC = Rubric(
    id="reasoning-bench",
    criteria=[{"id": "correct", "text": "The response answers the prompt correctly."}],
    judges=["j"],
)


def reset_prefix_cache(url: str) -> None:
    """Empty the vLLM server's prefix cache (dev mode, which cpujudge.sh sets)."""
    base = url.rstrip("/").removesuffix("/v1")
    urllib.request.urlopen(urllib.request.Request(base + "/reset_prefix_cache", method="POST"))


def machine() -> str:
    """Cores and Python of this machine."""
    return f"{os.cpu_count()} cores, {platform.machine()}, Python {sys.version.split()[0]}"


def contender(budget: int | None) -> JudgeConfig:
    """The plain judge (``budget`` None) or the reasoning judge with that budget."""
    if budget is None:
        return JudgeConfig(model="smollm2-135m-instruct", base_urls=[PLAIN_URL], retries=0)
    return JudgeConfig.model_validate(
        {
            "model": "smollm2-135m-think",
            "base_urls": [THINK_URL],
            "reasoning": {"budget_tokens": budget},
            "extra_body": {"min_tokens": budget},
            "retries": 0,
            "timeout_s": 300,
        }
    )


async def run(config: JudgeConfig, rollouts: list[Rollout], concurrency: int) -> dict[str, Any]:
    """Score ``rollouts`` with ``config``; the per-verdict figures."""
    judge = Judge("j", config)
    gate = asyncio.Semaphore(concurrency)

    async def one(rollout: Rollout) -> Verdict:
        async with gate:
            return await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], rollout))

    try:
        start = time.perf_counter()
        verdicts = await asyncio.gather(*(one(r) for r in rollouts))
        wall = time.perf_counter() - start
    finally:
        await judge.aclose()
    n = len(verdicts)
    ok = [v for v in verdicts if v.ok]
    return {
        "verdicts": n,
        "ok": len(ok),
        "errors": sorted({v.error_kind or "" for v in verdicts if not v.ok}),
        "calls_per_verdict": 1.0,
        "prompt_tokens": sum(v.prompt_tokens for v in verdicts) / n,
        "completion_tokens": sum(v.completion_tokens for v in verdicts) / n,
        "reasoning_tokens": sum(v.reasoning_tokens for v in verdicts) / n,
        "latency_ms_p50": statistics.median(v.latency_ms for v in verdicts),
        "verdicts_per_s": n / wall,
    }


def table(results: dict[str, dict[str, Any]]) -> str:
    """The Markdown table of the contenders, and each one's cost against ``plain``."""
    base = results["plain"]
    head = (
        "| contender | ok | calls/verdict | prompt tok | completion tok | reasoning tok "
        "| p50 ms | verdicts/s | time × plain |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = [
        f"| {name} | {r['ok']}/{r['verdicts']} | {r['calls_per_verdict']:.0f} "
        f"| {r['prompt_tokens']:.0f} | {r['completion_tokens']:.1f} | {r['reasoning_tokens']:.1f} "
        f"| {r['latency_ms_p50']:.0f} | {r['verdicts_per_s']:.2f} "
        f"| {base['verdicts_per_s'] / r['verdicts_per_s']:.1f} |"
        for name, r in results.items()
    ]
    return head + "\n".join(rows) + "\n"


async def main_async(args: argparse.Namespace) -> None:
    """Warm each contender up, then measure it on the bench items."""
    rollouts = [read_item(0, i).rollout for i in bench_items(args.items)]
    warm = [read_item(0, i).rollout for i in warmup_items(4)]
    budgets = [None, *(int(b) for b in args.budgets.split(","))]
    results: dict[str, dict[str, Any]] = {}
    for budget in budgets:
        name = "plain" if budget is None else f"think-{budget}"
        config = contender(budget)
        reset_prefix_cache(str(config.base_urls[0]))
        await run(config, [r for r in warm if r is not None], args.concurrency)
        print(f"[bench] {name}: {len(rollouts)} verdicts", file=sys.stderr)
        results[name] = await run(config, [r for r in rollouts if r is not None], args.concurrency)
    command = "python -m bench.reasoning " + " ".join(
        f"--{k} {v}" for k, v in vars(args).items() if k != "out"
    )
    markdown = (
        "# Reasoning judge vs plain logprob judge (SmolLM2-135M, vLLM 0.32 CPU)\n\n"
        f"`{command}`\n\nMachine: {machine()}\n\n{table(results)}"
    )
    write_results(args.out, "reasoning", {"command": command, "results": results}, markdown)


def main() -> None:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--budgets", default="16,64")
    parser.add_argument("--concurrency", type=int, default=8)
    add_out_argument(parser)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
