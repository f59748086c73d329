"""Pure math of rewards: criteria -> judge score, judges -> reward, uncertainty, calibration.

No I/O, no asyncio, no state: every function takes what it needs as arguments, so the
rules can be property-tested and recomputed by anyone from a reward's breakdown.

Scales: every score here is in [0, 1]. A criterion's score is the judge's normalized
answer (binary: P(yes); likert: (E[v] - min) / (max - min)). For a pitfall, "yes" means
the pitfall is present, so its score is P(pitfall present) and its weight is negative.
For a constitution, a principle's score is compliance.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rewardsvc.core.rubric import Calibration, JudgeRule, Rubric
from rewardsvc.core.transforms import Transforms

HOLISTIC = "_holistic"
"""The key of a judge's single verdict on the whole item: an implicit rubric's holistic
call, or the score of a judge that is asked no criteria (a reward model)."""

MIN_CALIBRATION_COUNT = 8
"""Fewer scores than this in a judge's window: calibration returns the raw score."""

MAX_VARIANCE = 0.25
"""The largest variance a [0, 1]-valued variable can have (Popoviciu's inequality)."""

# Relative tolerance when a cumulative weight is compared with half the total weight
# (weighted median), so that float rounding does not decide between two answers.
_HALF_TOLERANCE = 1e-9


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


# --------------------------------------------------------------- criteria -> judge score


def judge_score(
    rubric: Rubric,
    scores: Mapping[str, float],
    variances: Mapping[str, float] | None = None,
) -> tuple[float, float]:
    """One judge's score in [0, 1] and its within-judge variance, from its criterion scores.

    ``scores`` maps criterion id -> score in [0, 1] (for ``combine: implicit`` the single
    entry ``HOLISTIC``); every criterion must be present, because a judge with a failed
    criterion contributes no score at all. ``variances`` (same keys, default 0) are the
    within-judge variances of the criterion scores.

    - explicit: ``Σ wᵢ sᵢ / Σ_{wᵢ>0} wᵢ`` clipped to [0, 1]; variance ``Σ (wᵢ/W)² varᵢ``
      (criteria treated as independent; the clip is not propagated).
    - worst: the lowest criterion score (a pitfall counts as ``1 - s``, its absence);
      the variance is that criterion's variance. Weights do not matter.
    - implicit, or a judge that scored the whole item (``HOLISTIC`` in ``scores``: a reward
      model, asked no criteria): that score and variance as they are; other entries (a
      rubric's grader criteria) do not enter it.

    Gates (explicit and worst): an essential criterion with ``gate: g`` that scores below
    ``g`` caps the judge score at its ``cap`` (the variance is left as propagated).
    """
    variances = variances or {}
    if rubric.implicit_combine or HOLISTIC in scores:
        if HOLISTIC not in scores:
            raise KeyError(f"missing holistic score {HOLISTIC!r}")
        return _clip01(scores[HOLISTIC]), max(0.0, variances.get(HOLISTIC, 0.0))

    missing = [c.id for c in rubric.criteria if c.id not in scores]
    if missing:
        raise KeyError(f"missing criterion scores: {missing}")

    if rubric.worst_combine:

        def compliance(cid: str, category: str) -> float:
            s = scores[cid]
            return 1.0 - s if category == "pitfall" else s

        worst = min(rubric.criteria, key=lambda c: compliance(c.id, c.category))
        score = _clip01(compliance(worst.id, worst.category))
        variance = max(0.0, variances.get(worst.id, 0.0))
    else:
        norm = sum(c.weight for c in rubric.criteria if c.weight > 0)
        total = sum(c.weight * scores[c.id] for c in rubric.criteria)
        score = _clip01(total / norm)
        variance = sum(
            (c.weight / norm) ** 2 * max(0.0, variances.get(c.id, 0.0)) for c in rubric.criteria
        )

    for c in rubric.criteria:
        if c.gate is not None and scores[c.id] < c.gate:
            score = min(score, c.cap)
    return score, min(variance, MAX_VARIANCE)


# --------------------------------------------------------------- judges -> reward


def _weights(scores: Sequence[float], weights: Sequence[float] | None) -> list[float]:
    if not scores:
        raise ValueError("no judge scores to combine")
    if weights is None:
        return [1.0] * len(scores)
    if len(weights) != len(scores):
        raise ValueError(f"{len(weights)} weights for {len(scores)} scores")
    if not all(math.isfinite(w) and w > 0 for w in weights):
        raise ValueError("judge weights must be positive and finite")
    return [float(w) for w in weights]


def weighted_mean(scores: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """``Σ wᵢ rᵢ / Σ wᵢ``, kept inside [min, max] despite float rounding."""
    w = _weights(scores, weights)
    mean = sum(wi * r for wi, r in zip(w, scores, strict=True)) / sum(w)
    return min(max(scores), max(min(scores), mean))


def weighted_variance(scores: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """Population variance across judges with normalized weights: ``Σ wᵢ (rᵢ - μ)² / Σ wᵢ``."""
    w = _weights(scores, weights)
    mean = weighted_mean(scores, w)
    return sum(wi * (r - mean) ** 2 for wi, r in zip(w, scores, strict=True)) / sum(w)


def weighted_median(scores: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """The score where the cumulative weight (sorted by score) first reaches half the total.

    When the cumulative weight lands exactly on half (within a relative 1e-9), the midpoint
    of that score and the next is returned, so that equal weights give the ordinary median.
    """
    w = _weights(scores, weights)
    pairs = sorted(zip(scores, w, strict=True))
    half = sum(w) / 2
    cum = 0.0
    for k, (r, wk) in enumerate(pairs):
        cum += wk
        if abs(cum - half) <= _HALF_TOLERANCE * half and k + 1 < len(pairs):
            return (r + pairs[k + 1][0]) / 2
        if cum >= half:
            return r
    return pairs[-1][0]  # unreachable: cum reaches the total


def softmin(
    scores: Sequence[float], weights: Sequence[float] | None = None, beta: float = 0.1
) -> float:
    """``-β log Σ wᵢ exp(-rᵢ/β) / Σ wᵢ``: between the min (β→0) and the weighted mean (β→∞).

    Computed shifted by the min so that small β does not underflow; clamped into
    [min, weighted mean], where it lies mathematically (Jensen), against float rounding.
    """
    if not beta > 0:
        raise ValueError("softmin beta must be > 0")
    w = _weights(scores, weights)
    low = min(scores)
    mass = sum(wi * math.exp(-(r - low) / beta) for wi, r in zip(w, scores, strict=True)) / sum(w)
    value = low - beta * math.log(mass)
    return min(weighted_mean(scores, w), max(low, value))


def combine(
    rule: JudgeRule,
    scores: Sequence[float],
    weights: Sequence[float] | None = None,
    *,
    lam: float = 0.5,
    beta: float = 0.1,
) -> float:
    """Combine judge scores (one per successful judge) into one reward.

    - ``mean``: weighted mean.
    - ``min``: the lowest score; weights are ignored (a weight says how much to trust a
      judge, and the worst case has no meaningful weighted form).
    - ``median``: weighted median (see ``weighted_median``); equal weights give the
      ordinary median.
    - ``uwo``: weighted mean − λ · weighted variance across judges, clamped into [min, max].
      For scores in [0, 1], Bhatia–Davis gives var ≤ (mean − min)(max − mean), so the clamp
      only binds when λ > 1 / (max − mean), never for λ ≤ 1; a larger λ would otherwise
      make the reward more pessimistic than the most pessimistic judge and could leave
      [0, 1], so the worst case (the min) is the floor.
    - ``softmin``: ``-β log Σ wᵢ exp(-rᵢ/β) / Σ wᵢ`` (see ``softmin``).

    Every rule's output lies in [min(scores), max(scores)], and every rule is invariant
    under multiplying all weights by the same positive constant.
    """
    w = _weights(scores, weights)
    low, high = min(scores), max(scores)
    if rule == "mean":
        value = weighted_mean(scores, w)
    elif rule == "min":
        value = low
    elif rule == "median":
        value = weighted_median(scores, w)
    elif rule == "uwo":
        if lam < 0:
            raise ValueError("uwo lambda must be >= 0")
        mean = weighted_mean(scores, w)
        value = min(mean, mean - lam * weighted_variance(scores, w))
    elif rule == "softmin":
        value = softmin(scores, w, beta)
    else:
        raise ValueError(f"unknown aggregation rule {rule!r}")
    return min(high, max(low, value))


def uncertainty(
    scores: Sequence[float],
    variances: Sequence[float],
    weights: Sequence[float] | None = None,
) -> float:
    """``√(variance between judges + mean variance within judges)``, both weighted alike."""
    w = _weights(scores, weights)
    if len(variances) != len(scores):
        raise ValueError(f"{len(variances)} variances for {len(scores)} scores")
    between = weighted_variance(scores, w)
    within = sum(wi * max(0.0, v) for wi, v in zip(w, variances, strict=True)) / sum(w)
    return math.sqrt(max(0.0, between + within))


# --------------------------------------------------------------- per-judge calibration


def normal_cdf(z: float) -> float:
    """Φ(z), the standard normal CDF."""
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


@dataclass(frozen=True)
class WindowStats:
    """What calibration needs of a window of raw scores, computed once per batch."""

    count: int
    mean: float
    sd: float
    ordered: tuple[float, ...]

    @classmethod
    def of(cls, window: Iterable[float]) -> WindowStats:
        """Population mean, population sd and the sorted values of ``window``."""
        ordered = tuple(sorted(window))
        if not ordered:
            return cls(0, 0.0, 0.0, ())
        mean = math.fsum(ordered) / len(ordered)
        var = math.fsum((x - mean) ** 2 for x in ordered) / len(ordered)
        return cls(len(ordered), mean, math.sqrt(var), ordered)


def calibrate(
    method: Calibration,
    raw: float,
    window: Sequence[float] | WindowStats,
    *,
    variance: float = 0.0,
    min_count: int = MIN_CALIBRATION_COUNT,
) -> tuple[float, float]:
    """Map one judge's raw score onto a common scale, using that judge's recent raw scores.

    - ``none``: the raw score.
    - ``zscore``: ``Φ((raw - mean) / sd)`` over the window, in [0, 1].
    - ``rank``: the empirical percentile of raw in the window (mid-rank for ties).

    Both remove a judge's constant offset (and zscore any affine distortion), so that a
    harsh judge does not dominate ``min``. With fewer than ``min_count`` scores in the
    window, or a window without spread (sd < 1e-9), the raw score is returned unchanged.
    ``window`` may be given as ``WindowStats`` to calibrate many scores against one window.

    Returns ``(score, variance)``; the variance is carried through the map by the delta
    method with the slope ``φ(z) / sd`` (for ``rank`` too, as the smooth estimate of the
    empirical CDF's slope), capped at 0.25.
    """
    if method == "none":
        return raw, variance
    stats = window if isinstance(window, WindowStats) else WindowStats.of(window)
    if stats.count < min_count or stats.sd < 1e-9:
        return raw, variance
    z = (raw - stats.mean) / stats.sd
    slope = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi) / stats.sd
    cal_var = min(MAX_VARIANCE, max(0.0, variance) * slope * slope)
    if method == "zscore":
        return _clip01(normal_cdf(z)), cal_var
    if method == "rank":
        below = bisect.bisect_left(stats.ordered, raw)
        equal = bisect.bisect_right(stats.ordered, raw) - below
        return (below + 0.5 * equal) / stats.count, cal_var
    raise ValueError(f"unknown calibration {method!r}")


# --------------------------------------------------------------- transforms


def count_tokens(text: str) -> int:
    """Whitespace tokens: a tokenizer-free length that every client can reproduce."""
    return len(text.split())


def discretize(reward: float, levels: int) -> float:
    """Round a reward in [0, 1] to the nearest of ``levels`` evenly spaced values."""
    if levels < 2:
        raise ValueError("discretize needs at least 2 levels")
    step = levels - 1
    return round(_clip01(reward) * step) / step


def apply_transforms(
    reward: float,
    transforms: Transforms,
    *,
    completion_tokens: int = 0,
    flags: Iterable[str] = (),
) -> float:
    """Post-process an aggregated reward: penalties, then clip to [0, 1], then discretize.

    - length penalty: ``min(max_penalty, per_token * max(0, tokens - budget_tokens))``;
    - flag penalties: the sum of the penalties of the flags raised (each flag once);
    - the result is always clipped to [0, 1]; ``discretize: k`` then rounds to k levels.
    """
    value = reward
    lp = transforms.length_penalty
    if lp is not None:
        over = max(0, completion_tokens - lp.budget_tokens)
        value -= min(lp.max_penalty, lp.per_token * over)
    for flag in set(flags):
        value -= transforms.flag_penalties.get(flag, 0.0)
    value = _clip01(value)
    if transforms.discretize is not None:
        value = discretize(value, transforms.discretize)
    return value
