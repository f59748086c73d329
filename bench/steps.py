"""Process-reward step calls and the judge's prefix cache, read from the judge's /metrics.

A process rubric asks each step criterion once per assistant step, the judge seeing the
trajectory up to that step; the prompts are laid out so that the call for step k+1
starts with the whole item part of the call for step k. This measures what the judge's
prefix cache makes of it: for each real CPU judge, the calls of one step criterion for
every step of one trajectory run one at a time in plan order (``steps``), then the same
calls with a unique line at the head of the task (``cold``: the prompts share only the
grader rules and the rubric), and
vLLM's own counters ``vllm:prefix_cache_hits_total`` / ``vllm:prefix_cache_queries_total``
are read before and after each call. The figure is the hit ratio (hit tokens / prompt
tokens) of each arm and their ratio, measured in one run.

The counters are the server's: a call during which other requests reached the judge is
left out of the figures (its count is reported), so idle judges give the most calls.

    .venv/bin/python -m bench.steps [--steps 6] [--out bench/results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.harness import prefix_counters
from bench.outputs import add_out_argument, write_results
from rewardsvc.application.items import read_item
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.judge import Judge
from rewardsvc.library.registry import load_pool
from rewardsvc.library.yamlfile import load_file
from rewardsvc.scoring import steps

ROOT = Path(__file__).resolve().parent.parent
POOL = ROOT / "deploy" / "cpu-judge" / "judges.yaml"
RUBRIC = ROOT / "rubrics" / "agent-process.yaml"


def trajectory(n_steps: int, salt: str = "") -> dict[str, Any]:
    """An item whose completion has ``n_steps`` assistant steps (tool calls, then the
    answer); ``salt`` heads the task, so that salted items share no item prefix."""
    out: list[dict[str, Any]] = []
    for k in range(n_steps - 1):
        call = {"name": "search", "arguments": json.dumps({"query": f"flight options part {k}"})}
        out.append({"role": "assistant", "tool_calls": [{"id": f"c{k}", "function": call}]})
        out.append(
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"Result {k}: " + "fare " * 40}
        )
    out.append({"role": "assistant", "content": "The cheapest fare is on Tuesday."})
    task = f"{salt}Find the cheapest flight from Oslo to Rome next week."
    return {"prompt": [{"role": "user", "content": task}], "completion": out}


def metrics_url(config: JudgeConfig) -> str:
    """The judge server's /metrics (its base URL without ``/v1``)."""
    return re.sub(r"/v1/?$", "", str(config.base_urls[0])) + "/metrics"


async def counters(http: httpx.AsyncClient, url: str) -> dict[str, float]:
    """The prefix-cache counters of one vLLM server (summed over its engines)."""
    return prefix_counters((await http.get(url)).text)


@dataclass
class Arm:
    """One arm's totals over its clean calls (see ``run_arm``): prompt tokens queried and
    hit in the prefix cache; ``calls`` made, ``clean`` of them counted."""

    calls: int = 0
    clean: int = 0
    queries: float = 0.0
    hits: float = 0.0

    @property
    def hit_ratio(self) -> float:
        """Hit tokens per queried token."""
        return self.hits / self.queries if self.queries else 0.0


async def run_arm(
    judge: Judge, rubric: Rubric, calls: list[steps.StepCall], http: httpx.AsyncClient
) -> Arm:
    """The calls one at a time, the judge's counters read around each.

    A call counts only when it scored and the judge's query counter grew by exactly the
    call's own prompt tokens: then no other request reached the judge meanwhile (the CPU
    judges are shared with tests and other benches)."""
    arm = Arm()
    url = metrics_url(judge.config)
    for call in calls:
        before = await counters(http, url)
        verdict = await judge.ask(CriterionOnItem(rubric, call.criterion, call.rollout))
        after = await counters(http, url)
        arm.calls += 1
        queried = after["queries"] - before["queries"]
        if not verdict.ok or queried != verdict.prompt_tokens:
            continue
        arm.clean += 1
        arm.queries += queried
        arm.hits += after["hits"] - before["hits"]
    return arm


def rollout_of(item: dict[str, Any]) -> Rollout:
    got = read_item(0, item)
    if got.rollout is None:
        raise ValueError(got.error)
    return got.rollout


async def measure(n_steps: int) -> dict[str, Any]:
    """Both arms on every judge of the CPU pool."""
    pool = load_pool(POOL)
    rubric = load_file(RUBRIC, Rubric)
    # A unique run tag keeps earlier runs' cached blocks out of this run's figures.
    tag = f"run {time.time_ns()}: "
    # One criterion: consecutive calls then differ by step only, which isolates what the
    # step layout shares (calls for several criteria of one step share even more).
    first = rubric.step_criteria[0].id

    def plan(salt: str) -> list[steps.StepCall]:
        calls = steps.plan(rubric, rollout_of(trajectory(n_steps, salt)))
        return [c for c in calls if c.criterion.id == first]

    warm = plan(tag)
    cold = [plan(f"{tag}call {n}: ")[n] for n in range(len(warm))]
    out: dict[str, Any] = {"steps": n_steps, "calls_per_arm": len(warm), "judges": {}}
    async with httpx.AsyncClient(timeout=30) as http:
        for name, config in pool.judges.items():
            judge = Judge(name, config)
            try:
                arms = {
                    "steps": await run_arm(judge, rubric, warm, http),
                    "cold": await run_arm(judge, rubric, cold, http),
                }
            finally:
                await judge.aclose()
            out["judges"][name] = {
                "model": config.model,
                **{
                    arm: {
                        "calls": a.calls,
                        "clean_calls": a.clean,
                        "prompt_tokens": a.queries,
                        "hit_tokens": a.hits,
                        "hit_ratio": round(a.hit_ratio, 4),
                    }
                    for arm, a in arms.items()
                },
                "ratio_steps_to_cold": round(arms["steps"].hit_ratio / arms["cold"].hit_ratio, 3)
                if arms["cold"].hit_ratio
                else None,
            }
    return out


def cell(arm: dict[str, Any]) -> str:
    """One arm's figure: hit ratio, the tokens behind it and the calls counted."""
    return (
        f"{arm['hit_ratio']:.3f} ({arm['hit_tokens']:.0f} of {arm['prompt_tokens']:.0f} "
        f"tokens; {arm['clean_calls']} of {arm['calls']} calls clean)"
    )


def markdown(result: dict[str, Any], command: str) -> str:
    """The results as a Markdown table."""
    lines = [
        "# Step calls and the judge's prefix cache",
        "",
        f"`{command}`: {result['steps']} assistant steps, one step criterion: "
        f"{result['calls_per_arm']} calls per arm, one at a time; counters from each "
        "judge's own `/metrics` (`vllm:prefix_cache_hits_total` / `queries_total`).",
        "",
        "| judge | model | steps: hit ratio | cold: hit ratio | steps / cold |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, j in result["judges"].items():
        lines.append(
            f"| {name} | {j['model']} | {cell(j['steps'])} | {cell(j['cold'])} | "
            f"{j['ratio_steps_to_cold']} |"
        )
    lines += [
        "",
        "`steps`: the calls in plan order (step-major); `cold`: the same calls, each with a "
        "unique line at the head of the task, so they share only the grader rules and "
        "the rubric. A call is counted only when the judge's query counter grew by exactly "
        "its own prompt tokens (no other traffic on the shared judge meanwhile).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Run the measurement and write ``<out>.json`` and ``<out>.md``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    add_out_argument(parser)
    args = parser.parse_args()
    result = asyncio.run(measure(args.steps))
    command = f".venv/bin/python -m bench.steps --steps {args.steps}"
    write_results(args.out, "steps", result, markdown(result, command))


if __name__ == "__main__":
    main()
