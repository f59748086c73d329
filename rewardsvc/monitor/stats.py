"""Small statistics over windows of samples: moments, quantiles, rank correlation, KS.

Pure Python on purpose (windows hold a few hundred samples; no numpy dependency).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import repeat
from operator import mul, sub, truediv


def mean(xs: Sequence[float]) -> float | None:
    """The arithmetic mean, or None for no samples."""
    return sum(xs) / len(xs) if xs else None


def sd(xs: Sequence[float]) -> float | None:
    """The population standard deviation, or None for no samples."""
    if not xs:
        return None
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def quantile(sorted_xs: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile of already sorted samples, linearly interpolated."""
    if not sorted_xs:
        return None
    pos = q * (len(sorted_xs) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(sorted_xs) - 1)
    return sorted_xs[low] + (sorted_xs[high] - sorted_xs[low]) * (pos - low)


def ranks(xs: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    n = len(xs)
    order = sorted(range(n), key=xs.__getitem__)
    ordered = list(map(xs.__getitem__, order))
    out = [0.0] * n
    start = 0
    # Each run of equal values, ordered[start:end], shares the mean of ranks start+1..end.
    for end in range(1, n + 1):
        if end == n or ordered[end] != ordered[start]:
            rank = (start + end + 1) / 2
            for k in order[start:end]:
                out[k] = rank
            start = end
    return out


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson correlation, or None when either side is constant or too short."""
    n = len(xs)
    if n < 3 or n != len(ys):
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    # The deviations once each (not once per sum), their products summed by map in C.
    dx = [x - mx for x in xs]
    dy = [y - my for y in ys]
    sxy: float = sum(map(mul, dx, dy))
    sxx = sum(d**2 for d in dx)
    syy = sum(d**2 for d in dy)
    if sxx <= 0 or syy <= 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman rank correlation (Pearson on tie-averaged ranks)."""
    n = len(xs)
    if n < 3 or n != len(ys):
        return None
    # :func:`pearson` of the ranks, bit for bit: ranks are halves of integers summing to
    # n (n + 1) / 2, so their mean is (n + 1) / 2 and every deviation, square, product and
    # sum below is exact; a square taken as ``d * d`` is then ``d**2`` (which libm's pow
    # rounds apart from a product for some other floats), at less than half its cost.
    middle = (n + 1) / 2
    dx = list(map(sub, ranks(xs), repeat(middle)))
    dy = list(map(sub, ranks(ys), repeat(middle)))
    sxx: float = sum(map(mul, dx, dx))
    syy: float = sum(map(mul, dy, dy))
    if sxx <= 0 or syy <= 0:
        return None
    sxy: float = sum(map(mul, dx, dy))
    return sxy / math.sqrt(sxx * syy)


def ks_statistic(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The two-sample Kolmogorov–Smirnov statistic: the largest gap between the two
    empirical distribution functions (0 identical, 1 disjoint)."""
    return ks_sorted(sorted(a), sorted(b))


def ks_sorted(xa: list[float], xb: list[float]) -> float | None:
    """:func:`ks_statistic` of two samples already sorted (a run's baseline is sorted once,
    not at every evaluation); None when either is empty."""
    if not xa or not xb:
        return None
    # F_a - F_b rises only at samples of a and falls only at samples of b: its highest
    # point is at a sample of a, its lowest at a sample of b.
    return max(_highest_gap(xa, xb), _highest_gap(xb, xa))


def _highest_gap(xs: list[float], ys: list[float]) -> float:
    """The largest ``F_xs(x) - F_ys(x)`` over the samples ``x`` of ``xs`` (both sorted).

    At the k-th sample F_xs is k/n, except within a run of equal samples, where only the
    last position counts them all (the others fall short of it, so never win the max).
    Evaluated with ``map`` rather than a loop: a window and a baseline hold hundreds of
    samples, and the monitor evaluates every few items.

    When ``xs`` is the longer side (a baseline against a window), only the last sample of
    ``xs`` below each sample of ``ys`` can win (F_ys is flat in between, F_xs rises), so
    the same maximum is found with one search per sample of ``ys`` instead of ``xs``.
    """
    n, m = len(xs), len(ys)
    if n <= m + 1:
        own = map(truediv, range(1, n + 1), repeat(n))
        other = map(truediv, map(bisect_right, repeat(ys), xs), repeat(m))
        gap: float = max(map(sub, own, other))
        return gap
    # k samples of xs lie below ys[j], the last of them with (at most) j samples of ys at
    # or below it; every sample of xs is the last below some ys[j] or is among the top.
    below = [*map(bisect_left, repeat(xs), ys), n]
    return max(k / n - j / m for j, k in enumerate(below) if k)
