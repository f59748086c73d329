"""The best-of-n study's selection math (bench/bestofn_select.py): pure functions on
constructed score tables, no judge."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bench.bestofn_select import (
    NS,
    ensemble,
    exact_best_of_n,
    onset,
    recipe,
    sampled_best_of_n,
    single,
)

FLAT_BAND = [0.01] * len(NS)


def test_rising_curve_does_not_overoptimize() -> None:
    gold = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    out = onset(gold, FLAT_BAND)
    assert (out["peak_n"], out["overoptimizes_from"]) == (64, None)


def test_peak_then_decline_overoptimizes_from_the_peak() -> None:
    gold = [0.2, 0.5, 0.6, 0.4, 0.3, 0.2, 0.1]
    out = onset(gold, FLAT_BAND)
    assert out["overoptimizes_from"] == 4 and out["drop_to_64"] == pytest.approx(0.5)


def test_drop_within_the_band_at_either_end_is_noise() -> None:
    gold = [0.2, 0.5, 0.6, 0.6, 0.6, 0.6, 0.55]
    assert onset(gold, FLAT_BAND)["overoptimizes_from"] == 32
    # A wide band at the peak (not only at n = 64) makes the same drop noise.
    band = [0.01, 0.01, 0.01, 0.01, 0.01, 0.1, 0.01]
    assert onset(gold, band)["overoptimizes_from"] is None
    assert onset(gold, [0.1] * len(NS))["overoptimizes_from"] is None


def test_plateau_onset_is_its_last_point() -> None:
    """Gold held through n = 8 and fell after it: the decline starts after 8, not at 2."""
    gold = [0.3, 0.6, 0.6, 0.6, 0.2, 0.1, 0.0]
    assert onset(gold, FLAT_BAND)["overoptimizes_from"] == 8


def test_curve_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError):
        onset([0.1, 0.2], [0.0, 0.0])


def _cand(primary: float, secondary: float, gate: float = 1.0, reward: float = 0.5) -> Any:
    return {
        "judges": {"primary": {"score": primary}, "secondary": {"score": secondary}},
        "gate": gate,
        "reward": reward,
    }


# Candidate 0: both judges like it moderately; 1: primary loves it, secondary hates it;
# 2: secondary loves it, primary is lukewarm.
POOL = [_cand(0.6, 0.6), _cand(1.0, 0.0), _cand(0.3, 0.95)]


@pytest.mark.parametrize(
    ("proxy", "chosen"),
    [
        (single("primary"), 1),
        (single("secondary"), 2),
        (ensemble("mean", "none"), 2),  # means 0.6, 0.5, 0.625
        (ensemble("min", "none"), 0),  # mins 0.6, 0.0, 0.3
    ],
)
def test_each_rule_picks_its_own_best(proxy: Any, chosen: int) -> None:
    values = proxy.values(POOL)
    assert int(np.argmax(values)) == chosen, values


def test_uncertainty_weighted_rule_prefers_agreement() -> None:
    """uwo penalizes disagreement: the agreed 0.6 beats a disputed higher mean."""
    pool = [_cand(0.6, 0.6), _cand(1.0, 0.3)]
    assert ensemble("mean", "none").values(pool)[1] > ensemble("mean", "none").values(pool)[0]
    assert int(np.argmax(ensemble("uwo", "none").values(pool))) == 0


def test_recipe_gate_floors_a_failed_verifier() -> None:
    pool = [_cand(0.9, 0.9, gate=0.0, reward=0.9), _cand(0.2, 0.2, gate=1.0, reward=0.2)]
    values = recipe(pool)
    assert values[0] == 0.0 and values[1] > 0.0


def test_sampling_matches_the_closed_form_with_ties() -> None:
    proxy = np.array([0.1, 0.5, 0.5, 0.9, 0.3])
    gold = np.array([1.0, 1.0, 0.0, 0.0, 1.0])
    for n in (1, 2, 8):
        sampled, _ = sampled_best_of_n(proxy, gold, gold, n, draws=40_000, seed=n)
        assert sampled.mean() == pytest.approx(exact_best_of_n(proxy, gold, n), abs=0.01)
    # n = 1 is a uniform pick; a large n almost surely holds the top candidate.
    assert exact_best_of_n(proxy, gold, 1) == pytest.approx(gold.mean())
    assert exact_best_of_n(proxy, gold, 64) == pytest.approx(0.0, abs=1e-5)
