"""Tamper flags through /v1/rewards, on the real sandbox (bubblewrap) and fake judges.

An inline recipe's ``io_cases`` component runs the completion's program; the tamper
detector reads it, and its flags cost their penalty on that component's score (so that a
veto fires), appear in the item's ``flags`` and in the monitor's and metrics' counts, as
the text detectors' flags do. Each tampering program here passes every case, so without
its flag it would earn what a right answer earns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from test_code_graders_api import CASES, code, fakes, rewards, serving

from rewardsvc.core.recipe import Recipe
from rewardsvc.core.transforms import Transforms
from rewardsvc.library.registry import validation_context
from rewardsvc.library.yamlfile import InvalidFile, validate_document
from rewardsvc.safety.tamper import TAMPER_FLAGS

__all__ = ["fakes"]  # the fixture, used by name

ADD = "print(sum(map(int, input().split())))"
HONEST = code(f"import sys\n\ndef main():\n    {ADD}\n\nif __name__ == '__main__':\n    main()")
TAMPERING = {
    "exit_hook": code(f"import atexit\natexit.register(lambda: None)\n{ADD}"),
    "always_equal": code(f"class Any:\n    def __eq__(self, other):\n        return True\n{ADD}"),
}
FLAG = {"exit_hook": "tamper_exit_hook", "always_equal": "tamper_always_equal"}


def recipe(**extra: Any) -> dict[str, Any]:
    """An inline recipe of one io_cases component (cases from the item's reference)."""
    component = {"id": "cases", "grader": {"type": "io_cases", "wall_s": 3, "cpu_s": 1}}
    return {"kind": "recipe", "id": "tamper-add", "components": [component], **extra}


def items(*keys: str) -> list[dict[str, Any]]:
    texts = {"honest": HONEST, **TAMPERING}
    return [
        {
            "id": f"{key}-{n}",
            "prompt": "Add two integers.",
            "completion": texts[key],
            "reference": CASES,
        }
        for n, key in enumerate(keys)
    ]


async def score(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge], body: dict[str, Any]
) -> dict[str, Any]:
    async with serving(tmp_path, fakes) as http:
        before = (await http.get("/metrics")).text
        reply = await http.post("/v1/rewards", json=body)
        assert reply.status_code == 200, reply.text
        monitor = (await http.get("/v1/monitor")).json()
        after = (await http.get("/metrics")).text
    return {"results": rewards(reply.json()), "monitor": monitor, "metrics": (before, after)}


def counted(metrics: tuple[str, str], flag: str) -> float:
    """How much ``rewardsvc_flags_total`` grew for ``flag`` over the request (the
    counters are the process's: earlier tests in it count too)."""
    series = f'rewardsvc_flags_total{{flag="{flag}"}} '

    def value(text: str) -> float:
        found = [line for line in text.splitlines() if line.startswith(series)]
        return float(found[0][len(series) :]) if found else 0.0

    return value(metrics[1]) - value(metrics[0])


async def test_a_tamper_flag_costs_its_default_and_is_counted(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    keys = ("honest", "exit_hook", "always_equal", "honest") * 2  # 8: the monitor evaluates
    got = await score(tmp_path, fakes, {"rubric": recipe(), "items": items(*keys), "run": "r1"})
    results = got["results"]
    for item_id, item in results.items():
        key = item_id.rsplit("-", 1)[0]
        cases = item["components"]["cases"]
        if key == "honest":
            assert item["reward"] == 1.0 and item["flags"] == [], item
            continue
        # Every case passed, and the flag costs the whole reward by default.
        assert cases["evidence"]["passed"] == 3 and cases["evidence"]["score_before_flags"] == 1.0
        assert item["reward"] == 0.0 and item["status"] == "ok", item
        assert item["flags"] == [FLAG[key]], item
        (finding,) = cases["evidence"]["tamper"]
        assert finding["flag"] == FLAG[key] and finding["path"] == "solution.py", finding
    (run,) = [r for r in got["monitor"]["runs"] if r["run"] == "r1"]
    assert run["rubric"].startswith("inline:tamper-add@") and run["samples"] == 8, run
    assert run["signals"]["flag_rate:tamper_exit_hook"] == pytest.approx(0.25), run["signals"]
    assert run["signals"]["flag_ceiling:tamper_always_equal"] == pytest.approx(0.25)
    assert counted(got["metrics"], "tamper_exit_hook") == 2.0


@pytest.mark.parametrize(
    ("extra", "expected", "vetoed"),
    [
        ({"flag_penalties": {"tamper_exit_hook": 0.25}}, 0.75, []),
        ({"flag_penalties": {"tamper_exit_hook": 0}}, 1.0, []),
        (
            {
                "flag_penalties": {"tamper_exit_hook": 0.25},
                "vetoes": [{"component": "cases", "threshold": 1.0, "cap": 0.0}],
            },
            0.0,
            ["cases"],
        ),
    ],
)
async def test_a_recipe_sets_the_penalty_and_a_veto_sees_it(
    tmp_path: Path,
    fakes: tuple[FakeJudge, FakeJudge],
    extra: dict[str, Any],
    expected: float,
    vetoed: list[str],
) -> None:
    body = {"rubric": recipe(**extra), "items": items("exit_hook", "honest")}
    results = (await score(tmp_path, fakes, body))["results"]
    flagged, honest = results["exit_hook-0"], results["honest-1"]
    assert flagged["reward"] == pytest.approx(expected), flagged
    assert flagged["flags"] == ["tamper_exit_hook"] and flagged["vetoed_by"] == vetoed
    assert honest["reward"] == 1.0 and honest["vetoed_by"] == [], honest


def test_recipe_flag_penalties_name_the_graders_flags() -> None:
    context = validation_context(None)
    penalties = {flag: 0.5 for flag in TAMPER_FLAGS}
    made = validate_document(recipe(flag_penalties=penalties), Recipe, "<request>", context)
    assert made.flag_penalties == penalties
    with pytest.raises(InvalidFile, match=r"unknown flag 'tamper_exit_hok'.*the graders raise"):
        validate_document(recipe(flag_penalties={"tamper_exit_hok": 1}), Recipe, "r", context)
    # A text detector's flag is a rubric's to penalise; a tamper flag is a recipe's, and a
    # rubric's too (its grader criteria raise it), but an unknown one is neither's.
    with pytest.raises(InvalidFile, match="unknown flag 'padding'"):
        validate_document(recipe(flag_penalties={"padding": 1}), Recipe, "r", context)
    given = Transforms.model_validate({"flag_penalties": {"tamper_network": 1}}, context=context)
    assert given.flag_penalties == {"tamper_network": 1}
    with pytest.raises(ValueError, match="unknown flag 'tamper_netwrk'"):
        Transforms.model_validate({"flag_penalties": {"tamper_netwrk": 1}}, context=context)
