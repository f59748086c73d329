"""Fitting a cascade's bands on labelled items, offline: the sweep behind
``rewardsvc cascade calibrate``. Pure: no I/O.

Every item was scored once by every stage (:class:`Scored`: each stage's answer on each
criterion, the mean over an ensemble stage's judges). A band ``[lo, hi]`` on a stage
replays the cascade without a judge call: a criterion whose answer lies in the band takes
the next stage's answer. For each band of a grid, :func:`sweep` measures

- the **escalation share**: the stage's questions the band passes on;
- the **disagreement** with the last stage alone: the share of items whose reward, cut at
  ``threshold``, differs from the reward of the last stage answering every criterion;
- the **accuracy** against the labels (cut at ``threshold`` both).

Stages are fitted from the one before the last backwards, each with the bands already
fitted after it. :func:`pick` chooses a band for a target: the lowest escalation share
whose disagreement is at most ``max_disagreement``, or the lowest disagreement whose
escalation share is at most ``max_escalation``.

A disagreement target is met by the band's **upper 95 % bound** (Wilson's score interval
over the items), not by its share on the fit items alone: a band whose edge lies inside a
cheap judge's narrow range of probabilities can meet 2 % on 150 fit items by luck and
disagree on 20 % of the next 150 (measured, ``bench/results/cascade-qwen-short-answers.md``).
So a small labelled file fits a saving only when its evidence is strong: with no
disagreement at all, 150 items bound it at 2.5 %, 400 items at 0.95 %. A band that passes
every question on adds no disagreement of its own and is bounded by its share.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

Reward = Callable[[Mapping[str, float]], float]
"""A rubric's reward from its criteria's scores (``aggregate.judge_score`` bound to it)."""


@dataclass(frozen=True)
class Scored:
    """One labelled item as every stage answered it: ``stages[k][criterion]`` (a question
    a stage failed is missing)."""

    label: float
    stages: tuple[Mapping[str, float], ...]


@dataclass(frozen=True)
class Point:
    """One band of one stage and what it gives."""

    stage: int  # 1 the first
    lo: float
    hi: float
    escalation: float
    disagreement: float
    accuracy: float
    disagreement_bound: float  # upper 95 % bound of the disagreement (module docstring)


def grid(step: float = 0.025) -> list[tuple[float, float]]:
    """Bands ``[lo, hi]`` with ``lo <= 0.5 <= hi`` on a grid of ``step``."""
    count = round(0.5 / step)
    lows = [round(k * step, 6) for k in range(count + 1)]
    highs = [round(0.5 + k * step, 6) for k in range(count + 1)]
    return [(lo, hi) for lo in lows for hi in highs]


def replay(
    item: Scored, bands: Sequence[tuple[float, float] | None], at: int = 0
) -> tuple[dict[str, float], int, int]:
    """The cascade's answers on ``item`` with ``bands`` (one per stage but the last; None
    passes everything on), and the questions stage ``at`` (0 the first) answered and
    passed on."""
    last = len(item.stages) - 1
    decided: dict[str, float] = {}
    asked = escalated = 0
    for criterion in item.stages[0].keys() | item.stages[-1].keys():
        for k, answers in enumerate(item.stages):
            score = answers.get(criterion)
            if k == last or score is None:  # decided here: the last stage, or a failure
                if score is not None:
                    decided[criterion] = score
                break
            band = bands[k]
            goes_on = band is None or band[0] <= score <= band[1]
            if k == at:
                asked, escalated = asked + 1, escalated + goes_on
            if not goes_on:
                decided[criterion] = score
                break
    return decided, asked, escalated


def measure(
    items: Sequence[Scored],
    bands: Sequence[tuple[float, float] | None],
    reward: Reward,
    threshold: float,
    at: int,
) -> Point:
    """The escalation share of stage ``at`` (0 the first), the disagreement with the last
    stage alone and the accuracy against the labels of the cascade with ``bands``."""
    asked = escalated = differ = right = 0
    for item in items:
        decided, a, e = replay(item, bands, at)
        asked, escalated = asked + a, escalated + e
        mine = reward(decided) >= threshold
        differ += mine != (reward(item.stages[-1]) >= threshold)
        right += mine == (item.label >= threshold)
    band = bands[at] or (0.0, 1.0)
    n = max(1, len(items))
    bound = differ / n if escalated == asked else wilson_upper(differ, n)
    return Point(at + 1, band[0], band[1], escalated / max(1, asked), differ / n, right / n, bound)


def wilson_upper(successes: int, n: int, z: float = 1.96) -> float:
    """The upper end of Wilson's score interval for a share of ``successes`` in ``n``
    (two-sided, 95 % at the default ``z``); it stays inside [0, 1] and above 0 when none
    of ``n`` is seen, unlike the normal approximation."""
    share, z2 = successes / n, z * z
    centre = share + z2 / (2 * n)
    spread = z * math.sqrt(share * (1 - share) / n + z2 / (4 * n * n))
    return min(1.0, (centre + spread) / (1 + z2 / n))


def pick(
    curve: Sequence[Point],
    max_disagreement: float | None = None,
    max_escalation: float | None = None,
) -> Point | None:
    """The band of ``curve`` meeting the target (see the module docstring); None when no
    band does. Ties go to the more accurate, then the wider band (the safer)."""
    if max_escalation is not None:
        ok = [p for p in curve if p.escalation <= max_escalation]
        return min(ok, key=lambda p: (p.disagreement, -p.accuracy, p.lo - p.hi), default=None)
    limit = 0.02 if max_disagreement is None else max_disagreement
    ok = [p for p in curve if p.disagreement_bound <= limit]
    return min(ok, key=lambda p: (p.escalation, -p.accuracy, p.lo - p.hi), default=None)


def fit(
    items: Sequence[Scored],
    reward: Reward,
    threshold: float = 0.5,
    step: float = 0.025,
    max_disagreement: float | None = None,
    max_escalation: float | None = None,
) -> tuple[list[Point | None], list[list[Point]]]:
    """Each non-last stage's chosen band (None where no band meets the target) and its
    curve, fitted from the stage before the last backwards (the stages before the one
    fitted pass everything on; those after it keep their fitted bands)."""
    stages = len(items[0].stages) if items else 0
    bands: list[tuple[float, float] | None] = [None] * max(0, stages - 1)
    chosen: list[Point | None] = [None] * len(bands)
    curves: list[list[Point]] = [[] for _ in bands]
    for k in reversed(range(len(bands))):
        for band in grid(step):
            bands[k] = band
            curves[k].append(measure(items, bands, reward, threshold, k))
        best = chosen[k] = pick(curves[k], max_disagreement, max_escalation)
        bands[k] = None if best is None else (best.lo, best.hi)
    return chosen, curves
