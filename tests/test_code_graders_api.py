"""Code graders through the HTTP API, on the real sandbox (bubblewrap) and fake judges: a
rubric criterion with an ``io_cases`` grader scores the completion's program against the
item's hidden cases (its reference), an inline recipe's ``check_program`` component runs
its checker, a service without a working sandbox gives ``reward: null`` with
``sandbox_unavailable`` (never 0), and ``/readyz`` says the sandbox is missing when the
library has a code grader."""

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

from tests.debian import debian_binary

CODE_RUBRIC = """\
id: code-add
description: Adds two integers read from stdin.
requires_reference: true
criteria:
  - id: passes
    grader: {type: io_cases, wall_s: 3, cpu_s: 1}
  - id: clear
    text: The code is easy to read.
judges: [primary]
min_judges: 1
"""
CASES = json.dumps(
    [
        {"input": "1 2\n", "output": "3\n"},
        {"input": "5 7", "output": "12"},
        {"input": "0 0", "output": "0"},
    ]
)


def code(program: str) -> str:
    return f"```python\n{program}\n```"


ITEMS = [
    {"id": "right", "completion": code("print(sum(map(int, input().split())))")},
    {"id": "wrong", "completion": code("a, b = map(int, input().split())\nprint(a * b)")},
    {"id": "loop", "completion": code("while True:\n    pass")},
    {"id": "bomb", "completion": code("x = bytearray(1 << 34)")},
    {"id": "peek", "completion": code("import os\nprint(open('/proc/self/environ').read())")},
]


@pytest.fixture
def fakes() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    debian_binary("bwrap", "bubblewrap")
    with FakeJudge() as primary, FakeJudge() as secondary:
        yield primary, secondary


@contextlib.asynccontextmanager
async def serving(
    folder: Path, fakes: tuple[FakeJudge, FakeJudge], **settings: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """The hostile graders' app, its library with the ``code-add`` rubric too."""
    (folder / "rubrics").mkdir()
    (folder / "rubrics" / "code-add.yaml").write_text(CODE_RUBRIC)
    async with hostile_serving(folder, fakes, **settings) as http:
        yield http


def rewards(body: dict[str, Any]) -> dict[str, Any]:
    return {item["id"]: item for item in body["results"]}


def criterion(item: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = item["judges"]["primary"]["criteria"]["passes"]
    return found


async def test_a_rubric_criterion_scores_the_program_on_the_hidden_cases(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    items = [{**i, "prompt": "Add two integers.", "reference": CASES} for i in ITEMS]
    async with serving(tmp_path, fakes) as http:
        reply = await http.post("/v1/rewards", json={"rubric": "code-add", "items": items})
        assert reply.status_code == 200, reply.text
        by_id = rewards(reply.json())
        ready = await http.get("/readyz")
    assert ready.status_code == 200, ready.text
    passes = {key: criterion(item) for key, item in by_id.items()}
    assert passes["right"]["score"] == 1.0, passes["right"]
    assert passes["wrong"]["score"] < 1.0, passes["wrong"]
    for key in ("loop", "bomb", "peek"):  # counted against the program: 0, never null
        assert passes[key]["score"] == 0.0, passes[key]
        assert by_id[key]["reward"] is not None, by_id[key]
    assert by_id["right"]["reward"] > by_id["wrong"]["reward"]
    assert by_id["wrong"]["reward"] > by_id["loop"]["reward"]
    outcomes = passes["loop"]["evidence"]["outcomes"]
    assert {o["result"] for o in outcomes} <= {"sandbox_timeout", "sandbox_memory"}


async def test_an_inline_recipe_runs_its_checker_program(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    checker = "import sys\nsys.exit(0 if open(sys.argv[1]).read().strip() == '42' else 1)"
    recipe = {
        "kind": "recipe",
        "id": "checked",
        "components": [{"id": "c", "grader": {"type": "check_program", "program": checker}}],
    }
    items = [
        {"id": "yes", "prompt": "6*7?", "completion": "42"},
        {"id": "no", "prompt": "6*7?", "completion": "41"},
    ]
    async with serving(tmp_path, fakes) as http:
        reply = await http.post("/v1/rewards", json={"rubric": recipe, "items": items})
    assert reply.status_code == 200, reply.text
    by_id = rewards(reply.json())
    assert by_id["yes"]["reward"] == 1.0 and by_id["no"]["reward"] == 0.0, by_id


async def test_without_a_sandbox_the_reward_is_null_and_readyz_says_why(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    items = [{**ITEMS[0], "prompt": "Add two integers.", "reference": CASES}]
    async with serving(tmp_path, fakes, sandbox_backend="none") as http:
        reply = await http.post("/v1/rewards", json={"rubric": "code-add", "items": items})
        ready = await http.get("/readyz")
    assert reply.status_code == 200, reply.text
    (item,) = reply.json()["results"]
    assert item["reward"] is None, item
    assert criterion(item)["error_kind"] == "sandbox_unavailable", item
    assert ready.status_code == 503, ready.text
    assert "sandbox" in ready.json()["message"]
