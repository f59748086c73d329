"""An engine's comparisons: ``/v1/groups`` and ``/v1/preferences`` planned and run by the
engine's own executor (its verdict cache, the expiry a drain sets, its observer, graders
and calibration windows), so that the server never reaches into the engine for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import Judge
from rewardsvc.scoring.cascade import refuse_comparisons
from rewardsvc.scoring.group_calls import GroupPlan
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import Comparing, GroupBatch, plan_groups, run_groups
from rewardsvc.scoring.preferences import (
    PreferenceBatch,
    PreferenceOptions,
    judge_preferences,
    plan_preferences,
)


@dataclass(frozen=True)
class Comparer:
    """Plans and runs comparisons with ``judges`` and what ``shared`` holds."""

    judges: Mapping[str, Judge]
    shared: Comparing

    def _with(self, deadline: float | None, run: str | None = None) -> Comparing:
        return Comparing(**self.shared, deadline=deadline, run=run)

    async def plan_groups(
        self,
        rubric: Rubric,
        groups: Sequence[GroupIn],
        options: GroupOptions,
        deadline: float | None,
    ) -> GroupPlan:
        """Every question of ``groups`` (its ``work`` is what admission weighs)."""
        refuse_comparisons(rubric)
        return await plan_groups(self.judges, rubric, groups, options, **self._with(deadline))

    async def score_groups(
        self,
        rubric: Rubric,
        groups: Sequence[GroupIn],
        options: GroupOptions,
        plan: GroupPlan,
        *,
        deadline: float | None,
        run: str | None,
    ) -> GroupBatch:
        """The rewards of ``groups`` by ``plan``, reported under ``run``."""
        comparing = self._with(deadline, run)
        return await run_groups(rubric, groups, options, plan, self.judges, **comparing)

    async def plan_preferences(
        self,
        rubric: Rubric,
        pairs: Sequence[GroupIn],
        options: PreferenceOptions,
        deadline: float | None,
    ) -> GroupPlan:
        """Every question of ``pairs``."""
        refuse_comparisons(rubric)
        return await plan_preferences(self.judges, rubric, pairs, options, **self._with(deadline))

    async def judge_preferences(
        self,
        rubric: Rubric,
        pairs: Sequence[GroupIn],
        options: PreferenceOptions,
        plan: GroupPlan,
        *,
        deadline: float | None,
        run: str | None,
    ) -> PreferenceBatch:
        """The verdicts on ``pairs`` by ``plan``, reported under ``run``."""
        comparing = self._with(deadline, run)
        return await judge_preferences(self.judges, rubric, pairs, options, plan, **comparing)
