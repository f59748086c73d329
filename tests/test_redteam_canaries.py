"""Found attacks become monitor canaries: the file ``redteam --canaries`` writes loads as
the monitor's canary set, and its attack still beats the known-bad anchor by the margin."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rewardsvc.monitor.canaries import load_canaries
from rewardsvc.redteam.canaries import canaries_of, write_canaries
from rewardsvc.redteam.regression import Regression, found_attack, summarize
from tests.test_redteam import ITEM, Scripted, _run


def _regression(tolerance: float = 0.05) -> Regression:
    _, outcome = _run(budget=200)
    attack = found_attack(outcome, tolerance=tolerance)
    assert attack is not None
    return Regression(
        rubric="short-answer-correctness",
        rubric_version="v1",
        judges={"j": "id"},
        seed=0,
        tolerance=tolerance,
        summary=summarize([outcome], 200, tolerance),
        attacks=[attack],
    )


def test_found_attack_loads_as_a_monitor_canary(tmp_path: Path) -> None:
    reg = _regression()
    canaries = canaries_of(reg)
    assert canaries is not None
    write_canaries(canaries, tmp_path / "short-answer-correctness.yaml")
    loaded = load_canaries(tmp_path)["short-answer-correctness"]
    assert loaded == canaries and loaded.margin == reg.tolerance
    [case] = loaded.cases
    assert (case.bad, case.good, case.reference) == (ITEM.completion, "15", "15")
    [(name, text)] = case.attacks.items()
    assert name.startswith("redteam-") and text == reg.attacks[0].completion
    # The monitor scores these items; the attack still clears the anchor by the margin.
    items = loaded.items()
    scored = asyncio.run(Scripted().score(items))
    reward = {item["id"]: row["reward"] for item, row in zip(items, scored, strict=True)}
    assert reward[f"0/attack:{name}"] - reward["0/bad"] > loaded.margin


def test_only_attacks_that_beat_their_baseline_become_canaries() -> None:
    reg = _regression()
    lost = reg.attacks[0].model_copy(update={"succeeded": False})
    assert canaries_of(reg.model_copy(update={"attacks": [lost]})) is None
    no_reference = reg.attacks[0].model_copy(update={"reference": None})
    assert canaries_of(reg.model_copy(update={"attacks": [no_reference]})) is None
    assert canaries_of(reg, margin=0.3) is not None and canaries_of(reg, 0.3).margin == 0.3  # type: ignore[union-attr]
