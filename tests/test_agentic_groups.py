"""Agentic criteria on groups (issue 39): on ``POST /v1/groups`` a criterion allowing tools,
asked of a judge whose pool entry declares them, is asked of each completion alone as its
own tool loop (its own workspace, its own graders' results, its own sandbox runs; the
group's collect run of the hidden tests shared, as the code graders share it), and its
score joins the group reward as a graded criterion's does; a judge without tools compares
it from the texts. A loop that never stops is ``null`` with its kind, and the loops' worst
case is admitted before any call or run. Preferences ask each side alone the same way."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from test_agentic_attacks import trust_unless_shown_otherwise
from test_agentic_rubrics import TOOLS, serving
from test_api_support import fake_pool_doc
from test_unit_tests_grader import CORRECT, TESTS, WRONG, fenced

from rewardsvc.core.code_spec import sandbox_seconds
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders import unit_tests as unit_tests_module
from rewardsvc.judges.asks import AgenticCriterion, Comparing
from rewardsvc.judges.judge import build_judges
from rewardsvc.sandbox.run import RunRequest
from rewardsvc.sandbox.waiting import WALL_CAP
from rewardsvc.scoring.group_plan import GroupIn
from rewardsvc.scoring.groups import plan_groups

CLAIMS = ("I fixed add, all tests pass.", "I fixed add too.", "Done: all tests pass.")


def _rubric(tests: dict[str, str], judges: list[str]) -> dict[str, Any]:
    """A rubric whose ``works`` criterion allows ``run_tests`` beside the hidden tests'
    grader (the tests ``run_tests`` runs)."""
    spec = {"type": "unit_tests", "tests": tests, "tests_shown": True, "wall_s": 20, "cpu_s": 10}
    return {
        "id": "agentic-group",
        "criteria": [
            {"id": "works", "text": "The program passes the task's tests.", "tools": ["run_tests"]},
            {"id": "tests", "grader": spec},
        ],
        "judges": judges,
    }


def _group(tests: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """Three agent workspaces (right, wrong, the tests deleted), each marked as its own."""
    marks = [f"# workspace-{k}-{uuid.uuid4()}\n" for k in range(3)]
    workspaces = [
        {"solution.py": marks[0] + CORRECT, **tests},
        {"solution.py": marks[1] + WRONG, **tests},
        {"solution.py": marks[2] + WRONG},  # the tests it was given, deleted
    ]
    prompt = "Make the tests in test_solution.py pass."
    return {
        "id": "agents",
        "prompt": prompt,
        "completions": list(CLAIMS),
        "files": workspaces,
    }, marks


def _fresh_tests() -> dict[str, str]:
    """Tests no collect run has seen yet: the group's is the first (and only) one."""
    unit_tests_module.reference_tests.cache_clear()
    return {path: f"# {uuid.uuid4()}\n{text}" for path, text in TESTS.items()}


def _mine(body: dict[str, Any], claim: str) -> bool:
    return claim in json.dumps(body["messages"])


async def test_each_completion_is_its_own_loop_and_joins_the_group_reward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: list[RunRequest]
) -> None:
    tests = _fresh_tests()
    group, marks = _group(tests)
    async with serving(tmp_path, monkeypatch, TOOLS) as served:
        served.judge.script.policy = trust_unless_shown_otherwise
        body = {"rubric": _rubric(tests, ["primary"]), "groups": [group]}
        reply = await served.client.post("/v1/groups", json=body)
    assert reply.status_code == 200, reply.text
    (result,) = reply.json()["results"]
    assert result["status"] == "ok", result
    right, wrong, deleting = result["rewards"]
    assert right > wrong >= deleting, result
    criteria = result["judges"]["primary"]["criteria"]
    assert criteria["works"] == [pytest.approx(0.9), pytest.approx(0.1), pytest.approx(0.1)]
    # Each completion's loop: the named run_tests turn, the auto turn that stops, the
    # verdict; every request the judge received was admitted and counted in usage.
    bodies = served.judge.script.bodies
    for claim in CLAIMS:
        own = [b for b in bodies if _mine(b, claim)]
        assert len(own) == 3, [b["messages"] for b in own]
        named = [b for b in own if isinstance(b.get("tool_choice"), dict)]
        assert [b["tool_choice"]["function"]["name"] for b in named] == ["run_tests"]
        others = [c for c in CLAIMS if c != claim]
        assert not any(_mine(b, c) for b in own for c in others)  # no loop shared
    assert served.admitted == [9] == [len(bodies)]
    assert reply.json()["usage"]["judge_calls"] == 9
    # Sandbox runs: each completion's own workspace, run once by its grader (its judge's
    # run_tests shows that run's result: it ran them again before); the hidden tests
    # collected once for the group.
    modes = [r.argv[3] for r in runs]
    assert modes.count("collect") == 1, modes
    for mark in marks:
        own = [
            r for r in runs if mark.encode() in {**r.files, **r.ro_files}.get("solution.py", b"")
        ]
        assert [r.argv[3] for r in own] == ["run"], [r.argv for r in own]
    assert modes.count("run") == len(marks), modes


async def test_a_judge_that_never_stops_leaves_the_group_null_with_its_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: list[RunRequest]
) -> None:
    tests = _fresh_tests()
    group, _ = _group(tests)
    tools = {"allowed": ["run_tests", "read_file"], "auto_turns": 2}
    async with serving(tmp_path, monkeypatch, tools) as served:
        served.judge.script.tool_forever = ("run_tests", {})
        body = {"rubric": _rubric(tests, ["primary"]), "groups": [group]}
        reply = await served.client.post("/v1/groups", json=body)
    assert reply.status_code == 200, reply.text
    (result,) = reply.json()["results"]
    assert result["rewards"] == [None, None, None], result
    assert result["status"] == "judge_error" and result["error_kind"] == "loop_turns", result
    assert served.admitted == [9] and served.judge.script.requests == 6  # 2 turns each


@pytest.mark.parametrize("field", ["max_sandbox_seconds", "max_inflight_calls"])
async def test_the_loops_worst_case_is_admitted_before_any_call_or_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: list[RunRequest], field: str
) -> None:
    tests = _fresh_tests()
    group, _ = _group(tests)
    rubric = _rubric(tests, ["primary"])
    graded = Rubric.model_validate(rubric).criteria[1].grader
    assert graded is not None
    # Room for the graders' runs and the plain calls, not for the loops' worst case (the
    # sandbox seconds at the busy host's cap, as admission counts them).
    limits = {
        "max_sandbox_seconds": WALL_CAP * (3 * sandbox_seconds(graded, None) + 3 * 60.0) - 1,
        "max_inflight_calls": 3 * 3 - 1,
    }
    async with serving(tmp_path, monkeypatch, TOOLS, **{field: limits[field]}) as served:
        reply = await served.client.post("/v1/groups", json={"rubric": rubric, "groups": [group]})
        assert reply.status_code == 413, reply.text
        assert field in reply.text
        assert served.judge.script.requests == 0 and runs == []


async def test_a_judge_without_tools_compares_the_criterion_and_one_with_asks_each_alone(
    fake: FakeJudge,
) -> None:
    doc = fake_pool_doc(fake.url, fake.url)
    doc["judges"]["primary"]["tools"] = TOOLS
    judges = build_judges(JudgePool.model_validate(doc))
    try:
        tests = _fresh_tests()
        rubric = Rubric.model_validate(_rubric(tests, ["primary", "secondary"]))
        rollouts = tuple(Rollout("Write add(a, b).", claim) for claim in CLAIMS)
        plan = await plan_groups(judges, rubric, [GroupIn("g", rollouts)])
        primary = [c for c in plan.calls if c.judge == "primary"]
        secondary = [c for c in plan.calls if c.judge == "secondary"]
        assert [type(c.question) for c in primary] == [AgenticCriterion] * 3
        assert sorted(a.completion for a in plan.asked if a.judge == "primary") == [0, 1, 2]
        assert secondary and all(isinstance(c.question, Comparing) for c in secondary)
        assert len({id(c.tools) for c in primary}) == 3  # a tool context per completion
        assert plan.cost.calls == len(secondary) + 3 * 3  # each loop at its worst case
    finally:
        for judge in judges.values():
            await judge.aclose()


async def test_preferences_ask_each_side_alone_as_its_own_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: list[RunRequest]
) -> None:
    tests = _fresh_tests()
    rubric = _rubric(tests, ["primary"])
    claims = {"a": "All tests pass (side a).", "b": "All tests pass (side b)."}
    pair = {
        "id": "p",
        "prompt": "Write add(a, b).",
        "a": fenced(CORRECT) + claims["a"],
        "b": fenced(WRONG) + claims["b"],
    }
    async with serving(tmp_path, monkeypatch, TOOLS) as served:
        served.judge.script.policy = trust_unless_shown_otherwise
        reply = await served.client.post(
            "/v1/preferences", json={"rubric": rubric, "pairs": [pair]}
        )
    assert reply.status_code == 200, reply.text
    (result,) = reply.json()["results"]
    assert result["status"] == "ok" and result["label"] == "a", result
    assert result["p_a_better"] > 0.5, result
    bodies = served.judge.script.bodies
    for side, claim in claims.items():
        own = [b for b in bodies if _mine(b, claim)]
        assert len(own) == 3, side  # its own loop: run_tests, the stopping turn, the verdict
        assert not any(_mine(b, claims["b" if side == "a" else "a"]) for b in own)
    assert served.admitted == [6] == [len(bodies)]


def _transcript(seen: list[dict[str, str]]) -> tuple[str, dict[str, Any]]:
    """The tool result a loop showed its judge, and its verdict, from explain's view."""
    roles = [m["role"] for m in seen]
    assert roles[-3:] == ["tool_call", "tool", "verdict"], roles
    assert json.loads(seen[-3]["content"])["tool"] == "run_tests"
    return seen[-2]["content"], json.loads(seen[-1]["content"])


async def test_explain_shows_each_completions_tool_loop_on_groups_and_preferences(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: list[RunRequest]
) -> None:
    tests = _fresh_tests()
    group, _ = _group(tests)
    rubric = _rubric(tests, ["primary"])
    pair = {"id": "p", "prompt": "Write add(a, b).", "a": fenced(CORRECT), "b": fenced(WRONG)}
    async with serving(tmp_path, monkeypatch, TOOLS) as served:
        served.judge.script.policy = trust_unless_shown_otherwise
        options = {"explain": True}
        grouped = await served.client.post(
            "/v1/groups", json={"rubric": rubric, "groups": [group], "options": options}
        )
        paired = await served.client.post(
            "/v1/preferences", json={"rubric": rubric, "pairs": [pair], "options": options}
        )
    assert grouped.status_code == 200, grouped.text
    (result,) = grouped.json()["results"]
    shown = result["explain"]
    assert len(shown) == 3 and all(set(s) == {"primary"} for s in shown), shown
    for claim, seen in zip(CLAIMS, shown, strict=True):
        works = seen["primary"]["works"]
        assert claim in json.dumps(works[:-3])  # its own completion's prompt, no other's
        assert not any(c in json.dumps(works) for c in CLAIMS if c != claim)
        result_shown, verdict = _transcript(works)
        assert "```" in result_shown and verdict["error_kind"] is None
    # The right program's run passed; the wrong one's and the deleted tests' did not.
    outcomes = [_transcript(s["primary"]["works"])[0] for s in shown]
    assert '"score": 1.0' in outcomes[0] and '"score": 1.0' not in outcomes[1], outcomes
    assert paired.status_code == 200, paired.text
    (preference,) = paired.json()["results"]
    sides = preference["explain"]
    assert set(sides) == {"a", "b"}, sides
    a_run, _ = _transcript(sides["a"]["primary"]["works"])
    b_run, _ = _transcript(sides["b"]["primary"]["works"])
    assert '"score": 1.0' in a_run and '"score": 1.0' not in b_run
