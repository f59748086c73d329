"""Sandboxed work of groups and preferences is admitted like that of ``/v1/rewards``, on the
real sandbox (bubblewrap) and fake judges: a rubric's ``io_cases`` criterion runs on every
completion of every group (cases from the group's reference), so a request planning more
sandbox seconds than ``max_sandbox_seconds`` is refused (413 naming the setting) before
any run starts, and one that fits grades each completion in the sandbox."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from test_graders_hostile import serving

from rewardsvc.sandbox.run import RunRequest
from tests.debian import debian_binary

PASSES = {"id": "passes", "grader": {"type": "io_cases", "wall_s": 10, "cpu_s": 1}}
RUBRIC = {
    "id": "code-add",
    "requires_reference": True,
    "criteria": [PASSES, {"id": "clear", "text": "The code is easy to read."}],
    "judges": ["primary", "secondary"],
}
CASES = json.dumps([{"input": "1 2", "output": "3"}, {"input": "5 7", "output": "12"}])
PROMPT = "Read two integers, print their sum."
RIGHT = "```python\nprint(sum(map(int, input().split())))\n```"
WRONG = "```python\na, b = map(int, input().split())\nprint(a * b)\n```"


@pytest.fixture
def fakes() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    debian_binary("bwrap", "bubblewrap")
    with FakeJudge() as primary, FakeJudge() as secondary:
        yield primary, secondary


def group(gid: str, completions: list[str]) -> dict[str, Any]:
    return {"id": gid, "prompt": PROMPT, "completions": completions, "reference": CASES}


async def test_groups_planning_too_many_sandbox_seconds_are_413_and_nothing_runs(
    tmp_path: Path,
    fakes: tuple[FakeJudge, FakeJudge],
    runs: list[RunRequest],
) -> None:
    """On bbac529 the groups' plan counted no sandbox seconds: this request (2 groups x 3
    completions x 2 cases x 10 s = 120 s, x 3 at the busy host's cap = 360 s > 300 s) was
    admitted and ran its 12 runs. One group (60 s, 180 s at the cap) fits: every
    completion's cases run and the right program scores 1.0."""
    groups = [group(g, [RIGHT, WRONG, RIGHT]) for g in ("a", "b")]
    async with serving(tmp_path, fakes, max_sandbox_seconds=300) as http:
        refused = await http.post("/v1/groups", json={"rubric": RUBRIC, "groups": groups})
        refused_runs, asked = len(runs), fakes[0].script.requests + fakes[1].script.requests
        fits = await http.post("/v1/groups", json={"rubric": RUBRIC, "groups": groups[:1]})
    assert refused.status_code == 413, refused.text
    assert "max_sandbox_seconds" in refused.text and "120" in refused.text, refused.text
    assert refused_runs == asked == 0
    assert fits.status_code == 200, fits.text
    (result,) = fits.json()["results"]
    assert result["status"] == "ok", result
    for view in result["judges"].values():
        passes = view["criteria"]["passes"]
        assert passes[0] == passes[2] == 1.0, view
        assert passes[1] < 1.0, view
    assert len(runs) == 3 * 2  # each completion's two cases, of the admitted request only


async def test_preferences_planning_too_many_sandbox_seconds_are_413_and_nothing_runs(
    tmp_path: Path,
    fakes: tuple[FakeJudge, FakeJudge],
    runs: list[RunRequest],
) -> None:
    """On bbac529 preferences were admitted as groups were: 3 pairs x 2 completions x 2
    cases x 10 s = 120 s (360 s at the busy host's cap > 300 s) ran its 12 runs."""
    pairs = [{"id": p, "prompt": PROMPT, "a": RIGHT, "b": WRONG, "reference": CASES} for p in "xyz"]
    async with serving(tmp_path, fakes, max_sandbox_seconds=300) as http:
        reply = await http.post("/v1/preferences", json={"rubric": RUBRIC, "pairs": pairs})
    assert reply.status_code == 413, reply.text
    assert "max_sandbox_seconds" in reply.text and "120" in reply.text, reply.text
    assert runs == []
    assert fakes[0].script.requests + fakes[1].script.requests == 0
