"""Code graders on groups (``POST /v1/groups``), on the real sandbox (bubblewrap, and
pytest for ``unit_tests``) and fake judges.

A group's completions share the per-test-set work of a ``unit_tests`` criterion (the
hidden tests read once, one collect run) and never a sandbox: each completion's code runs
in a run of its own. An agent group carries one workspace per completion (``files``):
each completion's criterion runs its own workspace, its tamper flags are its own, and no
workspace reaches a judge's prompt.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from test_code_graders_api import fakes, serving
from test_unit_tests_grader import CORRECT, TESTS, WRONG, fenced

from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders import unit_tests as unit_tests_module
from rewardsvc.graders.registry import Graders, grade_criteria
from rewardsvc.library.registry import validation_context
from rewardsvc.library.yamlfile import validate_document
from rewardsvc.sandbox.lanes import SandboxLanes
from rewardsvc.sandbox.run import RunRequest, RunResult
from tests.debian import debian_binary

__all__ = ["fakes"]  # the fixture, used by name

MARKER = "workspace-only-text-7f3a"


class CountingLanes:
    """The real lanes, counting each pytest run by its launcher's mode and keeping every
    run's work directory."""

    def __init__(self, lanes: SandboxLanes) -> None:
        self.lanes = lanes
        self.modes: list[str] = []
        self.work_dirs: list[dict[str, bytes]] = []

    async def arun(self, request: RunRequest, group: Any = None, deadline: Any = None) -> RunResult:
        self.modes.append(request.argv[3])
        self.work_dirs.append(dict(request.files))
        return await self.lanes.arun(request, group, deadline)

    def close(self) -> None:
        """The lanes are the fixture's to close."""


def unit_tests_rubric(**grader: Any) -> dict[str, Any]:
    """A rubric whose ``tests`` criterion runs the hidden tests, beside a judged one."""
    spec = {"type": "unit_tests", "wall_s": 20, "cpu_s": 10, **grader}
    return {
        "id": "group-code",
        "criteria": [
            {"id": "tests", "grader": spec, "weight": 3},
            {"id": "clear", "text": "The code is easy to read."},
        ],
        "judges": ["primary", "secondary"],
        "min_judges": 1,
    }


def test_a_group_shares_one_collect_run_and_each_completion_gets_its_own_sandbox(
    lanes: SandboxLanes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(unit_tests_module, "_runner_found", True)
    unit_tests_module.reference_tests.cache_clear()
    # Tests no collect run has seen yet: the group is the first to grade against them.
    fresh = {path: f"# {uuid.uuid4()}\n{text}" for path, text in TESTS.items()}
    spec = {"type": "unit_tests", "wall_s": 20, "cpu_s": 10}
    rubric = validate_document(
        {"id": "shared", "criteria": [{"id": "tests", "grader": spec}], "judges": ["primary"]},
        Rubric,
        "<request>",
        validation_context(None),
    )
    programs = [CORRECT, WRONG] * 4
    rollouts = [Rollout("Write add(a, b).", fenced(p), json.dumps(fresh)) for p in programs]
    counting = CountingLanes(lanes)
    graders = Graders(workers=1, sandbox=counting)  # type: ignore[arg-type]
    try:
        grades = asyncio.run(grade_criteria(graders, rubric, rollouts))
    finally:
        graders.close()
    scores = [g["tests"].score for g in grades]
    assert scores == [1.0, pytest.approx(2 / 3)] * 4, grades
    assert counting.modes.count("collect") == 1, counting.modes
    assert counting.modes.count("run") == 8, counting.modes
    # Each run had the work directory of its own completion's code, and the reference was
    # read once for the group.
    runs = [w for w, mode in zip(counting.work_dirs, counting.modes, strict=True) if mode == "run"]
    assert sorted(w["solution.py"].decode() for w in runs) == sorted(programs)
    assert unit_tests_module.reference_tests.cache_info().misses == 1


async def test_an_agent_group_grades_each_completions_own_workspace(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    debian_binary("pytest-3", "python3-pytest")
    marked = f"# {MARKER}\n"
    workspaces = [
        {"solution.py": marked + CORRECT, **TESTS},
        {"solution.py": marked + WRONG, **TESTS},
        {"solution.py": marked + WRONG},  # the tests it was given, deleted
    ]
    group = {
        "id": "agents",
        "prompt": "Make the tests in test_solution.py pass.",
        "completions": ["I fixed add.", "I fixed add too.", "Done: all tests pass."],
        "files": workspaces,
    }
    body = {"rubric": unit_tests_rubric(tests=TESTS, tests_shown=True), "groups": [group]}
    async with serving(tmp_path, fakes) as http:
        reply = await http.post("/v1/groups", json=body)
    assert reply.status_code == 200, reply.text
    (result,) = reply.json()["results"]
    right, wrong, deleting = result["rewards"]
    assert right > wrong >= deleting, result
    assert result["flags"] == [[], [], ["tamper_test_edit"]], result
    tests_scores = result["judges"]["primary"]["criteria"]["tests"]
    assert tests_scores == [1.0, pytest.approx(2 / 3), pytest.approx(2 / 3)], result
    sent = json.dumps([fake.script.bodies for fake in fakes])
    assert "fixed add" in sent and MARKER not in sent  # completions judged, files never


async def test_bad_workspaces_reject_their_group_alone_naming_the_field(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    good = {"prompt": "Add.", "completions": ["a", "b"], "files": [{"s.py": "x"}, {"s.py": "y"}]}
    groups = [
        {**good, "id": "good"},
        {**good, "id": "escape", "files": [{"s.py": "x"}, {"../s.py": "y"}]},
        {**good, "id": "short", "files": [{"s.py": "x"}]},
    ]
    body = {"rubric": unit_tests_rubric(tests=TESTS), "groups": groups}
    async with serving(tmp_path, fakes) as http:
        reply = await http.post("/v1/groups", json=body)
    assert reply.status_code == 200, reply.text
    by_id = {r["id"]: r for r in reply.json()["results"]}
    assert by_id["good"]["status"] != "rejected", by_id["good"]
    assert by_id["escape"]["status"] == "rejected", by_id["escape"]
    assert "groups[1].files[1]" in by_id["escape"]["error"], by_id["escape"]
    assert by_id["short"]["status"] == "rejected", by_id["short"]
    assert "groups[2].files: 1 workspaces for 2 completions" in by_id["short"]["error"]
