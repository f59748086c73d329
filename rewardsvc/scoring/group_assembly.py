"""Assembling a comparative request's outcomes: each judge's answers per group, each
judge's view of a group (its comparison method's), per-judge calibration, and each
group's rewards.

Failures are honest: a judge with any failed question about a group (a comparison, a
gate's question) contributes nothing to that group (never a 0); a grader that could not
score a completion leaves every judge without a view of that group. With fewer than
``min_judges`` judges left a group's rewards are all None with status ``judge_error``;
fewer than all but enough is ``degraded``. Each failure keeps its kind
(:data:`~rewardsvc.core.errors.JudgeErrorKind`, from the verdict or the grader's result,
never read from text): a judge's view and a group name the kind of their first failure.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rewardsvc.core import aggregate
from rewardsvc.core import comparative as cmp
from rewardsvc.core.errors import JudgeErrorKind
from rewardsvc.core.results import Status, Usage
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import JudgeRule, Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.graders.result import GraderResult
from rewardsvc.judges.prompts import Seen
from rewardsvc.safety.detectors import detect
from rewardsvc.scoring import agentic, penalties
from rewardsvc.scoring.assemble import with_grader_flags
from rewardsvc.scoring.group_calls import GroupPlan
from rewardsvc.scoring.group_judges import Comparison, JudgeGroup
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions, worst_questions
from rewardsvc.scoring.serving import Outcome
from rewardsvc.storage.calibration import CalibrationWindows

log = logging.getLogger(__name__)


@dataclass
class GroupReward:
    """Rewards of one group, in input order, with status, uncertainty and breakdown."""

    id: str
    rewards: list[float | None]
    status: Status
    position_consistency: float | None = None
    uncertainty: list[float] | None = None
    judges: dict[str, JudgeGroup] = field(default_factory=dict)
    flags: list[list[str]] = field(default_factory=list)
    error: str | None = None
    version: str | None = None
    """The version of the group's own rubric, when it brought criteria."""
    error_kind: JudgeErrorKind | None = None
    """The kind of the first failed judge's failure (None when every judge scored)."""
    explain: list[dict[str, dict[str, Seen]]] | None = None
    """``options.explain``: per completion, per judge, per criterion asked of it alone, what
    the judge read (an agentic judge's transcript)."""


@dataclass
class Answers:
    """One judge's answers about one group: its comparisons, the scores of the criteria
    asked of each completion alone, and the questions that failed."""

    comparisons: list[Comparison] = field(default_factory=list)
    absolute: dict[str, dict[int, float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    kinds: list[JudgeErrorKind] = field(default_factory=list)
    """The kind of each failure, in the order of ``failures``."""
    asked: int = 0

    def failed(self, why: str, verdict: Verdict) -> None:
        """Record a failed question: ``why`` and its verdict's kind."""
        self.failures.append(why)
        self.kinds.append(verdict.error_kind or "internal")


Answered = dict[tuple[int, str], Answers]


def _probs(verdict: Verdict, n: int) -> list[float] | None:
    if not verdict.ok or verdict.probs is None:
        return None
    return [verdict.probs.get(cmp.LABELS[k], 0.0) for k in range(n)]


def collect(plan: GroupPlan, outcomes: Sequence[Outcome], usage: Usage) -> Answered:
    """Each (group, judge)'s answers, counting the work done into ``usage`` (a cache hit is
    no call, nor is a verdict shared with an identical call in flight)."""
    answered: Answered = {}
    for asked, call, (verdict, source) in zip(plan.asked, plan.calls, outcomes, strict=True):
        c = asked.comparison
        if source == "call":
            usage.called(verdict, c.order if c is not None else None)
            if call.tools is not None:
                agentic.count_loop(usage, verdict)
        elif source == "hit":
            usage.cache_hits += 1
        answers = answered.setdefault((asked.group, asked.judge), Answers())
        answers.asked += 1
        if c is None:
            if verdict.ok and verdict.score is not None:
                answers.absolute.setdefault(asked.criterion, {})[asked.completion] = verdict.score
            else:
                where = f"completions[{asked.completion}]"
                answers.failed(f"{asked.criterion} {where}: {verdict.error}", verdict)
            continue
        c.p, c.error, c.error_kind = (
            _probs(verdict, len(c.shown)),
            verdict.error,
            verdict.error_kind,
        )
        answers.comparisons.append(c)
        if c.p is None:
            answers.failed(f"{c.criterion} {c.order}: {verdict.error}", verdict)
    return answered


def graded_scores(
    grades: Sequence[dict[str, GraderResult]],
) -> tuple[dict[str, list[float]], Answers]:
    """A group's grader scores per criterion (one per completion), and the failures (with
    their kinds, as ``/v1/rewards`` reports a grader criterion's)."""
    scores: dict[str, list[float]] = {}
    unscored = Answers()
    for k, per in enumerate(grades):
        for cid, result in per.items():
            if result.score is None:
                why = f"grader {cid} completions[{k}]: {result.error}"
                unscored.failed(why, result.verdict())
                continue  # a failure leaves the group without judge views: no stand-in
            scores.setdefault(cid, []).append(result.score)
    return scores, unscored


def judge_views(
    rubric: Rubric,
    group: GroupIn,
    gi: int,
    names: list[str],
    options: GroupOptions,
    answered: Answered,
    grades: Sequence[dict[str, GraderResult]],
) -> dict[str, JudgeGroup]:
    """Each judge's view of group ``gi`` (its rewards None when a question failed)."""
    n = len(group.rollouts)
    worst = worst_questions(rubric)
    graded, grader = graded_scores(grades)
    views: dict[str, JudgeGroup] = {}
    for name in names:
        answers = answered.get((gi, name), Answers())
        comps = answers.comparisons
        if answers.failures or grader.failures:
            # Any failed question: the judge's view of this group is incomplete: none.
            count = [f"{len(answers.failures)} of {answers.asked} calls failed"]
            failed = (count if answers.failures else []) + grader.failures + answers.failures
            kind = (grader.kinds + answers.kinds)[0]
            error = "; ".join(failed[:4])
            views[name] = JudgeGroup(None, comparisons=comps, error=error, error_kind=kind)
            continue
        absolute = {cid: [by[k] for k in range(n)] for cid, by in answers.absolute.items()}
        views[name] = options.strategy.judge_view(rubric, n, comps, worst, absolute | graded)
    return views


async def calibrate(
    rubric: Rubric,
    key: str,
    names: list[str],
    views: Sequence[dict[str, JudgeGroup]],
    windows: CalibrationWindows,
) -> None:
    """Per-judge calibration of the judges' group scores before the judges combine, as the
    engine calibrates item scores: this request's scores join the judge's window first.
    ``key`` keeps the window apart from ``/v1/rewards``' (win rates are another scale)."""
    agg = rubric.aggregation
    for name in names:
        scored = [(v[name], v[name].rewards) for v in views if name in v]
        answered = [(view, rewards) for view, rewards in scored if rewards is not None]
        reference = await windows.extend_and_stats(
            key, name, agg.calibration_window, [r for _, rewards in answered for r in rewards]
        )
        for view, rewards in answered:
            variances = view.variances or [0.0] * len(rewards)
            pairs = [
                aggregate.calibrate(agg.calibration, r, reference, variance=var)
                for r, var in zip(rewards, variances, strict=True)
            ]
            view.rewards = [p[0] for p in pairs]
            view.variances = [p[1] for p in pairs]


def _flags(rollout: Rollout) -> list[str]:
    try:
        return sorted(set(detect(rollout)))
    except Exception:
        # A detector bug must not sink the group; the completion is scored without flags.
        log.exception("detectors failed")
        return []


def group_reward(
    rubric: Rubric,
    group: GroupIn,
    names: list[str],
    bar: int,
    rule: JudgeRule,
    outcomes: dict[str, JudgeGroup],
    grades: Sequence[Mapping[str, GraderResult]] = (),
) -> GroupReward:
    """A group's rewards from its judges' views, combined by ``rule``. A completion's flags
    are the detectors' and those its grader criteria raised (``grades``, per completion),
    each costing its penalty under the rubric's transforms."""
    n = len(group.rollouts)
    graded = grades or [{} for _ in group.rollouts]
    flags = [with_grader_flags(_flags(r), g) for r, g in zip(group.rollouts, graded, strict=True)]
    rewards_of = {m: r for m in names if (r := outcomes[m].rewards) is not None}
    scored = list(rewards_of)
    agree = sum(outcomes[m].agree for m in scored)
    compared = sum(outcomes[m].compared for m in scored)
    consistency = agree / compared if compared else None
    unscored = [m for m in names if outcomes[m].rewards is None]
    error = "; ".join(f"{m}: {outcomes[m].error}" for m in unscored) or None
    kind = outcomes[unscored[0]].error_kind if unscored else None
    if len(scored) < bar:
        return GroupReward(
            group.id, [None] * n, "judge_error", None, None, outcomes, flags, error, error_kind=kind
        )
    agg = rubric.aggregation
    w = [rubric.judge_weights[m] for m in scored]
    rewards: list[float | None] = []
    spread: list[float] = []
    for i, rollout in enumerate(group.rollouts):
        scores = [rewards_of[m][i] for m in scored]
        variances = [(outcomes[m].variances or [0.0] * n)[i] for m in scored]
        value = aggregate.combine(rule, scores, w, lam=agg.uwo_lambda, beta=agg.softmin_beta)
        rewards.append(
            penalties.transformed(
                rubric.transforms, value, completion=rollout.completion, flags=flags[i]
            )
        )
        spread.append(aggregate.uncertainty(scores, variances, w))
    status: Status = "ok" if len(scored) == len(names) else "degraded"
    return GroupReward(
        group.id, rewards, status, consistency, spread, outcomes, flags, error, error_kind=kind
    )
