"""The reward rows a batch assembles, and the judges behind each: decided once per batch
(:func:`~.cascade.decided_by`), carried by the batch's plan (:class:`~.batch_plan.BatchPlan`)
and read where rewards are assembled."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from rewardsvc.scoring.judging import JudgeLike, text_only


@dataclass(frozen=True)
class Rows:
    """The reward rows a batch's rewards assemble, decided once per batch: each row's
    name with the judges behind it (its own judge, or, for a cascade's one row, every
    stage's, any of which may have decided a criterion), and how many rows must score."""

    judges: dict[str, tuple[JudgeLike, ...]]
    min_judges: int

    @property
    def names(self) -> list[str]:
        """The rows' names, in the rubric's order."""
        return list(self.judges)

    @cached_property
    def blind(self) -> frozenset[str]:
        """The rows some judge of which reads text only: on an item with images, such a row
        says it was scored ``without_images``."""
        return frozenset(n for n, js in self.judges.items() if any(map(text_only, js)))
