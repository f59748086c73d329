"""Code items through ``POST /v1/rewards`` on the real sandbox (bubblewrap) and fake judges:
a recipe's ``unit_tests`` component (inline, or a library recipe naming a task file) scores
agent workspaces and completions; sandboxed work is admitted like judge calls (413 naming
``max_sandbox_seconds``, no run started); an item whose ``files`` are malformed is
rejected alone, naming the field."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakejudge import FakeJudge
from test_graders_hostile import serving as hostile_serving

from rewardsvc.sandbox.run import RunRequest
from tests.debian import debian_binary

TEST_FILE = (
    "from solution import add\n\n"
    "def test_small():\n    assert add(1, 2) == 3\n\n"
    "def test_negative():\n    assert add(-1, -2) == -3\n"
)
GRADER = {"type": "unit_tests", "tests": {"test_solution.py": TEST_FILE}, "wall_s": 20}
RECIPE = {"kind": "recipe", "id": "coded", "components": [{"id": "tests", "grader": GRADER}]}
LIBRARY_RECIPE = """\
kind: recipe
id: tasked
components:
  - id: tests
    grader: {type: unit_tests, tests_file: ../tasks/test_solution.py, expected_tests: 2}
"""
CORRECT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return abs(a + b)\n"


@pytest.fixture
def fakes() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    debian_binary("bwrap", "bubblewrap")
    debian_binary("pytest-3", "python3-pytest")  # pytest for the sandbox's python3
    with FakeJudge() as primary, FakeJudge() as secondary:
        yield primary, secondary


@contextlib.asynccontextmanager
async def serving(
    folder: Path, fakes: tuple[FakeJudge, FakeJudge], **settings: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """The hostile graders' app, its library with a recipe naming a task file too."""
    (folder / "rubrics" / "recipes").mkdir(parents=True)
    (folder / "rubrics" / "tasks").mkdir()
    (folder / "rubrics" / "tasks" / "test_solution.py").write_text(TEST_FILE)
    (folder / "rubrics" / "recipes" / "tasked.yaml").write_text(LIBRARY_RECIPE)
    async with hostile_serving(folder, fakes, **settings) as http:
        yield http


def item(key: str, **fields: Any) -> dict[str, Any]:
    return {"id": key, "prompt": "Write add(a, b) in solution.py.", "completion": "", **fields}


def rewards(reply: httpx.Response) -> dict[str, dict[str, Any]]:
    assert reply.status_code == 200, reply.text
    return {result["id"]: result for result in reply.json()["results"]}


async def test_a_recipe_grades_workspaces_and_completions_and_restores_the_tests(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge], runs: list[RunRequest]
) -> None:
    items = [
        item("right", completion=f"```python\n{CORRECT}```"),
        item("workspace", files={"solution.py": CORRECT, "README.md": "add"}),
        item("wrong", files={"solution.py": WRONG}),
        item("edited", files={"solution.py": WRONG, "test_solution.py": "def test_a(): pass"}),
        item("conftest", files={"solution.py": WRONG, "conftest.py": "raise SystemExit(0)"}),
    ]
    async with serving(tmp_path, fakes) as http:
        inline = rewards(await http.post("/v1/rewards", json={"rubric": RECIPE, "items": items}))
        library = rewards(await http.post("/v1/rewards", json={"rubric": "tasked", "items": items}))
    for by_id in (inline, library):
        assert by_id["right"]["reward"] == 1.0, by_id["right"]
        assert by_id["workspace"]["reward"] == 1.0, by_id["workspace"]
        assert by_id["wrong"]["reward"] == 0.5, by_id["wrong"]
        # The tests run restored (the attack scores what honest wrong code scores), and the
        # tampering is flagged: its default penalty (1.0) takes the reward to 0.
        for attack, flag in (("edited", "tamper_test_edit"), ("conftest", "tamper_runner_config")):
            assert flag in by_id[attack]["flags"], by_id[attack]
            assert by_id[attack]["reward"] == 0.0, by_id[attack]
    assert runs, "the items ran in the sandbox"


async def test_too_many_sandbox_seconds_is_413_naming_the_setting_and_nothing_runs(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge], runs: list[RunRequest]
) -> None:
    # 3 items x (the pytest run + the collect run) x 20 s = 120 s, x 3 at the busy host's
    # cap (WALL_CAP) = 360 s > 300 s; two items' 240 s fit.
    items = [item(f"i{n}", files={"solution.py": CORRECT}) for n in range(3)]
    async with serving(tmp_path, fakes, max_sandbox_seconds=300) as http:
        reply = await http.post("/v1/rewards", json={"rubric": RECIPE, "items": items})
        refused_runs = len(runs)
        fits = await http.post("/v1/rewards", json={"rubric": RECIPE, "items": items[:2]})
    assert reply.status_code == 413, reply.text
    assert "max_sandbox_seconds" in reply.text and "120" in reply.text, reply.text
    assert refused_runs == 0
    assert fits.status_code == 200, fits.text
    assert [r.argv[3] for r in runs].count("run") == 2  # the admitted request's pytest runs


async def test_the_cases_of_io_cases_each_cost_their_wall_clock(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge], runs: list[RunRequest]
) -> None:
    grader = {"type": "io_cases", "wall_s": 30}
    recipe = {"kind": "recipe", "id": "io", "components": [{"id": "c", "grader": grader}]}
    cases = json.dumps([{"input": "1", "output": "1"}] * 4)  # 4 x 30 s = 120 s (x 3 > 300)
    items = [item("one", completion="```python\nprint(input())\n```", reference=cases)]
    async with serving(tmp_path, fakes, max_sandbox_seconds=300) as http:
        reply = await http.post("/v1/rewards", json={"rubric": recipe, "items": items})
    assert reply.status_code == 413 and "max_sandbox_seconds" in reply.text, reply.text
    assert runs == []


@pytest.mark.parametrize(
    "files",
    [
        {"../escape.py": "x"},
        {"/etc/passwd": "x"},
        {"a\u0000b.py": "x"},
        {"x" * 256: "x"},
        {f"f{n}.py": "" for n in range(257)},
        {"big.py": "x" * (4 << 20)},
    ],
    ids=["dotdot", "absolute", "nul", "long-path", "too-many", "too-large"],
)
async def test_an_item_with_bad_files_is_rejected_alone_naming_the_field(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge], files: dict[str, str]
) -> None:
    items = [item("good", files={"solution.py": CORRECT}), item("bad", files=files)]
    async with serving(tmp_path, fakes) as http:
        by_id = rewards(await http.post("/v1/rewards", json={"rubric": RECIPE, "items": items}))
        alone = await http.post("/v1/rewards", json={"rubric": RECIPE, "items": items[1:]})
    assert by_id["good"]["reward"] == 1.0, by_id["good"]
    assert by_id["bad"]["reward"] is None and by_id["bad"]["status"] == "rejected"
    assert "items[1].files" in by_id["bad"]["error"], by_id["bad"]
    (only,) = rewards(alone).values()  # /v1/rewards rejects per item, even the only one
    assert only["status"] == "rejected" and "items[0].files" in only["error"], only
