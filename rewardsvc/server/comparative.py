"""Comparative routes: ``POST /v1/groups`` (rewards relative within groups of completions)
and ``POST /v1/preferences`` (P(a better) for pairs, asked in both orders, with a label).

The routes read each group or pair on its own (a malformed one is ``rejected`` naming its
field; the others are scored), resolve the rubric, and call the service through the narrow
:class:`Comparer` protocol; the service delegates to ``rewardsvc.scoring.groups`` and
``rewardsvc.scoring.preferences`` and returns their domain results, which are mapped here
to the wire models below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, Protocol

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rewardsvc.core import comparative as cmp
from rewardsvc.core.errors import RequestError, field_problems
from rewardsvc.core.rubric import JudgeRule, Rubric
from rewardsvc.scoring.groups import GroupBatch, GroupIn, GroupOptions, JudgeGroup
from rewardsvc.scoring.preferences import PreferenceBatch, PreferenceOptions
from rewardsvc.server.errors import ApiError, error_responses
from rewardsvc.server.items import echo_id, rollout_of, unreadable_text
from rewardsvc.server.wire import Item, RubricRef, Status, Text

# ------------------------------------------------------------------ requests


class GroupItem(BaseModel):
    """One group: completions of one prompt, compared with each other."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, max_length=256, description="Defaults to the index.")
    prompt: Text = Field(description="What the policy was asked: a string or chat messages.")
    completions: list[Text] = Field(
        min_length=2, description="The group's completions (untrusted), strings or messages."
    )
    reference: str | None = Field(default=None, description="Reference answer or label.")
    metadata: dict[str, Any] = Field(default_factory=dict)


class GroupOptionsIn(BaseModel):
    """How to compare the completions of each group."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["listwise", "pairwise"] = Field(
        default="listwise",
        description="listwise: one call per order sees the whole group; pairwise: a "
        "tournament of pairs, each asked in both orders.",
    )
    tournament: cmp.Tournament = Field(
        default="circular",
        description="pairwise: circular (each against the next), all_pairs, or sample "
        "(a random connected set of `pairs` pairs).",
    )
    orders: int = Field(
        default=2, ge=1, le=8, description="listwise: shuffled presentation orders asked."
    )
    pairs: int | None = Field(
        default=None, ge=1, description="tournament sample: pairs per group (default n)."
    )
    judges: list[str] | None = Field(default=None, min_length=1)
    rule: JudgeRule | None = Field(default=None, description="Override the judge rule.")
    min_judges: int | None = Field(default=None, ge=1)
    seed: int | None = Field(
        default=None, description="Changes the shuffles (default: seeded by the content)."
    )


class GroupRequest(BaseModel):
    """Groups of completions scored relative to each other against one rubric."""

    model_config = ConfigDict(extra="forbid")

    rubric: str | Rubric = Field(description="A library rubric id or an inline rubric.")
    groups: list[Any] = Field(min_length=1, description="Groups (see GroupItem).")
    options: GroupOptionsIn = Field(default_factory=GroupOptionsIn)
    run: str | None = Field(default=None, max_length=128, description="The training run.")


class PairIn(BaseModel):
    """Two completions of one prompt to compare."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, max_length=256)
    prompt: Text
    a: Text = Field(description="The first completion (untrusted).")
    b: Text = Field(description="The second completion (untrusted).")
    reference: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class PreferenceOptionsIn(BaseModel):
    """Overrides and the label margin."""

    model_config = ConfigDict(extra="forbid")

    judges: list[str] | None = Field(default=None, min_length=1)
    rule: JudgeRule | None = None
    min_judges: int | None = Field(default=None, ge=1)
    margin: float = Field(
        default=cmp.DEFAULT_MARGIN,
        ge=0.0,
        lt=0.5,
        description="label a when p_a_better > 0.5 + margin, b when < 0.5 - margin, else tie.",
    )


class PreferenceRequest(BaseModel):
    """Pairs judged in both orders against one rubric."""

    model_config = ConfigDict(extra="forbid")

    rubric: str | Rubric
    pairs: list[Any] = Field(min_length=1, description="Pairs (see PairIn).")
    options: PreferenceOptionsIn = Field(default_factory=PreferenceOptionsIn)
    run: str | None = Field(default=None, max_length=128, description="The training run.")


# ------------------------------------------------------------------ responses


class ComparisonOut(BaseModel):
    """One judge call: criterion, order name, completions shown (input indices, in the
    order shown) and P(each shown label), or why it failed."""

    criterion: str
    order: str = Field(description="ab / ba for a pair; order1, order2 ... for listwise.")
    shown: list[int]
    p: list[float] | None = None
    error: str | None = None
    error_kind: str | None = None


class GroupJudgeOut(BaseModel):
    """One judge on one group."""

    rewards: list[float] | None = Field(description="Win rates in input order; null on failure.")
    position_consistency: float | None = None
    criteria: dict[str, list[float]] = Field(
        default_factory=dict, description="Per criterion: each completion's win rate."
    )
    comparisons: list[ComparisonOut] = Field(default_factory=list)
    error: str | None = None


class GroupResultOut(BaseModel):
    """Rewards of one group, in input order."""

    id: str
    rewards: list[float | None] = Field(
        description="Each in [0, 1]: the expected win rate against the rest of the group."
    )
    position_consistency: float | None = Field(
        description="Share of compared pairs whose verdict survived the change of order."
    )
    status: Status
    uncertainty: list[float] | None = None
    judges: dict[str, GroupJudgeOut] = Field(default_factory=dict)
    flags: list[list[str]] = Field(default_factory=list, description="Per completion.")
    error: str | None = None


class ComparativeUsageOut(BaseModel):
    """Judge work of the request, with calls per presentation order."""

    judge_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    calls_by_order: dict[str, int] = Field(default_factory=dict)


class GroupResponse(BaseModel):
    """Rewards of every group, in request order."""

    rubric: RubricRef
    method: str
    results: list[GroupResultOut]
    usage: ComparativeUsageOut


class JudgePreferenceOut(BaseModel):
    """One judge on one pair."""

    p_a_better: float | None
    orders: dict[str, float] | None = None
    consistent: bool | None = None
    criteria: dict[str, dict[str, float]] = Field(default_factory=dict)
    error: str | None = None


class PreferenceResultOut(BaseModel):
    """The verdict on one pair."""

    id: str
    p_a_better: float | None = Field(description="P(a better), the mean of both orders.")
    orders: dict[str, float] | None = Field(
        description="ab: P(a better) with a shown first; ba: with b shown first."
    )
    consistent: bool | None = Field(description="orders.ab and orders.ba on one side of 0.5.")
    label: Literal["a", "b", "tie"] | None
    status: Status
    uncertainty: float | None = None
    judges: dict[str, JudgePreferenceOut] = Field(default_factory=dict)
    flags: dict[str, list[str]] = Field(default_factory=dict)
    error: str | None = None


class PreferenceResponse(BaseModel):
    """Verdicts on every pair, in request order."""

    rubric: RubricRef
    results: list[PreferenceResultOut]
    usage: ComparativeUsageOut


# ------------------------------------------------------------------ service protocol


class Comparer(Protocol):
    """What the comparative routes need from the service."""

    def library_rubric(self, rubric_id: str) -> Rubric: ...

    def inline_rubric(self, rubric: Rubric) -> Rubric: ...

    async def score_groups(
        self, rubric: Rubric, groups: list[GroupIn], options: GroupOptions, *, run: str | None
    ) -> GroupBatch: ...

    async def judge_preferences(
        self,
        rubric: Rubric,
        pairs: list[GroupIn],
        options: PreferenceOptions,
        *,
        run: str | None,
    ) -> PreferenceBatch: ...


def get_comparer(request: Request) -> Comparer:
    """The running service (set by the app's lifespan)."""
    return request.app.state.service  # type: ignore[no-any-return]


ComparerDep = Annotated[Comparer, Depends(get_comparer)]


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
    texts = (
        parsed.completions if isinstance(parsed, GroupItem) else [parsed.a, parsed.b]  # type: ignore[union-attr]
    )
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
        batch = await comparer.score_groups(rubric, read, options, run=body.run)
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
        batch = await comparer.judge_preferences(rubric, read, options, run=body.run)
    except RequestError as exc:
        raise ApiError.of(exc) from exc
    return preference_response(batch)
