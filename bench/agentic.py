"""What an agentic judge costs per verdict, beside a plain logprob judge, on the CPU judge.

Both contenders are the default ``primary`` CPU judge (SmolLM2-135M-Instruct, :8101, method
logprob) asked "The program passes the task's tests." of the code corpus's items
(``bench/code_tasks``: each task's correct and wrong solution, the first ``--tasks``
tasks). ``plain`` reads the completion and answers in one call; ``agentic`` declares
``tools: {allowed: [run_tests], named: [run_tests], forcing: schema}`` (the server runs no
tool parser): one forced ``run_tests`` call in the sandbox (bubblewrap), then the logprob
verdict from a prompt showing the tests' outcomes. One verdict at a time. Figures per
verdict: judge calls, tool calls, prompt and completion tokens, sandbox seconds, the median
wall time, the ratios agentic / plain, and the mean P(yes) on right and wrong solutions
(SmolLM2 is too small to judge: the figures are the loop's cost, not its quality).

    deploy/cpu-judge/cpujudge.sh start && deploy/cpu-judge/cpujudge.sh wait
    .venv/bin/python -m bench.agentic [--tasks 6] [--out bench/results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from bench.code_tasks import TASKS
from bench.code_tasks.task import fenced
from bench.outputs import add_out_argument, write_results
from rewardsvc.core.code_spec import UnitTestsSpec
from rewardsvc.core.judge_tools import JudgeTools
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.graders.code import Sandbox
from rewardsvc.judges.asks import AgenticCriterion, CriterionOnItem, Question
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.prompts import Prompt
from rewardsvc.judgetools.registry import ToolContext, bind
from rewardsvc.sandbox.bubblewrap import BubblewrapBackend
from rewardsvc.sandbox.lanes import SandboxLanes

RUBRIC = Rubric.model_validate(
    {
        "id": "passes-tests",
        "criteria": [{"id": "passes", "text": "The program passes the task's tests."}],
        "judges": [{"name": "primary"}],
    }
)
SPEC = UnitTestsSpec.model_validate({"type": "unit_tests", "wall_s": 20, "cpu_s": 10})
TOOLS = JudgeTools(allowed=["run_tests"], named=["run_tests"], forcing="schema")


def _row(verdict: Verdict, wall: float, right: bool) -> dict[str, Any]:
    """One verdict's figures (a plain verdict's ``raw`` is its answer, no loop)."""
    loop = json.loads(verdict.raw).get("loop", {}) if verdict.raw.startswith("{") else {}
    steps = loop.get("steps", [])
    return {
        "ok": verdict.ok,
        "calls": loop.get("turns", 0) + 1,
        "tool_calls": len(steps),
        "tokens": verdict.prompt_tokens + verdict.completion_tokens,
        "sandbox_s": sum(s["sandbox_s"] for s in steps),
        "wall_s": wall,
        "right": right,
        "p_yes": verdict.score,
    }


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if r["ok"]]

    def mean(key: str, of: list[dict[str, Any]] = ok) -> float:
        return statistics.mean(r[key] for r in of) if of else float("nan")

    return {
        "verdicts": len(rows),
        "ok": len(ok),
        "calls": mean("calls"),
        "tool_calls": mean("tool_calls"),
        "tokens": mean("tokens"),
        "sandbox_s": mean("sandbox_s"),
        "wall_s_p50": statistics.median(r["wall_s"] for r in rows),
        "p_yes_right": mean("p_yes", [r for r in ok if r["right"]]),
        "p_yes_wrong": mean("p_yes", [r for r in ok if not r["right"]]),
    }


async def measure(tasks: int, url: str) -> dict[str, dict[str, Any]]:
    """Both contenders' summaries on the first ``tasks`` tasks' two solutions each."""
    lanes = SandboxLanes(BubblewrapBackend(), lanes=1, queue_limit=8)
    base = JudgeConfig.model_validate(
        {"model": "smollm2-135m-instruct", "base_urls": [url], "timeout_s": 120}
    )
    judges = {
        "plain": Judge("primary", base),
        "agentic": Judge("primary", base.model_copy(update={"tools": TOOLS})),
    }
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in judges}
    try:
        for task in TASKS[:tasks]:
            for source in (task.correct, task.wrong):
                rollout = Rollout(task.prompt, fenced(source), task.reference())
                tools = bind(["run_tests"], ToolContext(rollout, Sandbox(lanes), SPEC))
                questions: dict[str, Question[Verdict, Prompt]] = {
                    "plain": CriterionOnItem(RUBRIC, RUBRIC.criteria[0], rollout),
                    "agentic": AgenticCriterion(RUBRIC, RUBRIC.criteria[0], rollout, tools),
                }
                for name, judge in judges.items():
                    start = time.perf_counter()
                    verdict = await judge.ask(questions[name])
                    took = time.perf_counter() - start
                    rows[name].append(_row(verdict, took, source is task.correct))
    finally:
        for judge in judges.values():
            await judge.aclose()
        lanes.close()
    return {name: _summary(r) for name, r in rows.items()}


def table(results: dict[str, dict[str, Any]]) -> str:
    """The Markdown table of both contenders, and the ratios agentic / plain."""
    head = (
        "| contender | ok | calls | tool calls | tokens | sandbox s | p50 wall s "
        "| P(yes) right | P(yes) wrong |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = [
        f"| {name} | {r['ok']}/{r['verdicts']} | {r['calls']:.1f} | {r['tool_calls']:.1f} "
        f"| {r['tokens']:.0f} | {r['sandbox_s']:.2f} | {r['wall_s_p50']:.2f} "
        f"| {r['p_yes_right']:.3f} | {r['p_yes_wrong']:.3f} |"
        for name, r in results.items()
    ]
    plain, agentic = results["plain"], results["agentic"]
    ratios = (
        f"\nAgentic / plain: {agentic['calls'] / plain['calls']:.1f}x calls, "
        f"{agentic['tokens'] / plain['tokens']:.2f}x tokens, "
        f"{agentic['wall_s_p50'] / plain['wall_s_p50']:.1f}x median wall time.\n"
    )
    return head + "\n".join(rows) + "\n" + ratios


def main() -> None:
    """Parse the arguments, measure, write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--url", default="http://127.0.0.1:8101/v1")
    add_out_argument(parser)
    args = parser.parse_args()
    results = asyncio.run(measure(args.tasks, args.url))
    command = f"python -m bench.agentic --tasks {args.tasks}"
    markdown = (
        "# Agentic judge (run_tests, then logprob) vs plain logprob judge "
        f"(SmolLM2-135M, vLLM 0.32 CPU)\n\n`{command}`\n\n{table(results)}"
    )
    write_results(args.out, "agentic", {"command": command, "results": results}, markdown)


if __name__ == "__main__":
    main()
