"""The judge tools' one registry (``rewardsvc.judgetools``, issue 39) against the real
sandbox (bubblewrap, with Debian's ``python3-pytest``): ``run_tests`` runs the task's
hidden tests as the ``unit_tests`` grader does (its score and evidence), ``run_code`` runs
a snippet beside the item's files, ``read_file`` and ``list_files`` read the item's own
files only, ``grader_evidence`` shows the deterministic graders' results; a failure is an
error output the judge reads, never raised; and a scripted judge's loop calls
``run_tests`` and reads its output in its verdict's prompt."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fakejudge import FakeJudge, RecordingObserver
from pydantic import ValidationError

from rewardsvc.core.code_spec import UnitTestsSpec
from rewardsvc.core.judge_tools import JUDGE_TOOLS, JudgeTools
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders.code import Sandbox
from rewardsvc.graders.result import GraderResult
from rewardsvc.judges.asks import AgenticCriterion
from rewardsvc.judges.identity import identity_text
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.toolresults import Tool, ToolOutput
from rewardsvc.judgetools.registry import TOOLS, ToolContext, bind
from rewardsvc.safety.defuse import DEFAULT_DEFUSER
from rewardsvc.sandbox.lanes import SandboxLanes
from rewardsvc.sandbox.run import RunRequest
from tests.test_unit_tests_grader import CORRECT, TESTS, WRONG


def _context(lanes: SandboxLanes | None, program: str, **fields: Any) -> ToolContext:
    spec = UnitTestsSpec.model_validate(
        {"type": "unit_tests", "tests": TESTS, "wall_s": 20, "cpu_s": 10}
    )
    completion = f"Done, all tests pass:\n```python\n{program}\n```\n"
    rollout = Rollout("Write add(a, b).", completion)
    return ToolContext(rollout, Sandbox(lanes), spec, **fields)


def _call(name: str, ctx: ToolContext, sandbox_s: float = 60.0, **arguments: Any) -> ToolOutput:
    (tool,) = bind([name], ctx)
    return asyncio.run(tool.run(arguments, sandbox_s))


def test_every_tool_is_one_registry_entry_with_an_openai_function_schema() -> None:
    ctx = ToolContext(Rollout("p", "c"))
    for name, spec in TOOLS.items():
        (bound,) = bind([name], ctx)
        schema = bound.schema()
        assert schema["type"] == "function" and schema["function"]["name"] == name == spec.name
        assert schema["function"]["parameters"]["type"] == "object"
        assert 0 < bound.output_chars <= 8_000
    assert set(TOOLS) == set(JUDGE_TOOLS)  # the names a pool entry may allow
    with pytest.raises(ValueError, match="unknown"):
        bind(["run_code", "fetch_url"], ctx)


def test_run_tests_is_the_unit_tests_grader_run(lanes: SandboxLanes) -> None:
    right = _call("run_tests", _context(lanes, CORRECT))
    wrong = _call("run_tests", _context(lanes, WRONG))
    assert not right.error and json.loads(right.text)["score"] == 1.0
    shown = json.loads(wrong.text)
    assert shown["score"] == pytest.approx(2 / 3)
    failed = [o["test"] for o in shown["evidence"]["outcomes"] if o["result"] == "failed"]
    assert failed == ["test_solution.py::test_negative"]
    assert right.sandbox_s > 0 and wrong.sandbox_s > 0
    # Too few sandbox seconds left for one run: an error, and nothing runs.
    starved = _call("run_tests", _context(lanes, CORRECT), sandbox_s=5.0)
    assert starved.error and starved.sandbox_s == 0


def test_run_tests_shows_the_graders_result_of_the_same_tests_without_running_them(
    lanes: SandboxLanes, runs: list[RunRequest]
) -> None:
    tested = GraderResult(2 / 3, {"outcomes": [], "passed": 2}, flags=("exit_hook",))
    reused = _call("run_tests", _context(lanes, WRONG, tested=tested))
    assert runs == [] and reused.sandbox_s == 0 and not reused.error
    assert json.loads(reused.text) == {
        "score": pytest.approx(2 / 3),
        "flags": ["exit_hook"],
        "evidence": {"outcomes": [], "passed": 2},
    }
    # A grader that gave no score (busy, cut by the deadline): the tool runs the tests.
    busy = GraderResult(None, {}, "busy", "grader_busy")
    ran = _call("run_tests", _context(lanes, WRONG, tested=busy))
    assert json.loads(ran.text)["score"] == pytest.approx(2 / 3) and ran.sandbox_s > 0
    assert [r.argv[3] for r in runs if len(r.argv) > 3].count("run") == 1


def test_run_code_runs_a_snippet_beside_the_item_files_and_bounds_its_output(
    lanes: SandboxLanes,
) -> None:
    ctx = _context(lanes, WRONG)
    ran = _call("run_code", ctx, code="from solution import add\nprint(add(-1, -2))")
    assert not ran.error and ran.text.startswith("exit code: 0") and "\n3\n" in ran.text
    flood = _call("run_code", ctx, code="import sys\nsys.stdout.write('x' * 10_000_000)")
    assert "over the limit" in flood.text and len(flood.text) < 70 * 1024
    host = _call("run_code", ctx, code="print(open('/etc/shadow').read())")
    assert "exit code: 1" in host.text and "root:" not in host.text
    no_sandbox = _call("run_code", _context(None, WRONG), code="print(1)")
    assert no_sandbox.error and "sandbox_unavailable" in no_sandbox.text


def test_read_file_and_list_files_see_the_item_files_only() -> None:
    files = (("pkg/util.py", "X = 1\n"), ("solution.py", CORRECT))
    ctx = ToolContext(Rollout("p", "c", files=files))
    listed = f"pkg/util.py (6 bytes)\nsolution.py ({len(CORRECT.encode())} bytes)"
    assert _call("list_files", ctx).text == listed
    assert _call("read_file", ctx, path="pkg/util.py").text == "X = 1\n"
    for path in ("/etc/passwd", "../../etc/passwd", "pkg/../solution.py", "pyproject.toml"):
        out = _call("read_file", ctx, path=path)
        assert out.error and "no file" in out.text
    assert _call("read_file", ctx, path=3).error
    # Without a workspace, the completion's program is the item's one file.
    program = ToolContext(Rollout("p", f"```python\n{CORRECT}\n```"))
    assert _call("read_file", program, path="solution.py").text == CORRECT


def test_grader_evidence_shows_the_item_graders_results() -> None:
    evidence = {
        "exact": GraderResult(0.0, {"extracted": "41"}),
        "tests": GraderResult(None, {}, "busy", "grader_busy"),
    }
    ctx = ToolContext(Rollout("p", "c"), evidence=evidence)
    shown = json.loads(_call("grader_evidence", ctx).text)
    assert shown["exact"] == {"score": 0.0, "evidence": {"extracted": "41"}, "error": None}
    assert shown["tests"]["score"] is None and shown["tests"]["error"] == "grader_busy"
    assert list(json.loads(_call("grader_evidence", ctx, grader="exact").text)) == ["exact"]
    assert _call("grader_evidence", ctx, grader="reward").error


async def test_a_scripted_judge_runs_the_tests_and_reads_their_output(
    lanes: SandboxLanes, fake: FakeJudge
) -> None:
    ctx = _context(lanes, WRONG)
    rubric = Rubric.model_validate(
        {"id": "t", "criteria": [{"id": "ok", "text": "Correct."}], "judges": [{"name": "j"}]}
    )
    tools: tuple[Tool, ...] = bind(["run_tests", "read_file"], ctx)
    question = AgenticCriterion(rubric, rubric.criteria[0], ctx.rollout, tools)
    declared = JudgeTools(allowed=["run_tests", "read_file"], named=["run_tests"])
    config = JudgeConfig(model="fake", base_urls=[fake.url], timeout_s=30.0, tools=declared)
    judge = Judge("j", config, observer=RecordingObserver())
    try:
        verdict = await judge.ask(question)
    finally:
        await judge.aclose()
    assert verdict.ok
    final = fake.script.bodies[-1]["messages"][-1]["content"]
    assert "test_negative" in final and '"score": 0.666' in final
    step = json.loads(verdict.raw)["loop"]["steps"][0]
    assert step["tool"] == "run_tests" and step["sandbox_s"] > 0


def test_a_pool_entry_declares_its_tools_and_bounds_and_they_key_its_verdicts() -> None:
    base = JudgeConfig(model="m", base_urls=["http://127.0.0.1:1/v1"])
    declared = JudgeTools(allowed=["run_tests"], named=["run_tests"], auto_turns=1)
    assert declared.worst_case() == (3, 60.0)  # two turns and the verdict; sandbox seconds
    agentic = base.model_copy(update={"tools": declared})
    tighter = base.model_copy(update={"tools": declared.model_copy(update={"max_tokens": 999})})
    keys = {identity_text("j", c, DEFAULT_DEFUSER) for c in (base, agentic, tighter)}
    assert len(keys) == 3
    assert "tools" not in identity_text("j", base, DEFAULT_DEFUSER)  # old keys unchanged
    for bad, message in [
        ({"allowed": ["run_tests"], "named": ["read_file"]}, "must be allowed"),
        ({"allowed": ["run_tests"], "auto_turns": 5}, "between 1 and max_turns"),
        ({"allowed": ["run_tests"]}, "between 1 and max_turns"),  # no turn at all
        ({"allowed": ["fetch_url"], "auto_turns": 1}, "allowed"),
        ({"allowed": ["read_file", "read_file"], "auto_turns": 1}, "listed twice"),
    ]:
        with pytest.raises(ValidationError, match=message):
            JudgeTools.model_validate(bad)
