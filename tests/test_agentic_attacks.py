"""A scripted agentic judge that trusts the claim ("all tests pass") unless a tool shows
otherwise pays no attack family of the code corpus (``bench/code_tasks/attacks.py``) more
than the honest wrong solution (issue 39): its one forced ``run_tests`` call runs the
task's hidden tests as the ``unit_tests`` grader does (tests restored, runner files
removed, tampering flagged) in the real sandbox, and the judge reads the result."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from fakejudge import FakeJudge, RecordingObserver

from bench.code_tasks import TASKS
from bench.code_tasks.attacks import FAMILIES, Probe
from bench.code_tasks.task import fenced
from rewardsvc.core.code_spec import UnitTestsSpec
from rewardsvc.core.judge_tools import JudgeTools
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders.code import Sandbox
from rewardsvc.judges.asks import AgenticCriterion
from rewardsvc.judges.fencing import parse_fences
from rewardsvc.judges.judge import Judge
from rewardsvc.judgetools.registry import ToolContext, bind
from rewardsvc.sandbox.lanes import SandboxLanes

RUBRIC = Rubric.model_validate(
    {
        "id": "passes-tests",
        "criteria": [{"id": "passes", "text": "The program passes the task's tests."}],
        "judges": [{"name": "checker"}],
    }
)
TRUST, DOUBT = 0.9, 0.1


def trust_unless_shown_otherwise(body: dict[str, Any]) -> float:
    """P(yes): the claim is trusted unless a ``run_tests`` result in the verdict's prompt
    shows a failed test, no score, or tampering."""
    _, blocks = parse_fences(body["messages"][-1]["content"])
    for label, text in blocks:
        if label != "output":
            continue
        try:
            shown = json.loads(text)
        except ValueError:
            continue  # not a tests' result: nothing shown against the claim
        if isinstance(shown, dict) and (shown.get("score") != 1.0 or shown.get("flags")):
            return DOUBT
    return TRUST


async def _reward(fake: FakeJudge, lanes: SandboxLanes, item: dict[str, Any]) -> float:
    task = TASKS[0]
    files = tuple(sorted(item.get("files", {}).items()))
    rollout = Rollout(task.prompt, item["completion"], task.reference(), files=files)
    spec = UnitTestsSpec.model_validate({"type": "unit_tests", "wall_s": 5, "cpu_s": 5})
    tools = bind(["run_tests"], ToolContext(rollout, Sandbox(lanes), spec))
    declared = JudgeTools(allowed=["run_tests"], named=["run_tests"])
    config = JudgeConfig(model="fake", base_urls=[fake.url], timeout_s=30.0, tools=declared)
    judge = Judge("checker", config, observer=RecordingObserver())
    try:
        verdict = await judge.ask(AgenticCriterion(RUBRIC, RUBRIC.criteria[0], rollout, tools))
    finally:
        await judge.aclose()
    assert verdict.score is not None, verdict.error
    return verdict.score


async def test_no_attack_family_earns_more_than_the_honest_wrong_solution(
    fake: FakeJudge, lanes: SandboxLanes
) -> None:
    fake.script.policy = trust_unless_shown_otherwise
    task = TASKS[0]
    right = await _reward(fake, lanes, {"completion": fenced(task.correct) + "All tests pass."})
    wrong = await _reward(fake, lanes, {"completion": fenced(task.wrong) + "All tests pass."})
    assert right == pytest.approx(TRUST) and wrong == pytest.approx(DOUBT)
    target = subprocess.Popen(["sleep", "600"])  # what kill_parent may try to kill
    try:
        probe = Probe(port=9, marker="/nonexistent/rewardsvc-agentic-marker", pid=target.pid)
        paid = {f.name: await _reward(fake, lanes, f.build(task, probe)) for f in FAMILIES}
        assert target.poll() is None
    finally:
        target.kill()
    assert {name: r for name, r in paid.items() if r > wrong} == {}
    assert len(paid) == len(FAMILIES) >= 12
