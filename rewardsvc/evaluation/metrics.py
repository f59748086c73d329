"""Agreement of rewards with labels: pure functions, no I/O.

Pointwise (a reward per completion, a label per completion): labels in [0, 1]; a label
counts as positive when it is at least 0.5.

- ``accuracy``: share of rows where ``reward >= 0.5`` equals the positive label;
- ``roc_auc``: P(reward of a random positive > reward of a random negative), ties half
  (the Mann–Whitney form); None with only one class;
- ``best_kappa``: Cohen's κ of ``reward >= t`` against the labels at the threshold ``t``
  (a midpoint between observed rewards) that maximizes it;
- ``calibration_error``: expected calibration error over ``bins`` equal-width bins,
  ``Σ_b (n_b / N) |mean reward_b − mean label_b|``.

Pairs: ``pairwise_accuracy`` is the share of pairs where the chosen completion wins
(``p_chosen > 0.5``; exactly 0.5 counts half).

``bootstrap`` gives a percentile confidence interval by resampling rows with replacement
(seeded: the same data give the same interval).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence

from rewardsvc.monitor.stats import ranks

Metric = Callable[[Sequence[float], Sequence[float]], float | None]


def positive(label: float) -> bool:
    """A label in [0, 1] counts as positive at 0.5 and above."""
    return label >= 0.5


def accuracy(rewards: Sequence[float], labels: Sequence[float], threshold: float = 0.5) -> float:
    """Share of rows where ``reward >= threshold`` agrees with the label's class."""
    if not rewards:
        raise ValueError("no rows")
    hits = sum((r >= threshold) == positive(y) for r, y in zip(rewards, labels, strict=True))
    return hits / len(rewards)


def roc_auc(rewards: Sequence[float], labels: Sequence[float]) -> float | None:
    """Area under the ROC curve by ranks (ties share their mean rank); None for one class."""
    pos = sum(positive(y) for y in labels)
    neg = len(labels) - pos
    if pos == 0 or neg == 0:
        return None
    rank_sum = sum(r for r, y in zip(ranks(rewards), labels, strict=True) if positive(y))
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)


def cohen_kappa(predicted: Sequence[bool], actual: Sequence[bool]) -> float:
    """Cohen's κ of two binary raters (0 when chance agreement is total)."""
    n = len(predicted)
    if n == 0:
        raise ValueError("no rows")
    observed = sum(p == a for p, a in zip(predicted, actual, strict=True)) / n
    p_yes = sum(predicted) / n
    a_yes = sum(actual) / n
    chance = p_yes * a_yes + (1 - p_yes) * (1 - a_yes)
    if chance >= 1.0:
        return 1.0 if observed >= 1.0 else 0.0
    return (observed - chance) / (1 - chance)


def best_kappa(rewards: Sequence[float], labels: Sequence[float]) -> tuple[float, float]:
    """``(κ, threshold)`` at the threshold between observed rewards that maximizes κ."""
    actual = [positive(y) for y in labels]
    values = sorted(set(rewards))
    cuts = [values[0] - 1e-9] + [(a + b) / 2 for a, b in itertools.pairwise(values)]
    best = (-2.0, 0.5)
    for t in cuts:
        k = cohen_kappa([r >= t for r in rewards], actual)
        if k > best[0]:
            best = (k, t)
    return best


def calibration_error(rewards: Sequence[float], labels: Sequence[float], bins: int = 10) -> float:
    """Expected calibration error of rewards read as probabilities of the label."""
    if not rewards:
        raise ValueError("no rows")
    sums: dict[int, list[float]] = {}
    for r, y in zip(rewards, labels, strict=True):
        b = min(bins - 1, max(0, int(r * bins)))
        acc = sums.setdefault(b, [0.0, 0.0, 0.0])
        acc[0] += 1
        acc[1] += r
        acc[2] += y
    n = len(rewards)
    return sum(c / n * abs(s / c - t / c) for c, s, t in sums.values())


def pairwise_accuracy(p_chosen: Sequence[float]) -> float:
    """Share of pairs the chosen completion wins (``p > 0.5``; 0.5 counts half)."""
    if not p_chosen:
        raise ValueError("no pairs")
    return sum(1.0 if p > 0.5 else 0.5 if p == 0.5 else 0.0 for p in p_chosen) / len(p_chosen)


def bootstrap(
    metric: Metric,
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile interval of ``metric(xs, ys)`` over resampled rows; None when the metric
    is undefined on most resamples."""
    rng = random.Random(seed)
    n = len(xs)
    values = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        value = metric([xs[i] for i in idx], [ys[i] for i in idx])
        if value is not None:
            values.append(value)
    if len(values) < resamples / 2:
        return None
    values.sort()
    tail = (1 - level) / 2
    lo = values[int(tail * (len(values) - 1))]
    hi = values[round((1 - tail) * (len(values) - 1))]
    return lo, hi
