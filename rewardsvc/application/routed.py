"""Routed scoring: a batch split by each item's ``metadata.data_source``.

Each route's part is planned with its route's target (the plan's cost is the parts'),
then the parts run concurrently and their results are put back in request order; an item
whose source is not routed is rejected on its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rewardsvc.core.errors import FieldProblem
from rewardsvc.core.recipe import RoutingTable
from rewardsvc.core.results import Usage
from rewardsvc.core.rollout import ItemIn
from rewardsvc.protocol.rewards import RewardResult, RubricRef
from rewardsvc.scoring.planning import Cost
from rewardsvc.scoring.recipes import plan_routes

from .plans import Scored, TargetPlan
from .targets import Scoring, Target
from .wire import rejected_result


@dataclass
class RoutedPlan(TargetPlan):
    """The routes' plans, each of the items at its positions; ``results`` holds the items
    rejected before any route, at their positions."""

    results: list[RewardResult | None]
    parts: list[tuple[list[int], RubricRef, TargetPlan]]

    @property
    def cost(self) -> Cost:
        """The routes' costs add up."""
        return sum((plan.cost for _, _, plan in self.parts), Cost())

    async def run(self, deadline: float | None) -> Scored:
        """Each route's part run concurrently, put back in request order."""
        scored = await asyncio.gather(*(plan.run(deadline) for _, _, plan in self.parts))
        results = list(self.results)
        usage = Usage()
        for (ns, ref, _), (group, group_usage) in zip(self.parts, scored, strict=True):
            usage = usage + group_usage
            for n, result in zip(ns, group, strict=True):
                results[n] = result.model_copy(update={"scored_by": ref})
        return [r for r in results if r is not None], usage


async def plan_routed(
    table: RoutingTable, routes: Mapping[str, Target], batch: Scoring
) -> RoutedPlan:
    """``batch`` split by ``table``, each part planned with the target of its route."""
    inputs, at = batch.inputs, batch.positions
    readable = [n for n, i in enumerate(inputs) if i.rollout is not None]
    split = plan_routes(table, [data_source(batch.raw[n]) for n in readable])
    results: list[RewardResult | None] = [None] * len(inputs)
    for n, i in enumerate(inputs):
        if i.rollout is None:
            results[n] = _unread(i, at[n])
    for k, problem in split.rejected.items():
        n = readable[k]
        results[n] = rejected_result(inputs[n].id, [problem], at[n])
    parts: list[tuple[list[int], RubricRef, TargetPlan]] = []
    for tid, positions in split.groups.items():
        ns = [readable[k] for k in positions]
        if tid not in routes:
            unserved = FieldProblem(
                ("metadata", "data_source"), f"its target {tid!r} is not served"
            )
            for n in ns:
                results[n] = rejected_result(inputs[n].id, [unserved], at[n])
            continue
        # A routed batch is never explained (as before the split): each part is plain.
        part = dataclasses.replace(
            batch, inputs=[inputs[n] for n in ns], explain=False, places=tuple(at[n] for n in ns)
        )
        parts.append((ns, routes[tid].ref, await routes[tid].plan(part)))
    return RoutedPlan(results, parts)


def _unread(item: ItemIn, position: int) -> RewardResult:
    """An item the server could not read: its problems, or the error it was read with."""
    if item.problems:
        return rejected_result(item.id, item.problems, position)
    return RewardResult(id=item.id, reward=None, status="rejected", error=item.error)


def data_source(raw: Any) -> str | None:
    """An item's ``metadata.data_source`` when it is a string (else None: not routable)."""
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    source = metadata.get("data_source") if isinstance(metadata, dict) else None
    return source if isinstance(source, str) else None
