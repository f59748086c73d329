"""Comparative routes: ``POST /v1/groups`` (rewards relative within groups of completions)
and ``POST /v1/preferences`` (P(a better) for pairs, asked in both orders, with a label).

The routes read each group or pair on its own (a malformed one is ``rejected`` naming its
field; the others are scored), resolve the rubric, and call the service through the narrow
:class:`Comparer` protocol; the service delegates to ``rewardsvc.scoring.groups`` and
``rewardsvc.scoring.preferences`` and returns their domain results, which are mapped here
to the wire models of ``rewardsvc.protocol.comparative``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Depends

from rewardsvc.application.item_rubrics import ItemRubrics
from rewardsvc.application.items import read_group
from rewardsvc.application.wire import group_response, preference_response
from rewardsvc.core.rubric import Rubric
from rewardsvc.protocol.comparative import (
    GroupRequest,
    GroupResponse,
    PreferenceRequest,
    PreferenceResponse,
)
from rewardsvc.protocol.rewards import CriteriaOptions
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import GroupBatch
from rewardsvc.scoring.preferences import PreferenceBatch, PreferenceOptions
from rewardsvc.server.errors import error_responses
from rewardsvc.server.state import running_service

# ------------------------------------------------------------------ service protocol


class Comparer(Protocol):
    """What the comparative routes need from the service."""

    def library_rubric(self, rubric_id: str) -> Rubric: ...

    def inline_rubric(self, rubric: Rubric) -> Rubric: ...

    def item_rubrics(self, template: Rubric | None, options: CriteriaOptions) -> ItemRubrics: ...

    async def score_groups(
        self,
        rubric: Rubric,
        groups: list[GroupIn],
        options: GroupOptions,
        *,
        run: str | None,
        raw: Sequence[Any] = (),
    ) -> GroupBatch: ...

    async def judge_preferences(
        self,
        rubric: Rubric,
        pairs: list[GroupIn],
        options: PreferenceOptions,
        *,
        run: str | None,
        raw: Sequence[Any] = (),
    ) -> PreferenceBatch: ...


ComparerDep = Annotated[Comparer, Depends(running_service)]


def _rubric(comparer: Comparer, rubric: str | Rubric) -> Rubric:
    if isinstance(rubric, str):
        return comparer.library_rubric(rubric)
    return comparer.inline_rubric(rubric)


router = APIRouter(prefix="/v1", tags=["comparative"])


@router.post(
    "/groups",
    response_model=GroupResponse,
    responses=error_responses(401, 402, 404, 413, 422, 429),
    summary="Score groups of completions relative to each other",
)
async def groups(body: GroupRequest, comparer: ComparerDep) -> GroupResponse:
    """Rewards per completion, relative within each group (``listwise`` or ``pairwise``),
    with each group's position consistency. A malformed group is ``rejected`` alone."""
    rubric = _rubric(comparer, body.rubric)
    o = body.options
    rubrics = comparer.item_rubrics(rubric, o)
    read = [read_group(i, raw, rubrics=rubrics) for i, raw in enumerate(body.groups)]
    options = GroupOptions(
        method=o.method,
        tournament=o.tournament,
        orders=o.orders,
        pairs=o.pairs,
        judges=tuple(o.judges) if o.judges else None,
        rule=o.rule,
        min_judges=o.min_judges,
        seed=o.seed,
    )
    batch = await comparer.score_groups(rubric, read, options, run=body.run, raw=body.groups)
    return group_response(batch)


@router.post(
    "/preferences",
    response_model=PreferenceResponse,
    responses=error_responses(401, 402, 404, 413, 422, 429),
    summary="Judge pairs in both orders: P(a better), consistency and a label",
)
async def preferences(body: PreferenceRequest, comparer: ComparerDep) -> PreferenceResponse:
    """P(a better) per order and averaged, whether the orders agree, and ``a``/``b``/``tie``
    by the margin. A malformed pair is ``rejected`` alone."""
    rubric = _rubric(comparer, body.rubric)
    o = body.options
    rubrics = comparer.item_rubrics(rubric, o)
    read = [read_group(i, raw, "pairs", ("a", "b"), rubrics) for i, raw in enumerate(body.pairs)]
    options = PreferenceOptions(
        judges=tuple(o.judges) if o.judges else None,
        rule=o.rule,
        min_judges=o.min_judges,
        margin=o.margin,
    )
    batch = await comparer.judge_preferences(rubric, read, options, run=body.run, raw=body.pairs)
    return preference_response(batch)
