"""What a target plans for one batch, before the request is admitted, and how it runs.

A :class:`TargetPlan` holds the engine's plans of the batch (one per rubric it is judged
with) and their :attr:`~TargetPlan.cost`: the judge calls and prompt bytes admission
weighs. Once admitted, :meth:`TargetPlan.run` runs that same plan (no judge is asked
before). One class per kind of target: a rubric's (:class:`RubricPlan`), a recipe's
(:class:`RecipePlan`), a routing table's (``routed.RoutedPlan``).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rewardsvc.core.recipe import Recipe
from rewardsvc.core.results import Usage, without_reasoning
from rewardsvc.core.rollout import ItemIn
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders.registry import Graders
from rewardsvc.judges.explain import explain
from rewardsvc.protocol.rewards import RewardResult
from rewardsvc.scoring.batch_plan import BatchPlan
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.planning import Cost
from rewardsvc.scoring.recipe_plan import ComponentPlans
from rewardsvc.scoring.recipes import RecipeRunner

from .wire import recipe_result, reward_result

Scored = tuple[list[RewardResult], Usage]


class TargetPlan(ABC):
    """A batch planned by its target: what it costs, and how it runs once admitted."""

    @property
    @abstractmethod
    def cost(self) -> Cost:
        """The judge calls it makes and the prompt bytes they carry at most."""

    @abstractmethod
    async def run(self, deadline: float | None) -> Scored:
        """The wire results of the batch (once), and the work it took."""


@dataclass
class RubricPlan(TargetPlan):
    """The engine's plan of a batch with one rubric (items with their own included)."""

    engine: Engine
    plan: BatchPlan
    positions: Sequence[int]
    """Each item's position in the request (a routed part's are not its own)."""
    explain: bool = False

    @property
    def cost(self) -> Cost:
        """The engine plan's cost."""
        return self.plan.cost

    async def run(self, deadline: float | None) -> Scored:
        """The engine's batch, with what each judge read when ``explain`` is asked."""
        result = await self.engine.run(self.plan, deadline)
        # A reasoning judge's thinking is returned only to options.explain.
        items = result.items if self.explain else [without_reasoning(r) for r in result.items]
        results = [reward_result(r, n) for r, n in zip(items, self.positions, strict=True)]
        if self.explain:
            results = await self._explained(results)
        return results, result.usage

    async def _explained(self, results: list[RewardResult]) -> list[RewardResult]:
        """``results`` with what each judge read (rendered again by the same pure builders,
        no judge call; off the event loop, since long items take a while to render)."""
        rubric, inputs = self.plan.rubric, self.plan.items
        names = self.plan.options.judges or tuple(j.name for j in rubric.judges)
        judges = {n: self.engine.judges[n] for n in names}
        configs = {n: j.config for n, j in judges.items() if hasattr(j, "config")}

        def render() -> list[RewardResult]:
            return [
                result
                if item.rollout is None
                else result.model_copy(
                    update={"explain": explain(item.rubric or rubric, item.rollout, configs)}
                )
                for item, result in zip(inputs, results, strict=True)
            ]

        return await asyncio.to_thread(render)


@dataclass
class RecipePlan(TargetPlan):
    """A recipe's batch: each judged component's engine plan (graders make no judge call)."""

    graders: Graders
    recipe: Recipe
    components: Mapping[str, Rubric]
    inputs: list[ItemIn]
    plans: ComponentPlans
    positions: Sequence[int]
    """Each item's position in the request (a routed part's are not its own)."""

    @property
    def cost(self) -> Cost:
        """Every judged component's calls, as if no gate decided an item."""
        return self.plans.cost

    async def run(self, deadline: float | None) -> Scored:
        """The recipe runner's batch (graders first, gates, then judged components)."""
        self.plans.deadline = deadline
        runner = RecipeRunner(self.plans, self.graders, deadline)
        result = await runner.run(self.recipe, self.components, self.inputs)
        self.plans.observe(self.recipe, result, self.inputs)
        at = zip(result.items, self.positions, strict=True)
        return [recipe_result(r, n) for r, n in at], result.usage
