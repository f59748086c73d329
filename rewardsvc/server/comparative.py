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
from pydantic import ValidationError

from rewardsvc.core.errors import RequestError, field_problems
from rewardsvc.core.rubric import Rubric
from rewardsvc.protocol.comparative import (
    ComparativeUsageOut,
    ComparisonOut,
    GroupItem,
    GroupJudgeOut,
    GroupRequest,
    GroupResponse,
    GroupResultOut,
    JudgePreferenceOut,
    PairIn,
    PreferenceRequest,
    PreferenceResponse,
    PreferenceResultOut,
)
from rewardsvc.protocol.rewards import Item, RubricRef
from rewardsvc.scoring.group_judges import JudgeGroup
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import GroupBatch
from rewardsvc.scoring.preferences import PreferenceBatch, PreferenceOptions
from rewardsvc.server.errors import ApiError, error_responses
from rewardsvc.server.items import echo_id, rollout_of, unreadable_text
from rewardsvc.server.state import running_service

# ------------------------------------------------------------------ service protocol


class Comparer(Protocol):
    """What the comparative routes need from the service."""

    def library_rubric(self, rubric_id: str) -> Rubric: ...

    def inline_rubric(self, rubric: Rubric) -> Rubric: ...

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


def read_group(
    index: int, raw: Any, field: str = "groups", parts: Sequence[str] = ("completions",)
) -> GroupIn:
    """One raw group (``completions``) or pair (``parts`` ``a``, ``b``) as rollouts, or
    rejected naming its field; never raises."""
    fallback = str(index)
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        fallback = echo_id(raw["id"])
    bad = unreadable_text(raw, (field, index))
    if bad is not None:
        return GroupIn(fallback, (), str(bad))
    model = GroupItem if parts == ("completions",) else PairIn
    try:
        parsed = model.model_validate(raw)
    except ValidationError as exc:
        problems = field_problems(exc.errors(), raw, prefix=(field, index))
        return GroupIn(fallback, (), "; ".join(str(p) for p in problems))
    texts = parsed.completions if isinstance(parsed, GroupItem) else [parsed.a, parsed.b]
    rollouts = tuple(
        rollout_of(Item(prompt=parsed.prompt, completion=t, reference=parsed.reference))
        for t in texts
    )
    return GroupIn(parsed.id if parsed.id is not None else fallback, rollouts)


def _judge_out(j: JudgeGroup) -> GroupJudgeOut:
    return GroupJudgeOut(
        rewards=j.rewards,
        position_consistency=j.position_consistency,
        criteria=j.criteria,
        comparisons=[
            ComparisonOut(
                criterion=c.criterion,
                order=c.order,
                shown=list(c.shown),
                p=c.p,
                error=c.error,
                error_kind=c.error_kind,
            )
            for c in j.comparisons
        ],
        error=j.error,
    )


def group_response(batch: GroupBatch) -> GroupResponse:
    """The wire form of scored groups."""
    return GroupResponse(
        rubric=RubricRef(id=batch.rubric_id, version=batch.version),
        method=batch.method,
        results=[
            GroupResultOut(
                id=r.id,
                rewards=r.rewards,
                position_consistency=r.position_consistency,
                status=r.status,
                uncertainty=r.uncertainty,
                judges={name: _judge_out(j) for name, j in r.judges.items()},
                flags=r.flags,
                error=r.error,
            )
            for r in batch.results
        ],
        usage=ComparativeUsageOut(**vars(batch.usage)),
    )


def preference_response(batch: PreferenceBatch) -> PreferenceResponse:
    """The wire form of judged pairs."""
    return PreferenceResponse(
        rubric=RubricRef(id=batch.rubric_id, version=batch.version),
        results=[
            PreferenceResultOut(
                id=r.id,
                p_a_better=r.p_a_better,
                orders=r.orders,
                consistent=r.consistent,
                label=r.label,
                status=r.status,
                uncertainty=r.uncertainty,
                judges={
                    name: JudgePreferenceOut(
                        p_a_better=j.p_a_better,
                        orders=j.orders,
                        consistent=j.consistent,
                        criteria=j.criteria,
                        error=j.error,
                    )
                    for name, j in r.judges.items()
                },
                flags=r.flags,
                error=r.error,
            )
            for r in batch.results
        ],
        usage=ComparativeUsageOut(**vars(batch.usage)),
    )


router = APIRouter(prefix="/v1", tags=["comparative"])


@router.post(
    "/groups",
    response_model=GroupResponse,
    responses=error_responses(401, 404, 413, 422, 429),
    summary="Score groups of completions relative to each other",
)
async def groups(body: GroupRequest, comparer: ComparerDep) -> GroupResponse:
    """Rewards per completion, relative within each group (``listwise`` or ``pairwise``),
    with each group's position consistency. A malformed group is ``rejected`` alone."""
    rubric = _rubric(comparer, body.rubric)
    read = [read_group(i, raw) for i, raw in enumerate(body.groups)]
    o = body.options
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
    try:
        batch = await comparer.score_groups(rubric, read, options, run=body.run, raw=body.groups)
    except RequestError as exc:
        raise ApiError.of(exc) from exc
    return group_response(batch)


@router.post(
    "/preferences",
    response_model=PreferenceResponse,
    responses=error_responses(401, 404, 413, 422, 429),
    summary="Judge pairs in both orders: P(a better), consistency and a label",
)
async def preferences(body: PreferenceRequest, comparer: ComparerDep) -> PreferenceResponse:
    """P(a better) per order and averaged, whether the orders agree, and ``a``/``b``/``tie``
    by the margin. A malformed pair is ``rejected`` alone."""
    rubric = _rubric(comparer, body.rubric)
    read = [read_group(i, raw, "pairs", ("a", "b")) for i, raw in enumerate(body.pairs)]
    o = body.options
    options = PreferenceOptions(
        judges=tuple(o.judges) if o.judges else None,
        rule=o.rule,
        min_judges=o.min_judges,
        margin=o.margin,
    )
    try:
        batch = await comparer.judge_preferences(
            rubric, read, options, run=body.run, raw=body.pairs
        )
    except RequestError as exc:
        raise ApiError.of(exc) from exc
    return preference_response(batch)
