"""Property-based tests of the reward math in rewardsvc.core.aggregate."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rewardsvc.core import aggregate
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.transforms import LengthPenalty, Transforms

RULES = ["mean", "min", "uwo", "median", "softmin"]

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
variance = st.floats(min_value=0.0, max_value=0.25, allow_nan=False)
weight = st.floats(min_value=0.01, max_value=100.0, allow_nan=False)
lam = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)
beta = st.floats(min_value=0.001, max_value=10.0, allow_nan=False)


@st.composite
def judged(draw: st.DrawFn, min_size: int = 1) -> tuple[list[float], list[float]]:
    """Judge scores with matching positive weights."""
    n = draw(st.integers(min_value=min_size, max_value=7))
    scores = draw(st.lists(unit, min_size=n, max_size=n))
    weights = draw(st.lists(weight, min_size=n, max_size=n))
    return scores, weights


def _criterion(i: int, category: str, w: float, gate: float | None = None) -> Criterion:
    data: dict[str, object] = {"id": f"c{i}", "text": f"criterion {i}", "category": category}
    data["weight"] = w
    if gate is not None:
        data["gate"] = gate
    return Criterion.model_validate(data)


@st.composite
def explicit_rubrics(draw: st.DrawFn) -> Rubric:
    """A random explicit rubric: at least one positive criterion, any number of pitfalls."""
    n = draw(st.integers(min_value=1, max_value=6))
    criteria = []
    for i in range(n):
        category = draw(st.sampled_from(["essential", "important", "optional", "pitfall"]))
        if i == 0 and category == "pitfall":
            category = "important"
        w = draw(st.floats(min_value=0.1, max_value=10.0))
        criteria.append(_criterion(i, category, -w if category == "pitfall" else w))
    return Rubric(id="r", criteria=criteria, judges=["primary"])


# ------------------------------------------------------------------ judges -> reward


@given(judged(), st.sampled_from(RULES), lam, beta)
def test_every_rule_lies_between_min_and_max(data, rule, lam_, beta_):
    scores, weights = data
    for w in (None, weights):
        r = aggregate.combine(rule, scores, w, lam=lam_, beta=beta_)
        assert min(scores) <= r <= max(scores)


@given(judged(), beta)
def test_softmin_between_min_and_mean(data, beta_):
    scores, weights = data
    for w in (None, weights):
        s = aggregate.combine("softmin", scores, w, beta=beta_)
        assert min(scores) <= s <= aggregate.weighted_mean(scores, w)


def test_softmin_limits():
    scores = [0.2, 0.9]
    assert aggregate.combine("softmin", scores, beta=1e-4) == pytest.approx(0.2, abs=1e-3)
    assert aggregate.combine("softmin", scores, beta=1e4) == pytest.approx(0.55, abs=1e-3)


@given(judged(), lam)
def test_uwo_at_most_mean(data, lam_):
    scores, weights = data
    for w in (None, weights):
        assert aggregate.combine("uwo", scores, w, lam=lam_) <= aggregate.weighted_mean(scores, w)


@given(unit, st.integers(min_value=1, max_value=7), lam)
def test_uwo_equals_mean_when_judges_agree(score, n, lam_):
    assert aggregate.combine("uwo", [score] * n, lam=lam_) == aggregate.combine("mean", [score] * n)


@given(judged(min_size=2), st.floats(min_value=0.0, max_value=1.0))
def test_uwo_clamp_never_binds_for_lambda_at_most_one(data, lam_):
    # Bhatia–Davis: var <= (mean - min)(max - mean), so mean - lam var >= min for lam <= 1.
    scores, weights = data
    mean = aggregate.weighted_mean(scores, weights)
    raw = mean - lam_ * aggregate.weighted_variance(scores, weights)
    assert raw >= min(scores) - 1e-12


def test_uwo_large_lambda_is_clamped_at_min():
    assert aggregate.combine("uwo", [0.0, 1.0], lam=10.0) == 0.0
    assert aggregate.combine("uwo", [0.2, 0.6], lam=0.5) == pytest.approx(0.4 - 0.5 * 0.04)


@given(judged(), st.sampled_from(RULES), lam, beta, st.floats(min_value=1e-3, max_value=1e3))
def test_judge_weights_are_scale_invariant(data, rule, lam_, beta_, c):
    scores, weights = data
    a = aggregate.combine(rule, scores, weights, lam=lam_, beta=beta_)
    b = aggregate.combine(rule, scores, [c * w for w in weights], lam=lam_, beta=beta_)
    assert a == pytest.approx(b, rel=1e-9, abs=1e-12)
    ua = aggregate.uncertainty(scores, [0.01] * len(scores), weights)
    ub = aggregate.uncertainty(scores, [0.01] * len(scores), [c * w for w in weights])
    assert ua == pytest.approx(ub, rel=1e-9, abs=1e-12)


@given(st.lists(unit, min_size=1, max_size=9))
def test_unweighted_rules_match_statistics(scores):
    assert aggregate.combine("mean", scores) == pytest.approx(statistics.fmean(scores))
    assert aggregate.combine("median", scores) == pytest.approx(statistics.median(scores))
    assert aggregate.combine("min", scores) == min(scores)


def test_weighted_median_follows_weights_min_ignores_them():
    # A heavy judge pulls the weighted median to its score; min ignores weights.
    assert aggregate.combine("median", [0.1, 0.5, 0.9], [1, 1, 5]) == 0.9
    assert aggregate.combine("min", [0.1, 0.5, 0.9], [1, 1, 5]) == 0.1
    assert aggregate.combine("mean", [0.0, 1.0], [1, 3]) == pytest.approx(0.75)


def test_combine_rejects_bad_input():
    with pytest.raises(ValueError):
        aggregate.combine("mean", [])
    with pytest.raises(ValueError):
        aggregate.combine("mean", [0.5], [0.0])
    with pytest.raises(ValueError):
        aggregate.combine("mean", [0.5, 0.6], [1.0])


@given(unit, st.integers(min_value=1, max_value=7))
def test_uncertainty_zero_when_judges_agree_with_no_within_variance(score, n):
    assert aggregate.uncertainty([score] * n, [0.0] * n) == 0.0


@given(judged(), st.data())
def test_uncertainty_decomposes(data, draw):
    scores, weights = data
    variances = draw.draw(st.lists(variance, min_size=len(scores), max_size=len(scores)))
    u = aggregate.uncertainty(scores, variances, weights)
    between = aggregate.weighted_variance(scores, weights)
    within = sum(w * v for w, v in zip(weights, variances, strict=True)) / sum(weights)
    assert u == pytest.approx(math.sqrt(between + within))
    assert u >= math.sqrt(within) - 1e-12


# ------------------------------------------------------------------ criteria -> judge score


@given(explicit_rubrics(), st.data())
def test_explicit_score_in_unit_interval(rubric, draw):
    scores = {c.id: draw.draw(unit) for c in rubric.criteria}
    variances = {c.id: draw.draw(variance) for c in rubric.criteria}
    score, var = aggregate.judge_score(rubric, scores, variances)
    assert 0.0 <= score <= 1.0
    assert 0.0 <= var <= aggregate.MAX_VARIANCE


def test_explicit_formula_and_variance():
    rubric = Rubric(
        id="r",
        criteria=[
            _criterion(0, "essential", 2.0),
            _criterion(1, "important", 1.0),
            _criterion(2, "pitfall", -1.0),
        ],
        judges=["primary"],
    )
    s, v = aggregate.judge_score(
        rubric, {"c0": 0.9, "c1": 0.6, "c2": 0.3}, {"c0": 0.01, "c1": 0.04, "c2": 0.09}
    )
    assert s == pytest.approx((2 * 0.9 + 0.6 - 0.3) / 3)
    assert v == pytest.approx((2 / 3) ** 2 * 0.01 + (1 / 3) ** 2 * 0.04 + (1 / 3) ** 2 * 0.09)
    # Pitfall certainly present and nothing else: clipped to 0, never negative.
    assert aggregate.judge_score(rubric, {"c0": 0.0, "c1": 0.0, "c2": 1.0})[0] == 0.0


def test_missing_criterion_is_an_error():
    rubric = Rubric(id="r", criteria=[_criterion(0, "important", 1.0)], judges=["primary"])
    with pytest.raises(KeyError):
        aggregate.judge_score(rubric, {})


@given(
    st.floats(min_value=0.01, max_value=1.0),
    st.floats(min_value=0.0, max_value=1.0),
    st.data(),
    st.sampled_from(["explicit", "worst"]),
)
def test_gates_cap(gate, cap, draw, combine):
    below = draw.draw(st.floats(min_value=0.0, max_value=gate, exclude_max=True))
    others = draw.draw(st.lists(unit, min_size=2, max_size=2))
    criterion = Criterion(
        id="must", text="essential thing", category="essential", gate=gate, cap=cap
    )
    rubric = Rubric(
        id="r",
        combine=combine,
        criteria=[criterion, _criterion(1, "important", 3.0), _criterion(2, "optional", 1.0)],
        judges=["primary"],
    )
    scores = {"must": below, "c1": others[0], "c2": others[1]}
    assert aggregate.judge_score(rubric, scores)[0] <= cap
    # At or above the gate, no cap from it.
    ungated = aggregate.judge_score(rubric, {**scores, "must": gate})[0]
    plain = Rubric(
        id="r",
        combine=combine,
        criteria=[criterion.model_copy(update={"gate": None}), *rubric.criteria[1:]],
        judges=["primary"],
    )
    assert ungated == aggregate.judge_score(plain, {**scores, "must": gate})[0]


def test_worst_is_min_compliance_with_its_variance():
    rubric = Rubric(
        id="c",
        kind="constitution",
        combine="worst",
        criteria=[
            _criterion(0, "important", 1.0),
            _criterion(1, "important", 1.0),
            _criterion(2, "pitfall", -1.0),
        ],
        judges=["primary"],
    )
    s, v = aggregate.judge_score(
        rubric, {"c0": 0.9, "c1": 0.4, "c2": 0.2}, {"c0": 0.01, "c1": 0.05, "c2": 0.02}
    )
    assert (s, v) == (0.4, 0.05)
    # A pitfall present with 0.8 means 0.2 compliance: the worst.
    s, v = aggregate.judge_score(rubric, {"c0": 0.9, "c1": 0.4, "c2": 0.8}, {"c2": 0.02})
    assert (s, v) == (pytest.approx(0.2), 0.02)


def test_implicit_is_the_holistic_score():
    rubric = Rubric(
        id="r", combine="implicit", criteria=[_criterion(0, "important", 1.0)], judges=["primary"]
    )
    assert aggregate.judge_score(rubric, {aggregate.HOLISTIC: 0.7}, {aggregate.HOLISTIC: 0.02}) == (
        0.7,
        0.02,
    )


# ------------------------------------------------------------------ calibration


window = st.lists(unit, min_size=8, max_size=40)


@given(unit, window, st.sampled_from(["zscore", "rank"]))
def test_calibration_in_unit_interval(raw, win, method):
    score, var = aggregate.calibrate(method, raw, win, variance=0.01)
    assert 0.0 <= score <= 1.0
    assert 0.0 <= var <= aggregate.MAX_VARIANCE


@given(unit, unit, window, st.sampled_from(["zscore", "rank"]))
def test_calibration_is_monotone(a, b, win, method):
    assume(a <= b)
    assert aggregate.calibrate(method, a, win)[0] <= aggregate.calibrate(method, b, win)[0]


@given(
    st.lists(st.floats(min_value=0.2, max_value=0.8), min_size=8, max_size=40),
    st.floats(min_value=-0.2, max_value=0.2),
    st.sampled_from(["zscore", "rank"]),
)
def test_calibration_removes_a_constant_offset(win, offset, method):
    assume(statistics.pstdev(win) > 1e-3)
    shifted = [x + offset for x in win]
    # Float rounding can merge two close values when both are shifted, which changes the
    # ranks; the claim is about an offset that keeps the window's order and its ties.
    pairs = list(zip(win, shifted, strict=True))
    assume(all((x < y) == (sx < sy) for x, sx in pairs for y, sy in pairs))
    for raw in win:
        a = aggregate.calibrate(method, raw, win)[0]
        b = aggregate.calibrate(method, raw + offset, shifted)[0]
        assert a == pytest.approx(b, abs=1e-6)


def test_calibration_needs_a_full_window():
    assert aggregate.calibrate("zscore", 0.3, [0.1, 0.9] * 3, variance=0.02) == (0.3, 0.02)
    assert aggregate.calibrate("none", 0.3, [0.1, 0.9] * 10) == (0.3, 0.0)
    # No spread: nothing to calibrate against.
    assert aggregate.calibrate("zscore", 0.5, [0.5] * 10) == (0.5, 0.0)
    z, _ = aggregate.calibrate("zscore", 0.5, [0.1, 0.9] * 10)
    assert z == pytest.approx(0.5)
    r, _ = aggregate.calibrate("rank", 0.9, [0.1, 0.9] * 10)
    assert r == pytest.approx(0.75)


def test_offset_judges_give_the_same_min_ranking_after_zscore():
    """Two judges differing by a constant offset rank items under `min` like either alone."""
    base = [0.15, 0.42, 0.33, 0.71, 0.58, 0.26, 0.64, 0.49, 0.37, 0.8]
    harsh = [s - 0.12 for s in base]

    def calibrated(scores: list[float]) -> list[float]:
        return [aggregate.calibrate("zscore", s, scores)[0] for s in scores]

    ca, cb = calibrated(base), calibrated(harsh)
    assert ca == pytest.approx(cb, abs=1e-9)  # the offset is gone
    both = [aggregate.combine("min", [a, b]) for a, b in zip(ca, cb, strict=True)]

    def ranking(values: list[float]) -> list[int]:
        return sorted(range(len(values)), key=lambda i: values[i])

    assert ranking(both) == ranking(ca) == ranking(cb) == ranking(base)


# ------------------------------------------------------------------ transforms


@given(st.floats(min_value=-2.0, max_value=3.0), st.integers(min_value=2, max_value=101))
def test_discretize_on_grid(reward, k):
    t = Transforms(discretize=k)
    out = aggregate.apply_transforms(reward, t)
    assert 0.0 <= out <= 1.0
    assert out * (k - 1) == pytest.approx(round(out * (k - 1)), abs=1e-9)


@given(st.floats(min_value=-2.0, max_value=3.0))
def test_always_clipped(reward):
    assert 0.0 <= aggregate.apply_transforms(reward, Transforms()) <= 1.0


def test_length_and_flag_penalties():
    t = Transforms(
        length_penalty=LengthPenalty(budget_tokens=10, per_token=0.01, max_penalty=0.2),
        flag_penalties={"injection_suspected": 0.5, "zero_width": 0.1},
    )
    assert aggregate.apply_transforms(0.9, t, completion_tokens=10) == pytest.approx(0.9)
    assert aggregate.apply_transforms(0.9, t, completion_tokens=15) == pytest.approx(0.85)
    assert aggregate.apply_transforms(0.9, t, completion_tokens=1000) == pytest.approx(0.7)
    assert aggregate.apply_transforms(
        0.9, t, flags=["injection_suspected", "other"]
    ) == pytest.approx(0.4)
    assert (
        aggregate.apply_transforms(0.5, t, completion_tokens=1000, flags=["injection_suspected"])
        == 0.0
    )
    assert aggregate.count_tokens("  a b\n c\t") == 3


@settings(max_examples=50)
@given(st.floats(min_value=0.0, max_value=1.0))
def test_discretize_two_levels(reward):
    assert aggregate.discretize(reward, 2) in (0.0, 1.0)
