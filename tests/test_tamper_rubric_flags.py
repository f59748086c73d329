"""Tamper flags of a rubric's grader criterion, through /v1/rewards and /v1/groups, on the
real sandbox (bubblewrap, and pytest for ``unit_tests``) and fake judges.

A rubric criterion with an ``io_cases`` or ``unit_tests`` grader runs the completion's
program; the tamper detector reads it, and its flags join the item's (or the completion's)
``flags``, are counted by the monitor and the metrics, and cost their penalty under the
rubric's ``transforms.flag_penalties`` as the text detectors' flags do (1.0 by default, 0
opts out). Each tampering program here passes every case, so without its flag it would
earn what a right answer earns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from test_code_graders_api import CASES, fakes, serving
from test_tamper_flags_api import FLAG, HONEST, TAMPERING, counted, items, score
from test_unit_tests_grader import CORRECT, TESTS

from rewardsvc.core.rubric import Rubric
from rewardsvc.library.registry import validation_context
from rewardsvc.library.yamlfile import InvalidFile, validate_document
from rewardsvc.safety.tamper import TAMPER_FLAGS
from tests.debian import debian_binary

__all__ = ["fakes"]  # the fixture, used by name

CASES_CRITERION = {"id": "cases", "grader": {"type": "io_cases", "wall_s": 3, "cpu_s": 1}}


def rubric(*criteria: dict[str, Any], **transforms: Any) -> dict[str, Any]:
    """An inline rubric scored by its io_cases criterion (cases from the item's reference)
    and any judged ``criteria``."""
    return {
        "id": "tamper-rubric",
        "requires_reference": True,
        "criteria": [CASES_CRITERION, *criteria],
        "judges": ["primary"],
        "min_judges": 1,
        "transforms": transforms,
    }


def cases(item: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = item["judges"]["primary"]["criteria"]["cases"]
    return found


async def test_a_grader_criterion_flag_costs_its_default_and_is_counted(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    keys = ("honest", "exit_hook", "always_equal", "honest") * 2  # 8: the monitor evaluates
    body = {"rubric": rubric(), "items": items(*keys), "run": "r1"}
    got = await score(tmp_path, fakes, body)
    for item_id, item in got["results"].items():
        key = item_id.rsplit("-", 1)[0]
        assert cases(item)["score"] == 1.0, item  # every case passed
        if key == "honest":
            assert item["reward"] == 1.0 and item["flags"] == [], item
            continue
        # The flag costs the whole reward by default, as a text detector's attack flag does.
        assert item["reward"] == 0.0 and item["status"] == "ok", item
        assert item["flags"] == [FLAG[key]], item
        (finding,) = cases(item)["evidence"]["tamper"]
        assert finding["flag"] == FLAG[key], finding
    (run,) = [r for r in got["monitor"]["runs"] if r["run"] == "r1"]
    assert run["samples"] == 8, run
    assert run["signals"]["flag_rate:tamper_exit_hook"] == pytest.approx(0.25), run["signals"]
    assert run["signals"]["flag_ceiling:tamper_always_equal"] == pytest.approx(0.25)
    assert counted(got["metrics"], "tamper_exit_hook") == 2.0


@pytest.mark.parametrize(
    ("penalties", "exit_hook", "always_equal"),
    [
        ({"tamper_exit_hook": 0}, 1.0, 0.0),  # 0 opts the one flag out, the other still costs
        ({"tamper_exit_hook": 0.25, "tamper_always_equal": 0.5}, 0.75, 0.5),
    ],
)
async def test_a_rubric_sets_the_penalty_of_a_grader_flag(
    tmp_path: Path,
    fakes: tuple[FakeJudge, FakeJudge],
    penalties: dict[str, float],
    exit_hook: float,
    always_equal: float,
) -> None:
    body = {
        "rubric": rubric(flag_penalties=penalties),
        "items": items("exit_hook", "always_equal", "honest"),
    }
    results = (await score(tmp_path, fakes, body))["results"]
    assert results["exit_hook-0"]["reward"] == pytest.approx(exit_hook), results
    assert results["always_equal-1"]["reward"] == pytest.approx(always_equal), results
    assert results["exit_hook-0"]["flags"] == ["tamper_exit_hook"]  # still raised and counted
    assert results["honest-2"]["reward"] == 1.0 and results["honest-2"]["flags"] == []


async def test_a_judged_criterion_beside_it_does_not_hide_the_flag(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    clear = {"id": "clear", "text": "The code is easy to read."}
    body = {"rubric": rubric(clear), "items": items("honest", "exit_hook")}
    results = (await score(tmp_path, fakes, body))["results"]
    honest, flagged = results["honest-0"], results["exit_hook-1"]
    assert honest["reward"] > 0.0 and honest["flags"] == [], honest
    assert flagged["reward"] == 0.0 and flagged["flags"] == ["tamper_exit_hook"], flagged


async def test_a_unit_tests_criterion_flags_an_always_equal_return(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    debian_binary("pytest-3", "python3-pytest")  # pytest for the sandbox's python3
    tests = {"id": "tests", "grader": {"type": "unit_tests", "tests": TESTS, "wall_s": 20}}
    equal = "class Same:\n    def __eq__(self, other):\n        return True\n"
    texts = {"honest": CORRECT, "always_equal": equal + "def add(a, b):\n    return Same()"}
    body = {
        "rubric": {**rubric(), "criteria": [tests], "requires_reference": False},
        "items": [
            {"id": key, "prompt": "Write add(a, b).", "completion": f"```python\n{text}\n```"}
            for key, text in texts.items()
        ],
    }
    results = (await score(tmp_path, fakes, body))["results"]
    honest, flagged = results["honest"], results["always_equal"]
    passed = flagged["judges"]["primary"]["criteria"]["tests"]
    assert passed["score"] == 1.0, passed  # every test passed
    assert flagged["reward"] == 0.0 and flagged["flags"] == ["tamper_always_equal"], flagged
    assert honest["reward"] == 1.0 and honest["flags"] == [], honest


def test_rubric_flag_penalties_name_the_graders_flags() -> None:
    context = validation_context(None)
    penalties = {flag: 0.5 for flag in TAMPER_FLAGS} | {"padding": 0.0}
    made = validate_document(rubric(flag_penalties=penalties), Rubric, "<request>", context)
    assert made.transforms.flag_penalties == penalties
    with pytest.raises(InvalidFile, match=r"unknown flag 'tamper_exit_hok'.*the graders raise"):
        validate_document(rubric(flag_penalties={"tamper_exit_hok": 1}), Rubric, "r", context)


def group_rubric(**transforms: Any) -> dict[str, Any]:
    """A rubric for groups: the io_cases criterion beside one compared criterion."""
    clear = {"id": "clear", "text": "The code is easy to read."}
    return {**rubric(clear, **transforms), "judges": ["primary", "secondary"]}


@pytest.mark.parametrize(("penalties", "cost"), [({}, True), ({"tamper_exit_hook": 0}, False)])
async def test_a_group_completion_pays_for_its_grader_flag(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge], penalties: dict[str, float], cost: bool
) -> None:
    group = {
        "id": "g",
        "prompt": "Add two integers.",
        "reference": CASES,
        "completions": [TAMPERING["exit_hook"], HONEST],
    }
    body = {"rubric": group_rubric(flag_penalties=penalties), "groups": [group]}
    async with serving(tmp_path, fakes) as http:
        reply = await http.post("/v1/groups", json=body)
    assert reply.status_code == 200, reply.text
    (result,) = reply.json()["results"]
    assert result["flags"] == [["tamper_exit_hook"], []], result
    flagged, honest = result["rewards"]
    assert honest is not None and flagged is not None, result
    if cost:
        assert flagged == 0.0 and honest > 0.0, result
    else:
        assert flagged > 0.0, result
