"""A recipe's plan: the engine's plan of each judged component over the batch.

Admission weighs :attr:`ComponentPlans.cost`: every judged component's calls on every item
the recipe reads (graders make no judge call), as if no gate decided an item. The runner
(:class:`~.recipes.RecipeRunner`) then judges each component on the items still open,
running that part of the component's plan, and counts the calls the plan held for the
others as ``judge_calls_skipped``: the calls made, served and skipped add up to the calls
admitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rewardsvc.core.code_spec import sandbox_seconds
from rewardsvc.core.recipe import Component, Recipe, RecipeResult
from rewardsvc.core.results import BatchResult, ItemReward
from rewardsvc.core.rollout import ItemIn, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.scoring.batch_plan import BatchPlan
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.planning import Cost


def needs_reference(component: Component, rubrics: Mapping[str, Rubric]) -> bool:
    """Whether ``component`` (its grader, or its rubric) needs an item's reference."""
    if component.grader is not None:
        return component.grader.needs_reference
    return rubrics[component.id].requires_reference


def read_by(recipe: Recipe, rubrics: Mapping[str, Rubric], item: ItemIn) -> bool:
    """Whether the recipe reads ``item`` (else it is rejected before any component)."""
    rollout = item.rollout
    if rollout is None:
        return False
    return rollout.reference is not None or not any(
        needs_reference(c, rubrics) for c in recipe.components
    )


@dataclass
class ComponentPlans:
    """The engine's plan of each judged component of ``recipe`` over one batch, run by
    ``deadline`` (set once admitted)."""

    engine: Engine
    plans: dict[str, BatchPlan]
    deadline: float | None = None
    label: str | None = None
    """The batch's label in metrics (None: the recipe's id)."""
    run: str | None = None
    """The training run the batch belongs to (``options.run``)."""
    graded: Cost = field(default_factory=Cost)
    """What the grader components cost on the items read (sandbox seconds)."""

    @classmethod
    async def of(
        cls,
        engine: Engine,
        recipe: Recipe,
        rubrics: Mapping[str, Rubric],
        batch: Sequence[ItemIn],
        options: ScoreOptions | None = None,
        metrics_label: str | None = None,
    ) -> ComponentPlans:
        """Each judged component planned over the items of ``batch`` the recipe reads (the
        others plan nothing)."""
        read = [
            item if read_by(recipe, rubrics, item) else ItemIn(item.id, None, "not read")
            for item in batch
        ]
        plans = {
            c.id: await engine.plan(rubrics[c.id], read, options, metrics_label)
            for c in recipe.components
            if c.grader is None
        }
        seconds = sum(
            sandbox_seconds(c.grader, item.rollout.reference)
            for c in recipe.components
            if c.grader is not None
            for item in read
            if item.rollout is not None
        )
        return cls(
            engine,
            plans,
            label=metrics_label,
            run=options.run if options else None,
            graded=Cost(sandbox_s=seconds),
        )

    @property
    def cost(self) -> Cost:
        """What every judged component costs on every item read, and what the grader
        components cost in sandbox time."""
        return sum((p.cost for p in self.plans.values()), self.graded)

    async def score(self, component: str, positions: list[int]) -> BatchResult:
        """Component ``component``'s plan run on the items at ``positions``."""
        return await self.engine.run(self.plans[component].only(positions), self.deadline)

    def planned(self, component: str, position: int) -> int:
        """The calls component ``component`` planned for the item at ``position``."""
        return self.plans[component].item_costs[position].calls

    def observe(self, recipe: Recipe, result: RecipeResult, batch: Sequence[ItemIn]) -> None:
        """Report the recipe's rewards of ``batch`` to the engine's observer (metrics, the
        monitor) under the recipe's id, when it has graders: with the flags its graders
        raised, so that they are counted as the detectors' are (each judged component's
        batch was reported with its own flags by the engine)."""
        if all(c.grader is None for c in recipe.components):
            return
        items = [
            ItemReward(
                r.id,
                r.reward,
                r.status,
                r.uncertainty,
                flags=sorted({f for c in r.components.values() for f in c.flags}),
                error=r.error,
                completion_chars=len(i.rollout.completion) if i.rollout else 0,
            )
            for r, i in zip(result.items, batch, strict=True)
        ]
        observed = BatchResult(recipe.id, result.version, items, result.usage, self.run)
        self.engine.observer.batch(self.label or recipe.id, observed)
