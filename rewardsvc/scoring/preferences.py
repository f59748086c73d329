"""Preference labels: P(a better than b) for pairs, asked in both orders.

Each pair is a pairwise group of two (``rewardsvc.scoring.groups``), so calls, failures and
statuses follow the group rules. Per judge and criterion the two orders give
``P(a better | a shown first)`` and ``P(a better | b shown first)``; the criteria combine
per order as for groups (absolute weights, or the lowest for ``worst``, graded and gated
criteria by their scores of a and b, an essential gate capping a side below it, a
criterion a judge asks with tools by each side's own tool loop, as a group's;
renormalized over the two sides); a judge's ``p_a_better`` is the mean of its two orders.
Per-judge calibration is refused (``aggregation.calibration``): a judge's P(a better) is
already a probability on the one scale the label reads. Judges combine
by the rubric's rule applied to both sides alike (``core.comparative.combine_pair``), per
order and for the mean; ``consistent`` says whether the two orders fall on the same side
of 0.5, and ``label`` follows ``core.comparative.preference_label`` with the margin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Unpack

from rewardsvc.core import aggregate
from rewardsvc.core import comparative as cmp
from rewardsvc.core.errors import JudgeErrorKind, RequestError
from rewardsvc.core.results import Status, Usage
from rewardsvc.core.rubric import JudgeRule, Rubric
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.prompts import Seen
from rewardsvc.scoring.group_calls import GroupPlan
from rewardsvc.scoring.group_judges import JudgeGroup, Scores, combine_criteria
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions, worst_questions
from rewardsvc.scoring.groups import Comparing, GroupReward, plan_groups, run_groups


@dataclass(frozen=True)
class PreferenceOptions:
    """Overrides and the label margin."""

    judges: tuple[str, ...] | None = None
    rule: JudgeRule | None = None
    min_judges: int | None = None
    margin: float = cmp.DEFAULT_MARGIN
    explain: bool = False
    """Return what each judge read for each question of one side alone."""


@dataclass
class JudgePreference:
    """One judge on one pair: per order, their mean, and per criterion."""

    p_a_better: float | None
    orders: dict[str, float] | None = None
    consistent: bool | None = None
    criteria: dict[str, dict[str, float]] = field(default_factory=dict)
    calls: int = 0
    error: str | None = None
    error_kind: JudgeErrorKind | None = None
    without_images: bool = False
    """The pair carries images and this judge reads text only (placeholders instead)."""


@dataclass
class Preference:
    """The verdict on one pair."""

    id: str
    p_a_better: float | None
    orders: dict[str, float] | None
    consistent: bool | None
    label: cmp.Side | None
    status: Status
    uncertainty: float | None = None
    judges: dict[str, JudgePreference] = field(default_factory=dict)
    flags: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None
    version: str | None = None
    """The version of the pair's own rubric, when it brought criteria."""
    error_kind: JudgeErrorKind | None = None
    """The kind of the first failed judge's failure (None when every judge answered)."""
    explain: dict[str, dict[str, dict[str, Seen]]] | None = None
    """``options.explain``: per side, what each judge read of it alone (``GroupReward``)."""


@dataclass
class PreferenceBatch:
    """Every pair's verdict in input order."""

    rubric_id: str
    version: str
    results: list[Preference]
    usage: Usage


def _order_p(rubric: Rubric, per_criterion: Mapping[str, float], absolute: Scores) -> float:
    compared = {k: [p, 1.0 - p] for k, p in per_criterion.items()}
    sides = combine_criteria(rubric, compared, absolute)
    both = sides[0] + sides[1]
    return 0.5 if both <= 0 else sides[0] / both


def _judge_preference(
    rubric: Rubric, outcome: JudgeGroup, worst: Mapping[str, bool]
) -> JudgePreference:
    calls = len(outcome.comparisons)
    if outcome.rewards is None:
        return JudgePreference(
            None,
            calls=calls,
            error=outcome.error,
            error_kind=outcome.error_kind,
            without_images=outcome.without_images,
        )
    criteria: dict[str, dict[str, float]] = {}
    for c in outcome.comparisons:
        assert c.p is not None  # a judge with rewards had every call answered
        p_first = c.p[1] if worst[c.criterion] else c.p[0]
        # P(a better): a is input index 0; in order ba it is shown second.
        criteria.setdefault(c.criterion, {})[c.order] = p_first if c.shown[0] == 0 else 1 - p_first
    orders = {
        o: _order_p(rubric, {k: v[o] for k, v in criteria.items()}, outcome.absolute)
        for o in ("ab", "ba")
    }
    mean = (orders["ab"] + orders["ba"]) / 2
    consistent = cmp.consistent(orders["ab"], orders["ba"])
    return JudgePreference(
        mean, orders, consistent, criteria, calls, without_images=outcome.without_images
    )


def _preference(rubric: Rubric, group: GroupReward, rule: JudgeRule, margin: float) -> Preference:
    """The verdict on one pair from its pairwise group of two."""
    flags = dict(zip(("a", "b"), group.flags, strict=False))
    worst = worst_questions(rubric)
    per_judge = {m: _judge_preference(rubric, o, worst) for m, o in group.judges.items()}
    if group.status in ("rejected", "judge_error"):
        error = group.error
        return Preference(
            group.id,
            None,
            None,
            None,
            None,
            group.status,
            None,
            per_judge,
            flags,
            error,
            group.version,
            group.error_kind,
        )
    agg = rubric.aggregation
    weights = rubric.judge_weights
    # The judges that answered: their P(a better) and their per-order probabilities.
    answered = {
        m: (jp.p_a_better, jp.orders)
        for m, jp in per_judge.items()
        if jp.p_a_better is not None and jp.orders is not None
    }
    w = [weights[m] for m in answered]

    def joint(values: list[float]) -> float:
        return cmp.combine_pair(rule, values, w, lam=agg.uwo_lambda, beta=agg.softmin_beta)

    both = [p_a for p_a, _ in answered.values()]
    ab = joint([orders["ab"] for _, orders in answered.values()])
    ba = joint([orders["ba"] for _, orders in answered.values()])
    p = joint(both)
    within = [((orders["ab"] - orders["ba"]) / 2) ** 2 for _, orders in answered.values()]
    spread = aggregate.uncertainty(both, within, w)
    return Preference(
        group.id,
        p,
        {"ab": ab, "ba": ba},
        cmp.consistent(ab, ba),
        cmp.preference_label(p, margin),
        group.status,
        spread,
        per_judge,
        flags,
        group.error,
        group.version,
        group.error_kind,
    )


def as_groups(options: PreferenceOptions) -> GroupOptions:
    """The group options a request's pairs are compared with: pairwise, both orders."""
    return GroupOptions(
        method="pairwise",
        tournament="circular",
        judges=options.judges,
        rule=options.rule,
        min_judges=options.min_judges,
        explain=options.explain,
    )


async def plan_preferences(
    judges: Mapping[str, Judge],
    rubric: Rubric,
    pairs: Sequence[GroupIn],
    options: PreferenceOptions,
    **comparing: Unpack[Comparing],
) -> GroupPlan:
    """The questions of ``pairs`` (as :func:`~.groups.plan_groups`); per-judge calibration
    is refused, naming ``rubric.aggregation.calibration``."""
    if not 0 <= options.margin < 0.5:
        raise ValueError("margin must be in [0, 0.5)")
    if rubric.aggregation.calibration != "none":
        raise RequestError.at(
            ("rubric", "aggregation", "calibration"),
            "preferences are not calibrated: each judge's P(a better) is already on the "
            "scale the label reads; use a rubric with calibration: none",
        )
    return await plan_groups(judges, rubric, pairs, as_groups(options), **comparing)


async def judge_preferences(
    judges: Mapping[str, Judge],
    rubric: Rubric,
    pairs: Sequence[GroupIn],
    options: PreferenceOptions | None = None,
    plan: GroupPlan | None = None,
    **comparing: Unpack[Comparing],
) -> PreferenceBatch:
    """Verdicts on ``pairs`` (each a :class:`GroupIn` of two rollouts, a then b), by
    ``plan`` (planned here when None), each comparison read from and written to the cache
    of ``comparing``; each pair's two win rates are reported to its observer under its run,
    as a group's rewards are.

    Raises ``RequestError`` for request-level problems, as :func:`plan_preferences`.
    """
    options = options or PreferenceOptions()
    if plan is None:
        plan = await plan_preferences(judges, rubric, pairs, options, **comparing)
    batch = await run_groups(rubric, pairs, as_groups(options), plan, judges, **comparing)
    rule = options.rule or rubric.aggregation.rule
    results = [
        _preference(pair.rubric or rubric, group, rule, options.margin)
        for pair, group in zip(pairs, batch.results, strict=True)
    ]
    for result, group in zip(results, batch.results, strict=True):
        if group.explain is not None:
            result.explain = dict(zip(("a", "b"), group.explain, strict=True))
    return PreferenceBatch(batch.rubric_id, batch.version, results, batch.usage)
