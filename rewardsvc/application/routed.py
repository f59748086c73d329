"""Routed scoring: a batch split by each item's ``metadata.data_source``.

The parts are scored concurrently, each with its route's target, and the results are put
back in request order; an item whose source is not routed is rejected on its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import Any

from rewardsvc.core.recipe import RoutingTable
from rewardsvc.core.results import Usage
from rewardsvc.protocol.rewards import RewardResult
from rewardsvc.scoring.recipes import plan_routes

from .targets import Scored, Scoring, Target


async def score_routed(table: RoutingTable, routes: Mapping[str, Target], batch: Scoring) -> Scored:
    """``batch`` split by ``table`` and scored with the targets of ``routes``."""
    inputs = batch.inputs
    readable = [n for n, i in enumerate(inputs) if i.rollout is not None]
    plan = plan_routes(table, [data_source(batch.raw[n]) for n in readable])
    results: list[RewardResult | None] = [None] * len(inputs)
    for n, i in enumerate(inputs):
        if i.rollout is None:
            results[n] = _rejected(i.id, i.error)
    for at, message in plan.rejected.items():
        n = readable[at]
        results[n] = _rejected(inputs[n].id, message.replace(f"items[{at}]", f"items[{n}]", 1))
    groups: dict[str, list[int]] = {}
    for tid, positions in plan.groups.items():
        ns = [readable[at] for at in positions]
        if tid in routes:
            groups[tid] = ns
            continue
        for n in ns:
            error = f"items[{n}].metadata.data_source: its target {tid!r} is not served"
            results[n] = _rejected(inputs[n].id, error)
    # A routed batch is never explained (as before the split): each part is scored plainly.
    scored = await asyncio.gather(
        *(
            routes[tid].score(
                dataclasses.replace(batch, inputs=[inputs[n] for n in ns], explain=False)
            )
            for tid, ns in groups.items()
        )
    )
    usage = Usage()
    for (tid, ns), (group, group_usage) in zip(groups.items(), scored, strict=True):
        usage = usage + group_usage
        ref = routes[tid].ref
        for n, result in zip(ns, group, strict=True):
            results[n] = result.model_copy(update={"scored_by": ref})
    return [r for r in results if r is not None], usage


def _rejected(item_id: str, error: str | None) -> RewardResult:
    return RewardResult(id=item_id, reward=None, status="rejected", error=error)


def data_source(raw: Any) -> str | None:
    """An item's ``metadata.data_source`` when it is a string (else None: not routable)."""
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    source = metadata.get("data_source") if isinstance(metadata, dict) else None
    return source if isinstance(source, str) else None
