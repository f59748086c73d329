"""An agentic judge on the real CPU judge (SmolLM2-135M-Instruct on vLLM 0.32, issue 39):
it calls ``run_tests`` on a code item of the corpus (``bench/code_tasks``), the tests'
output reaches its next turn, the loop ends within its limits, and the verdict is read
with the logprob method.

vLLM 0.32 refuses a named ``tool_choice`` from a server started without
``--tool-call-parser`` (400: 'tool_choice=function "run_tests" requires
--tool-call-parser to be set'), as the CPU judges are; the loop then forces the call by
the tool's parameter schema (``forcing: schema``: structured outputs, what vLLM
does inside for a named choice). The OpenAI form on that server is a typed failure,
never a score."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bench.code_tasks import TASKS
from bench.code_tasks.task import fenced
from rewardsvc.core.code_spec import UnitTestsSpec
from rewardsvc.core.judge_tools import JudgeTools
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders.code import Sandbox
from rewardsvc.judges.asks import AgenticCriterion
from rewardsvc.judges.judge import Judge
from rewardsvc.judgetools.registry import ToolContext, bind
from rewardsvc.sandbox.bubblewrap import BubblewrapBackend
from rewardsvc.sandbox.lanes import SandboxLanes
from tests.debian import debian_binary
from tests.test_judge_kinds_reasoning import spied

pytestmark = pytest.mark.judges

RUBRIC = Rubric.model_validate(
    {
        "id": "passes-tests",
        "criteria": [{"id": "passes", "text": "The program passes the task's tests."}],
        "judges": [{"name": "primary"}],
    }
)
LIMITS = {
    "allowed": ["run_tests"],
    "max_turns": 2,
    "max_tool_calls": 2,
    "max_tokens": 8_000,
    "max_sandbox_s": 60.0,
    "max_wall_s": 240.0,
}


@pytest.fixture(scope="module")
def lanes() -> Iterator[SandboxLanes]:
    backend = BubblewrapBackend(debian_binary("bwrap", "bubblewrap"))
    debian_binary("pytest-3", "python3-pytest")
    lanes = SandboxLanes(backend, lanes=1, queue_limit=8)
    yield lanes
    lanes.close()


async def _ask(
    pool: JudgePool, lanes: SandboxLanes, source: str, forcing: str
) -> tuple[Any, list[dict[str, Any]]]:
    task = TASKS[0]
    rollout = Rollout(task.prompt, fenced(source), task.reference())
    spec = UnitTestsSpec.model_validate({"type": "unit_tests", "wall_s": 20, "cpu_s": 10})
    ctx = ToolContext(rollout, Sandbox(lanes), spec)
    question = AgenticCriterion(RUBRIC, RUBRIC.criteria[0], rollout, bind(["run_tests"], ctx))
    declared = JudgeTools.model_validate({**LIMITS, "named": ["run_tests"], "forcing": forcing})
    judge = Judge("primary", pool.judges["primary"].model_copy(update={"tools": declared}))
    sent = spied(judge)
    try:
        return await judge.ask(question), sent
    finally:
        await judge.aclose()


@pytest.mark.parametrize("which", ["correct", "wrong"])
async def test_the_cpu_judge_runs_the_tests_and_reads_them_before_its_logprob_verdict(
    cpu_pool: JudgePool, lanes: SandboxLanes, which: str
) -> None:
    task = TASKS[0]
    verdict, sent = await _ask(cpu_pool, lanes, getattr(task, which), "schema")
    assert verdict.ok, verdict.error
    assert verdict.probs is not None and set(verdict.probs) == {"yes", "no"}
    assert 0.0 < verdict.score < 1.0  # an expected value over the scale, not a parsed word
    loop = json.loads(verdict.raw)["loop"]
    (step,) = loop["steps"]
    assert step["tool"] == "run_tests" and not step["error"] and step["sandbox_s"] > 0
    assert loop["turns"] == 1
    # The forced call, then the verdict: its prompt carries the tests' outcomes.
    assert len(sent) == 2 and "structured_outputs" in sent[0]
    outcome = "failed" if which == "wrong" else '"passed": '
    final = sent[1]["messages"][-1]["content"]
    assert task.test_path in final and outcome in final
    assert sent[1]["structured_outputs"] == {"choice": ["yes", "no"]} and sent[1]["logprobs"]
    assert verdict.prompt_tokens + verdict.completion_tokens <= LIMITS["max_tokens"]


async def test_a_named_tool_choice_without_a_tool_parser_is_a_typed_failure(
    cpu_pool: JudgePool, lanes: SandboxLanes
) -> None:
    verdict, sent = await _ask(cpu_pool, lanes, TASKS[0].correct, "tool_choice")
    assert verdict.score is None and verdict.error_kind == "http_4xx"
    assert sent[0]["tool_choice"] == {"type": "function", "function": {"name": "run_tests"}}
