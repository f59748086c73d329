"""One judge's view of a group: its comparisons turned into win rates and a reward.

Listwise: per criterion, each order's label probabilities are mapped back to the
completions, averaged over the orders, and turned into win rates
(``core.comparative.listwise_win_rates``); the orders are compared for consistency.
Pairwise: per criterion, every answered order of every pair is one soft outcome of a
Bradley–Terry fit (``core.comparative.bradley_terry``), whose win rates are the result;
a pair is consistent when its two orders agree. The criteria then combine
(:func:`combine_criteria`). Each presentation order alone (``order1``, ``ab`` ...) gives
its own reward too; their variance is the judge's within-judge variance (position noise).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rewardsvc.core import comparative as cmp
from rewardsvc.core.errors import JudgeErrorKind
from rewardsvc.core.rubric import Rubric


@dataclass
class Comparison:
    """One judge call: the completions shown (input indices, in shown order), the criterion,
    and P(each shown label), or the failure."""

    criterion: str
    shown: tuple[int, ...]
    order: str
    p: list[float] | None = None
    error: str | None = None
    error_kind: JudgeErrorKind | None = None


@dataclass
class JudgeGroup:
    """One judge's view of a group: rewards, per-criterion win rates (or scores, for the
    criteria asked of each completion alone), every call."""

    rewards: list[float] | None
    variances: list[float] | None = None
    position_consistency: float | None = None
    criteria: dict[str, list[float]] = field(default_factory=dict)
    comparisons: list[Comparison] = field(default_factory=list)
    absolute: dict[str, list[float]] = field(default_factory=dict)
    """The scores of the criteria asked of each completion alone (graders, gates)."""
    error: str | None = None
    error_kind: JudgeErrorKind | None = None
    """The kind of the first failure ``error`` lists (None when the judge has its view)."""
    agree: int = 0
    compared: int = 0
    without_images: bool = False
    """The group carries images and this judge reads text only (placeholders instead)."""


Scores = Mapping[str, Sequence[float]]
"""Criterion id -> one value per completion of the group."""


def combine_criteria(
    rubric: Rubric, per_criterion: Scores, absolute: Scores | None = None
) -> list[float]:
    """Per-completion judge score from per-criterion win rates: weighted by ``|weight|``
    (a pitfall's win rate already points the right way), or the lowest for ``worst``.

    ``absolute`` holds the criteria not compared, scored on each completion alone (a
    grader's, or an essential gate's question asked per completion): a pitfall's score
    counts as its absence (``1 - s``) and joins the others by its ``|weight|``; a
    completion below an essential criterion's ``gate`` has its score capped at its ``cap``,
    as ``core.aggregate.judge_score`` caps a judge score for ``/v1/rewards``."""
    absolute = absolute or {}
    by_id = {c.id: c for c in rubric.criteria}
    merged = dict(per_criterion)
    for k, raw in absolute.items():
        merged[k] = [1.0 - s for s in raw] if by_id[k].category == "pitfall" else list(raw)
    keys = list(merged)
    n = len(merged[keys[0]])
    if rubric.worst_combine:
        scores = [min(merged[k][i] for k in keys) for i in range(n)]
    else:
        w = [abs(by_id[k].weight) if k in by_id else 1.0 for k in keys]
        scores = [
            sum(wk * merged[k][i] for wk, k in zip(w, keys, strict=True)) / sum(w) for i in range(n)
        ]
    for c in rubric.criteria:
        if c.gate is not None and c.id in absolute:
            gated = absolute[c.id]
            scores = [min(s, c.cap) if gated[i] < c.gate else s for i, s in enumerate(scores)]
    return scores


def listwise_judge(
    rubric: Rubric, n: int, comps: list[Comparison], worst: dict[str, bool], absolute: Scores
) -> JudgeGroup:
    """A judge's listwise result for a group of ``n`` from its answered comparisons;
    ``worst`` says per criterion whether the question named the worst response."""
    pooled: dict[str, list[float]] = {}
    views: dict[str, dict[str, list[float]]] = {}
    agree = compared = 0
    for key in dict.fromkeys(c.criterion for c in comps):
        per_order = []
        for c in comps:
            if c.criterion != key or c.p is None:
                continue
            p = [0.0] * n
            for pos, idx in enumerate(c.shown):
                p[idx] = c.p[pos]
            per_order.append(p)
            views.setdefault(c.order, {})[key] = cmp.listwise_win_rates(p, not worst[key])
        mean = [sum(p[i] for p in per_order) / len(per_order) for i in range(n)]
        pooled[key] = cmp.listwise_win_rates(mean, not worst[key])
        a, t = cmp.order_agreement(per_order)
        agree, compared = agree + a, compared + t
    return _judge_result(rubric, pooled, views, comps, agree, compared, absolute)


def pairwise_judge(
    rubric: Rubric, n: int, comps: list[Comparison], worst: dict[str, bool], absolute: Scores
) -> JudgeGroup:
    """A judge's pairwise result for a group of ``n`` from its answered comparisons."""
    pooled: dict[str, list[float]] = {}
    views: dict[str, dict[str, list[float]]] = {}
    agree = compared = 0
    for key in dict.fromkeys(c.criterion for c in comps):
        by_order: dict[str, list[tuple[int, int, float]]] = {"ab": [], "ba": []}
        for c in comps:
            if c.criterion != key or c.p is None:
                continue
            first, second = c.shown
            p_first = c.p[0] if not worst[key] else c.p[1]
            i, j = (first, second) if c.order == "ab" else (second, first)
            by_order[c.order].append((i, j, p_first if c.order == "ab" else 1.0 - p_first))
        both = by_order["ab"] + by_order["ba"]
        pooled[key] = cmp.win_rates(cmp.bradley_terry(n, both))
        for order, outcomes in by_order.items():
            views.setdefault(order, {})[key] = cmp.win_rates(cmp.bradley_terry(n, outcomes))
        swapped = {(i, j): p for i, j, p in by_order["ba"]}
        for i, j, p in by_order["ab"]:
            if (i, j) in swapped:
                compared += 1
                agree += cmp.consistent(p, swapped[(i, j)])
    return _judge_result(rubric, pooled, views, comps, agree, compared, absolute)


def _judge_result(
    rubric: Rubric,
    pooled: dict[str, list[float]],
    views: dict[str, dict[str, list[float]]],
    comps: list[Comparison],
    agree: int,
    compared: int,
    absolute: Scores,
) -> JudgeGroup:
    rewards = combine_criteria(rubric, pooled, absolute)
    complete = [v for v in views.values() if len(v) == len(pooled)]
    per_view = [combine_criteria(rubric, v, absolute) for v in complete] or [rewards]
    variances = [cmp.population_variance([v[i] for v in per_view]) for i in range(len(rewards))]
    return JudgeGroup(
        rewards=rewards,
        variances=variances,
        position_consistency=agree / compared if compared else None,
        criteria=pooled | {k: list(v) for k, v in absolute.items()},
        comparisons=comps,
        absolute={k: list(v) for k, v in absolute.items()},
        agree=agree,
        compared=compared,
    )
