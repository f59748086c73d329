"""Agentic judges wired into rubrics (issue 39): a rubric allows tools per criterion or for
all its criteria (validated against the registry's names, file and line named); a criterion
allowing tools, asked of a judge whose pool entry declares tools, is planned as an agentic
question whose worst case admission counts; through ``POST /v1/rewards`` a scripted judge
(tests/faketools.py) calls ``run_tests`` on the real sandbox after the graders graded, its
transcript reaches ``options.explain``, and a reached limit is ``null`` with its kind."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakejudge import FakeJudge
from prometheus_client import REGISTRY
from test_api_support import app_client, fake_pool_doc, settings_for
from test_rubric import problems, write

from rewardsvc.core.code_spec import sandbox_seconds
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rollout import ItemIn, Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import AgenticCriterion, CriterionOnItem
from rewardsvc.judges.judge import build_judges
from rewardsvc.sandbox.run import RunRequest
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.planning import Cost
from rewardsvc.server.gate import Gate
from tests.debian import debian_binary

TOOLED = """\
id: r
requires_reference: true
tools: [read_file]
criteria:
  - id: works
    text: The program is correct.
    tools: [run_tests, read_file]
  - id: clear
    text: The program is clear.
  - id: exact
    grader: {type: exact}
judges: [primary]
"""
TEST_FILE = "from solution import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
UNIT_TESTS = {"type": "unit_tests", "tests": {"test_solution.py": TEST_FILE}, "expected_tests": 1}
TOOLS = {"allowed": ["run_tests", "read_file"], "named": ["run_tests"], "auto_turns": 1}
RUBRIC = {
    "id": "coded",
    "criteria": [
        {"id": "works", "text": "The program is correct.", "tools": ["run_tests"]},
        {"id": "passes", "category": "essential", "grader": UNIT_TESTS},
    ],
    "judges": ["primary"],
}
CORRECT = "def add(a, b):\n    return a + b\n"


def _rubric(doc: dict[str, Any]) -> Rubric:
    return Rubric.model_validate(doc)


def test_a_criterion_and_a_rubric_allow_tools_by_the_registrys_names(tmp_path: Path) -> None:
    rubric = _rubric({**RUBRIC, "tools": ["read_file"]})
    works, passes = rubric.criteria
    assert rubric.tools_of(works) == ("run_tests",)  # its own, not the rubric's
    assert rubric.tools_of(passes) == ()  # a grader's criterion asks no judge
    plain = _rubric({**RUBRIC, "criteria": [{"id": "c", "text": "Clear."}]})
    assert plain.tools_of(plain.criteria[0]) == ()
    # Unset, tools are left out of the content: a rubric without tools keeps its version.
    assert "tools" not in plain.model_dump() and "tools" not in plain.model_dump()["criteria"][0]
    found = problems(write(tmp_path, TOOLED.replace("run_tests, read_file", "run_tests, fetch")))
    assert any(":7: criteria[0].tools[1]: Input should be 'run_code'" in p for p in found), found
    found = problems(
        write(tmp_path, TOOLED.replace("    grader:", "    tools: [read_file]\n    grader:"))
    )
    assert any(":11: criteria[2].tools: only a criterion the judges" in p for p in found), found


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"combine": "implicit"}, "tools: combine implicit asks one holistic question"),
        ({"tools": []}, "tools\n  List should have at least 1 item"),
    ],
)
def test_tools_a_rubric_cannot_use_are_refused(edit: dict[str, Any], message: str) -> None:
    doc = {**RUBRIC, "criteria": [RUBRIC["criteria"][0]], **edit}
    with pytest.raises(ValueError, match=message):
        _rubric(doc)


async def test_the_plan_asks_a_tooled_judge_agentically_and_costs_its_worst_case(
    fake: FakeJudge,
) -> None:
    doc = fake_pool_doc(fake.url, fake.url)
    doc["judges"]["primary"]["tools"] = TOOLS
    doc["judges"]["reader"] = {**doc["judges"]["primary"], "tools": None}
    judges = build_judges(JudgePool.model_validate(doc))
    engine = Engine(judges)
    try:
        rubric = _rubric({**RUBRIC, "judges": ["primary", "reader", "secondary"]})
        item = ItemIn("i", Rollout("Write add.", f"```python\n{CORRECT}```"))
        planned = await engine.plan(rubric, [item])
        calls = {c.judge: c for c in planned.parts[0].calls}
        assert isinstance(calls["primary"].question, AgenticCriterion)
        # A judge without tools (chat or completion) is asked the criterion plainly.
        assert isinstance(calls["reader"].question, CriterionOnItem)
        assert isinstance(calls["secondary"].question, CriterionOnItem)
        plain = calls["reader"].cost
        agentic = calls["primary"].cost
        # The named run_tests, one auto turn, the verdict; the loop's sandbox seconds.
        assert (agentic.calls, agentic.sandbox_s) == (3, 60.0)
        assert agentic.prompt_bytes > 3 * plain.prompt_bytes
        graded = sandbox_seconds(rubric.criteria[1].grader, None)  # the graders' runs
        assert graded > 0
        total = Cost(5, 2 * plain.prompt_bytes + agentic.prompt_bytes, 60.0 + graded)
        assert planned.cost == total
    finally:
        await engine.aclose()


class Served:
    """The service on a scripted tool-calling judge, and what admission was asked."""

    def __init__(self, client: httpx.AsyncClient, judge: FakeJudge):
        self.client, self.judge = client, judge
        self.admitted: list[int] = []

    async def score(self, items: list[dict[str, Any]], **options: Any) -> httpx.Response:
        body = {"rubric": RUBRIC, "items": items, "options": options}
        return await self.client.post("/v1/rewards", json=body)


@contextlib.asynccontextmanager
async def serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tools: dict[str, Any], **limits: Any
) -> AsyncIterator[Served]:
    debian_binary("bwrap", "bubblewrap")
    debian_binary("pytest-3", "python3-pytest")  # pytest for the sandbox's python3
    with FakeJudge() as judge:
        doc = fake_pool_doc(judge.url, judge.url)
        doc["judges"]["primary"]["tools"] = tools
        (tmp_path / "rubrics").mkdir()
        settings = settings_for(tmp_path / "rubrics", **limits)
        async with app_client(settings, JudgePool.model_validate(doc)) as (client, _, _):
            client.timeout = httpx.Timeout(120)
            served = Served(client, judge)
            admitted = Gate.admitted

            def recording(gate: Gate, items: int, calls: int, *args: Any, **kw: Any) -> Any:
                served.admitted.append(calls)
                return admitted(gate, items, calls, *args, **kw)

            monkeypatch.setattr(Gate, "admitted", recording)
            yield served


def _counted(metric: str, **labels: str) -> float:
    """A Prometheus counter's value now (0 before its first count)."""
    return REGISTRY.get_sample_value(f"{metric}_total", labels) or 0.0


def _loops(ended: str) -> float:
    return _counted("rewardsvc_judge_tool_loops", judge="primary", ended=ended)


def _tool_calls(tool: str, outcome: str) -> float:
    return _counted("rewardsvc_judge_tool_calls", judge="primary", tool=tool, outcome=outcome)


def _item(key: str, program: str = CORRECT) -> dict[str, Any]:
    return {"id": key, "prompt": "Write add(a, b).", "completion": f"```python\n{program}```"}


async def test_a_scripted_judge_runs_the_tests_and_explain_shows_its_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: list[RunRequest]
) -> None:
    answered, tested = _loops("answered"), _tool_calls("run_tests", "ok")
    async with serving(tmp_path, monkeypatch, TOOLS) as served:
        reply = await served.score(
            [_item("right"), _item("wrong", "def add(a, b):\n    return 0\n")], explain=True
        )
        assert reply.status_code == 200, reply.text
        body = reply.json()
        # Admitted: 2 items x (run_tests, the auto turn that stops, the verdict): every
        # request the judge received, each counted in usage.
        assert served.admitted == [6] == [served.judge.script.requests]
        assert body["usage"]["judge_calls"] == 6
        assert body["usage"]["prompt_tokens"] == 6 * 100
        first = served.judge.script.bodies[0]
        assert first["tool_choice"]["function"]["name"] == "run_tests"
        results = {r["id"]: r for r in body["results"]}
        for key, passed in (("right", 1.0), ("wrong", 0.0)):
            result = results[key]
            works = result["judges"]["primary"]["criteria"]["works"]
            assert works["score"] == pytest.approx(0.8) and works["p"]["yes"] == pytest.approx(0.8)
            shown = result["explain"]["primary"]["works"]
            roles = [m["role"] for m in shown]
            assert roles[-3:] == ["tool_call", "tool", "verdict"]
            assert json.loads(shown[-3]["content"])["tool"] == "run_tests"
            # The test run's result as the judge was shown it: fenced, after the graders.
            assert f'"score": {passed}' in shown[-2]["content"] and "```" in shown[-2]["content"]
            verdict = json.loads(shown[-1]["content"])
            assert verdict["p"]["yes"] == pytest.approx(0.8) and verdict["error_kind"] is None
        # The graders' run only: the judge's run_tests shows its result (the same tests on
        # the same files), one pytest run per item (it ran them again before).
        assert len([r for r in runs if "test_solution.py" in {**r.files, **r.ro_files}]) == 2
        # Prometheus counts each loop by how it ended and each tool call by its outcome.
        assert _loops("answered") == answered + 2
        assert _tool_calls("run_tests", "ok") == tested + 2


async def test_a_judge_that_never_stops_is_null_with_its_kind_on_v1_rewards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: list[RunRequest]
) -> None:
    tools = {"allowed": ["run_tests", "read_file"], "auto_turns": 2}
    looped, tested = _loops("loop_turns"), _tool_calls("run_tests", "ok")
    async with serving(tmp_path, monkeypatch, tools) as served:
        served.judge.script.tool_forever = ("run_tests", {})
        reply = await served.score([_item("looping")])
        assert reply.status_code == 200, reply.text
        (result,) = reply.json()["results"]
        works = result["judges"]["primary"]["criteria"]["works"]
        assert works["score"] is None and works["error_kind"] == "loop_turns"
        assert result["reward"] is None and result["status"] == "judge_error"
        assert served.admitted == [3] and served.judge.script.requests == 2
        assert _loops("loop_turns") == looped + 1
        assert _tool_calls("run_tests", "ok") == tested + 2


@pytest.mark.parametrize(
    ("limit", "field"),
    [
        ({"max_sandbox_seconds": 50.0}, "max_sandbox_seconds"),
        ({"max_inflight_calls": 2}, "max_inflight_calls"),
    ],
)
async def test_a_loop_over_the_limits_is_refused_before_any_call_or_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    runs: list[RunRequest],
    limit: dict[str, Any],
    field: str,
) -> None:
    async with serving(tmp_path, monkeypatch, TOOLS, **limit) as served:
        reply = await served.score([_item("one")])
        assert reply.status_code == 413, reply.text
        assert field in reply.text
        assert served.judge.script.requests == 0 and runs == []


@pytest.mark.parametrize(
    "tooled",
    [
        {"tools": ["read_file"]},
        {"criteria": [{**RUBRIC["criteria"][0], "tools": ["read_file"]}]},
    ],
)
async def test_groups_and_preferences_compare_tools_criteria_of_judges_without_tools(
    tmp_path: Path, fake: FakeJudge, tooled: dict[str, Any]
) -> None:
    # Once refused with a 422: a criterion allowing tools is now honoured by groups and
    # preferences (tests/test_agentic_groups.py); a judge declaring no tools compares it
    # from the texts, as /v1/rewards asks it plainly, and no request offers a tool.
    criteria = [{"id": "works", "text": "The program is correct."}]
    inline = {**RUBRIC, "criteria": criteria, **tooled}
    completions = [f"```python\n{CORRECT}```", "```python\ndef add(a, b):\n    return 0\n```"]
    group = {"id": "g", "prompt": "Write add(a, b).", "completions": completions}
    pair = {"id": "p", "prompt": "Write add(a, b).", "a": completions[0], "b": completions[1]}
    pool = JudgePool.model_validate(fake_pool_doc(fake.url, fake.url))
    (tmp_path / "rubrics").mkdir()
    async with app_client(settings_for(tmp_path / "rubrics"), pool) as (client, _, _):
        for route, key, one in (
            ("/v1/groups", "groups", group),
            ("/v1/preferences", "pairs", pair),
        ):
            reply = await client.post(route, json={"rubric": inline, key: [one]})
            assert reply.status_code == 200, reply.text
            (result,) = reply.json()["results"]
            assert result["status"] == "ok", result
    assert fake.script.requests > 0
    assert not any(b.get("tools") for b in fake.script.bodies)


async def test_a_group_whose_own_criteria_allow_tools_is_scored(
    tmp_path: Path, fake: FakeJudge
) -> None:
    # Once rejected alone: a group's own criterion allowing tools is honoured as the
    # request rubric's is (compared, by these judges without tools).
    plain = {**RUBRIC, "criteria": [{"id": "works", "text": "The program is correct."}]}
    completions = [f"```python\n{CORRECT}```", "```python\ndef add(a, b):\n    return 0\n```"]
    own = [{"id": "runs", "text": "The program runs.", "tools": ["run_tests"]}]
    groups = [
        {"id": "tooled", "prompt": "Write add.", "completions": completions, "criteria": own},
        {"id": "plain", "prompt": "Write add.", "completions": completions},
    ]
    pool = JudgePool.model_validate(fake_pool_doc(fake.url, fake.url))
    (tmp_path / "rubrics").mkdir()
    async with app_client(settings_for(tmp_path / "rubrics"), pool) as (client, _, _):
        reply = await client.post("/v1/groups", json={"rubric": plain, "groups": groups})
    assert reply.status_code == 200, reply.text
    tooled, scored = reply.json()["results"]
    assert tooled["status"] == "ok", tooled
    assert scored["status"] == "ok", scored
