"""Comparative routes: ``POST /v1/groups`` (rewards relative within groups of completions)
and ``POST /v1/preferences`` (P(a better) for pairs, asked in both orders, with a label).

The routes resolve the rubric, read each group or pair on its own (a malformed one is
``rejected`` naming its field; the others are scored) off the event loop once the count of
completions is within ``max_items`` (``reading.read_groups``), and call the service; it delegates to
``rewardsvc.scoring.groups`` and ``rewardsvc.scoring.preferences`` and returns their domain
results, which are mapped here to the wire models of ``rewardsvc.protocol.comparative``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter

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
from rewardsvc.scoring.preferences import PreferenceOptions
from rewardsvc.server.errors import SCORING_REFUSALS, error_responses
from rewardsvc.server.reading import read_groups
from rewardsvc.server.service import Service, ServiceDep


async def _read(
    service: Service,
    rubric: str | Rubric,
    options: CriteriaOptions,
    raw: Sequence[Any],
    field: str = "groups",
    parts: Sequence[str] = ("completions",),
) -> tuple[Rubric, list[GroupIn]]:
    """The request's rubric (a library id or inline) and each of its groups or pairs read
    on its own, with its own criteria where it brings them (off the event loop, after the
    limit on completions)."""
    found = (
        service.library_rubric(rubric) if isinstance(rubric, str) else service.inline_rubric(rubric)
    )
    domains = service.media_domains
    return found, await read_groups(service.settings, found, options, raw, field, parts, domains)


router = APIRouter(prefix="/v1", tags=["comparative"])


@router.post(
    "/groups",
    response_model=GroupResponse,
    responses=error_responses(*SCORING_REFUSALS),
    summary="Score groups of completions relative to each other",
)
async def groups(body: GroupRequest, service: ServiceDep) -> GroupResponse:
    """Rewards per completion, relative within each group (``listwise`` or ``pairwise``),
    with each group's position consistency. A malformed group is ``rejected`` alone."""
    o = body.options
    rubric, read = await _read(service, body.rubric, o, body.groups)
    options = GroupOptions(
        method=o.method,
        tournament=o.tournament,
        orders=o.orders,
        pairs=o.pairs,
        judges=tuple(o.judges) if o.judges else None,
        rule=o.rule,
        min_judges=o.min_judges,
        seed=o.seed,
        explain=o.explain,
    )
    batch = await service.score_groups(rubric, read, options, run=body.run, raw=body.groups)
    return group_response(batch)


@router.post(
    "/preferences",
    response_model=PreferenceResponse,
    responses=error_responses(*SCORING_REFUSALS),
    summary="Judge pairs in both orders: P(a better), consistency and a label",
)
async def preferences(body: PreferenceRequest, service: ServiceDep) -> PreferenceResponse:
    """P(a better) per order and averaged, whether the orders agree, and ``a``/``b``/``tie``
    by the margin. A malformed pair is ``rejected`` alone."""
    o = body.options
    rubric, read = await _read(service, body.rubric, o, body.pairs, "pairs", ("a", "b"))
    options = PreferenceOptions(
        judges=tuple(o.judges) if o.judges else None,
        rule=o.rule,
        min_judges=o.min_judges,
        margin=o.margin,
        explain=o.explain,
    )
    batch = await service.judge_preferences(rubric, read, options, run=body.run, raw=body.pairs)
    return preference_response(batch)
