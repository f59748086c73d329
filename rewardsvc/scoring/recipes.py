"""Running a recipe: graders first, then gates, then the judged rubrics, for one batch.

The runner is pure orchestration. Judged components (rubrics and constitutions) are
scored through an injected :class:`JudgedComponents` (the engine's plans of them:
:class:`~.recipe_plan.ComponentPlans`), graders
through :class:`~rewardsvc.graders.registry.Graders` in its worker processes, queued as one
request's and within the request's deadline. Components run
cheapest first:

1. every grader component, for every item (no judge call; their scores are always in
   the breakdown, less the penalties of the flags the grader raised, which join the
   item's flags); grader gates then decide the items that fail them;
2. judged gates, in the order listed, each only on the items still undecided;
3. the other judged components, concurrently, on the items still undecided.

An item that fails a gate gets that gate's floor as its reward, status ``ok``, and no
further judge call; the calls its plan held for it are counted in
``usage.judge_calls_skipped``. An item whose gate or veto could not be scored (a judge
failed) gets reward None with status ``judge_error``, as does one missing any weighted
component's score.

:func:`plan_routes` splits a batch that mixes task types by each item's
``metadata.data_source``, following a routing table.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rewardsvc.core.errors import FieldProblem
from rewardsvc.core.objectives import recipe_objectives
from rewardsvc.core.recipe import (
    Component,
    ComponentOutcome,
    Recipe,
    RecipeItemReward,
    RecipeResult,
    RoutingTable,
    resolve_components,
)
from rewardsvc.core.results import BatchResult, Status, Usage, add_cost
from rewardsvc.core.rollout import ItemIn, Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders.registry import Graders
from rewardsvc.scoring.recipe_outcomes import graded, judged
from rewardsvc.scoring.recipe_plan import needs_reference

__all__ = [
    "JudgedComponents",
    "RecipeRunner",
    "RoutePlan",
    "combine",
    "plan_routes",
    "resolve_components",  # lives in the core (the library checks recipes with it)
]


class JudgedComponents(Protocol):
    """A batch's judged components, as planned: the runner asks for some of the items."""

    async def score(self, component: str, positions: list[int]) -> BatchResult:
        """Component ``component``'s batch of the items at ``positions``, in that order."""
        ...

    def planned(self, component: str, position: int) -> int:
        """The judge calls component ``component`` planned for the item at ``position``."""
        ...


_STATUS_RANK: dict[Status, int] = {"ok": 0, "degraded": 1, "judge_error": 2, "rejected": 3}


@dataclass
class RoutePlan:
    """A routed batch split by target: item positions per rubric or recipe id, in input
    order, and the positions rejected because no route matched (with their error)."""

    groups: dict[str, list[int]] = field(default_factory=dict)
    rejected: dict[int, FieldProblem] = field(default_factory=dict)


def plan_routes(table: RoutingTable, sources: Sequence[str | None]) -> RoutePlan:
    """Split a batch by the ``metadata.data_source`` of each item (``sources``, in order).

    The caller scores each group with its rubric or recipe and puts the rewards back at
    their positions; rejected positions get status ``rejected`` with the problem given
    (its place relative to the item).
    """
    plan = RoutePlan()
    for n, source in enumerate(sources):
        target = table.target(source)
        if target is None:
            known = ", ".join(sorted(table.routes))
            what = "missing" if source is None else f"{source[:80]!r} is not routed"
            plan.rejected[n] = FieldProblem(
                ("metadata", "data_source"), f"{what} by {table.id!r} (routes: {known})"
            )
        else:
            plan.groups.setdefault(target, []).append(n)
    return plan


@dataclass
class _Item:
    id: str
    rollout: Rollout
    components: dict[str, ComponentOutcome] = field(default_factory=dict)
    decided_by: str | None = None
    floor: float | None = None
    failed: str | None = None
    status: Status = "ok"
    flags: set[str] = field(default_factory=set)
    problems: tuple[FieldProblem, ...] = ()
    """Why a rejected item was rejected, each problem placed relative to the item."""

    def reject(self, *problems: FieldProblem, error: str | None = None) -> None:
        """Reject the item for ``problems`` (``error``: their text, when it is placed)."""
        self.failed = error or "; ".join(map(str, problems)) or "rejected"
        self.status, self.problems = "rejected", problems

    @property
    def open(self) -> bool:
        return self.decided_by is None and self.failed is None


def _items_of(
    recipe: Recipe, rubrics: Mapping[str, Rubric], batch: Sequence[ItemIn]
) -> list[_Item]:
    """The items of ``batch``, the unreadable and those lacking a needed reference rejected."""
    items = [_Item(i.id, i.rollout or Rollout("", "")) for i in batch]
    for item, given in zip(items, batch, strict=True):
        if given.rollout is None:
            item.reject(*given.problems, error=given.error or "unreadable item")
    for component in recipe.components:
        if needs_reference(component, rubrics):
            for item in items:
                if item.rollout.reference is None and item.failed is None:
                    why = f"component {component.id!r} needs a reference"
                    item.reject(FieldProblem(("reference",), why))
    return items


class RecipeRunner:
    """Runs a recipe's batch with its judged components as planned (``judged``) and one set
    of graders; grading ends by ``deadline`` (``time.monotonic()`` seconds), the
    request's."""

    def __init__(
        self, judged: JudgedComponents, graders: Graders, deadline: float | None = None
    ) -> None:
        self.judged = judged
        self.graders = graders
        self.deadline = deadline

    async def run(
        self,
        recipe: Recipe,
        rubrics: Mapping[str, Rubric],
        batch: Sequence[ItemIn],
    ) -> RecipeResult:
        """Rewards for ``batch`` under ``recipe``, in input order; ``rubrics`` from
        :func:`resolve_components`, ``batch`` the items ``judged`` planned. Items the server
        could not read (``rollout`` None) come back rejected with their error."""
        started = time.perf_counter()
        usage = Usage()
        items = _items_of(recipe, rubrics, batch)
        judged_gates = await self._run_graders(recipe, items, usage)
        await self._run_judged(recipe, rubrics, judged_gates, items, usage)
        usage.latency_ms = (time.perf_counter() - started) * 1000
        versions = {
            ref: rubrics[c.id].version()
            for c in recipe.components
            if isinstance(ref := c.reference, str)
        }
        return RecipeResult(
            recipe.id,
            recipe.version(versions),
            [recipe_objectives(recipe, _finish(recipe, item)) for item in items],
            usage,
        )

    async def _run_graders(
        self, recipe: Recipe, items: list[_Item], usage: Usage
    ) -> list[Component]:
        """Step 1: every grader component on every item, then the grader gates; returns
        the judged gates, in the order listed."""
        gate_ids = [g.component for g in recipe.gates]
        graders = [c for c in recipe.components if c.grader is not None]
        graders.sort(key=lambda c: c.id not in gate_ids)
        request = object()  # the graders' queue serves requests in turn
        penalties = recipe.flag_penalties
        await asyncio.gather(*(self._grade(c, items, usage, request, penalties) for c in graders))
        needed = {c.id for c in recipe.components if c.weight > 0}
        needed |= {v.component for v in recipe.vetoes} | set(gate_ids)
        for item in items:
            for c in graders:
                outcome = item.components.get(c.id)
                if item.open and c.id in needed and outcome and outcome.score is None:
                    item.failed = f"grader {c.id!r} gave no score: {outcome.error}"
                    item.status = "judge_error"
        judged_gates: list[Component] = []
        for gate in recipe.gates:
            component = recipe.component(gate.component)
            if component.grader is None:
                judged_gates.append(component)
                continue
            for item in items:
                self._apply_gate(item, component.id, gate.threshold, gate.floor)
        return judged_gates

    async def _run_judged(
        self,
        recipe: Recipe,
        rubrics: Mapping[str, Rubric],
        judged_gates: list[Component],
        items: list[_Item],
        usage: Usage,
    ) -> None:
        """Steps 2 and 3: the judged gates in turn, then the other judged components
        concurrently; the components an item never reached are marked skipped."""
        for component in judged_gates:
            gate = next(g for g in recipe.gates if g.component == component.id)
            await self._judge(component, items, usage)
            for item in items:
                self._apply_gate(item, component.id, gate.threshold, gate.floor)

        gate_ids = [g.component for g in recipe.gates]
        rest = [c for c in recipe.components if c.grader is None and c.id not in gate_ids]
        await asyncio.gather(*(self._judge(c, items, usage) for c in rest))
        # A component an item never reached is skipped; its judge calls count as saved.
        for component in [*judged_gates, *rest]:
            version = rubrics[component.id].version()
            for n, item in enumerate(items):
                if component.id in item.components:
                    continue
                if item.status != "rejected":
                    usage.judge_calls_skipped += self.judged.planned(component.id, n)
                reason = f"gate {item.decided_by!r} failed" if item.decided_by else item.failed
                item.components[component.id] = ComponentOutcome(
                    component.kind, component.weight, None, version=version, skipped=reason
                )

    def _apply_gate(self, item: _Item, component_id: str, threshold: float, floor: float) -> None:
        if not item.open:
            return
        outcome = item.components[component_id]
        if outcome.score is None:
            item.failed = f"gate {component_id!r} could not be scored: {outcome.error}"
            item.status = outcome.status if outcome.status != "ok" else "judge_error"
        elif outcome.score < threshold:
            item.decided_by, item.floor = component_id, floor

    async def _grade(
        self,
        component: Component,
        items: list[_Item],
        usage: Usage,
        request: object,
        penalties: Mapping[str, float],
    ) -> None:
        spec = component.grader
        assert spec is not None

        async def one(item: _Item) -> None:
            if item.status == "rejected":
                return
            result = await self.graders.grade(
                spec, item.rollout, group=request, deadline=self.deadline
            )
            usage.grader_calls += 1
            item.components[component.id] = graded(component, result, penalties)
            item.flags.update(result.flags)

        await asyncio.gather(*(one(item) for item in items))

    async def _judge(self, component: Component, items: list[_Item], usage: Usage) -> None:
        positions = [n for n, item in enumerate(items) if item.open]
        if not positions:
            return
        todo = [items[n] for n in positions]
        batch = await self.judged.score(component.id, positions)
        usage.judge_calls += batch.usage.judge_calls
        usage.cache_hits += batch.usage.cache_hits
        usage.prompt_tokens += batch.usage.prompt_tokens
        usage.completion_tokens += batch.usage.completion_tokens
        usage.cached_tokens += batch.usage.cached_tokens
        usage.cost = add_cost(usage.cost, batch.usage.cost)
        for item, reward in zip(todo, batch.items, strict=True):
            item.components[component.id] = judged(component, batch.version, reward)
            item.flags.update(reward.flags)
            if reward.status == "rejected" and item.failed is None:
                item.reject(*reward.problems, error=reward.error)


def combine(recipe: Recipe, scores: Mapping[str, float]) -> float:
    """The recipe's combination of the weighted components' scores (all present)."""
    return recipe.combination.apply(
        [(c.weight, scores[c.id]) for c in recipe.components if c.weight > 0]
    )


def _finish(recipe: Recipe, item: _Item) -> RecipeItemReward:
    flags = sorted(item.flags)
    if item.decided_by is not None:
        return RecipeItemReward(
            item.id, item.floor, "ok", item.components, decided_by=item.decided_by, flags=flags
        )
    if item.failed is not None:
        return RecipeItemReward(
            item.id,
            None,
            item.status,
            item.components,
            flags=flags,
            error=item.failed,
            problems=item.problems,
        )
    needed = {c.id for c in recipe.components if c.weight > 0} | {
        v.component for v in recipe.vetoes
    }
    missing = sorted(cid for cid in needed if item.components[cid].score is None)
    worst = max((item.components[cid].status for cid in needed), key=_STATUS_RANK.__getitem__)
    if missing:
        status: Status = "judge_error" if worst in ("ok", "degraded") else worst
        errors = "; ".join(f"{cid}: {item.components[cid].error or 'no score'}" for cid in missing)
        return RecipeItemReward(item.id, None, status, item.components, flags=flags, error=errors)
    scores = {cid: float(item.components[cid].score or 0.0) for cid in needed}
    reward = combine(recipe, scores)
    vetoed = []
    for veto in recipe.vetoes:
        if scores[veto.component] < veto.threshold:
            reward = min(reward, veto.cap)
            vetoed.append(veto.component)
    return RecipeItemReward(
        item.id,
        min(1.0, max(0.0, reward)),
        worst,
        item.components,
        vetoed_by=vetoed,
        uncertainty=_uncertainty(recipe, item),
        flags=flags,
    )


def _uncertainty(recipe: Recipe, item: _Item) -> float | None:
    """For a weighted mean, the judged components' uncertainties propagated with their
    weights (graders are exact); None for the other combination rules."""
    if not recipe.combination.propagates_uncertainty:
        return None
    total = sum(c.weight for c in recipe.components if c.weight > 0)
    variance = sum(
        (c.weight / total * (item.components[c.id].uncertainty or 0.0)) ** 2
        for c in recipe.components
        if c.weight > 0
    )
    return math.sqrt(variance)
