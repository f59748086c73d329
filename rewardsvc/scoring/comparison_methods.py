"""The two ways of comparing a group, each a strategy that owns its behaviour: the orders a
group is shown in, which groups it cannot compare, and how one judge's answers become its
view of the group (``group_judges``). Callers ask ``GroupOptions.strategy``; nothing
branches on a method's name.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from rewardsvc.core import comparative as cmp
from rewardsvc.core.rubric import Rubric
from rewardsvc.scoring.group_judges import (
    Comparison,
    JudgeGroup,
    Scores,
    listwise_judge,
    pairwise_judge,
)

if TYPE_CHECKING:
    from rewardsvc.scoring.group_plan import GroupOptions

Method = Literal["listwise", "pairwise"]

JudgeView = Callable[[Rubric, int, list[Comparison], dict[str, bool], Scores], JudgeGroup]
"""(rubric, n, a judge's comparisons, which questions name the worst, absolute scores) ->
the judge's view of a group of ``n``."""

Shows = list[tuple[str, tuple[int, ...]]]
"""Each presentation of a group: its order's name and the completions shown, in order."""


class ComparisonMethod(ABC):
    """How a group of completions is compared; ``judge_view`` gives one judge's view of a
    group of ``n`` from its answered comparisons and the scores of the criteria asked of
    each completion alone."""

    def __init__(self, judge_view: JudgeView):
        self.judge_view = judge_view

    @abstractmethod
    def presentations(self, n: int, options: GroupOptions, rng: random.Random) -> Shows:
        """The presentations of a group of ``n`` completions."""

    def too_large(self, n: int, index: int) -> str | None:
        """Why a group of ``n`` completions (``groups[index]``) cannot be compared this
        way, or None."""
        return None


class Listwise(ComparisonMethod):
    """Every completion in one call, asked in ``options.orders`` presentation orders."""

    def presentations(self, n: int, options: GroupOptions, rng: random.Random) -> Shows:
        """Each listwise order (``order1``, ``order2``...)."""
        return [(f"order{k + 1}", o) for k, o in enumerate(cmp.plan_orders(n, options.orders, rng))]

    def too_large(self, n: int, index: int) -> str | None:
        """More completions than one call has labels for."""
        if n <= cmp.MAX_LISTWISE:
            return None
        return (
            f"groups[{index}].completions: {n} completions, more than {cmp.MAX_LISTWISE} for "
            "one listwise call; use method pairwise"
        )


class Pairwise(ComparisonMethod):
    """Each pair of the tournament, in both orders (``ab``, ``ba``)."""

    def presentations(self, n: int, options: GroupOptions, rng: random.Random) -> Shows:
        """Both orders of every pair the tournament plans."""
        shows: Shows = []
        for i, j in cmp.plan_pairs(n, options.tournament, rng, options.pairs):
            shows += [("ab", (i, j)), ("ba", (j, i))]
        return shows


COMPARISON_METHODS: dict[str, ComparisonMethod] = {
    "listwise": Listwise(listwise_judge),
    "pairwise": Pairwise(pairwise_judge),
}
