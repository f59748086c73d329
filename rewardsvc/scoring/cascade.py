"""Running a rubric's cascade (``core.cascade``): the stages' calls, stage after stage.

The engine plans every stage's calls (:mod:`.planning`), so that admission weighs the
worst case, every question asked of every stage. Running, :func:`serve_stages` sends the
first stage's calls, reads each question's answer (:func:`~rewardsvc.core.cascade.stage_answer`)
and sends the next stage only the calls of the questions its rule escalates; the calls of
questions decided earlier are never made. :func:`tally_stages` then gives each item one
row of verdicts under the cascade's name: each criterion's the answer of the stage that
decided it, as that stage gave it (no rescaling between stages; the calibration of
``aggregation.calibration`` applies to the cascade's scores like any judge's), its
variance the deciding stage's, so that the reward's uncertainty is that stage's.
:func:`mark` writes on each reward which stage decided each criterion and degrades an
item an ensemble stage decided with fewer judges than it has.

A failed stage decides its questions as failed (never escalated, never a 0): the
cascade's row then has no score, so the item is ``judge_error`` with the failure's kind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from rewardsvc.core.cascade import Cascade, Stage, StageAnswer, stage_answer
from rewardsvc.core.errors import RequestError
from rewardsvc.core.results import ItemReward, StageUsage, Usage
from rewardsvc.core.rollout import ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.scoring.judging import JudgeLike, scores_whole_item
from rewardsvc.scoring.planning import Call
from rewardsvc.scoring.rows import Rows
from rewardsvc.scoring.serving import Outcome, tally

SKIPPED: Outcome = (Verdict.failed("not asked: an earlier stage decided"), "call")
"""The outcome of a call the cascade did not make (its question was decided earlier)."""

Question = tuple[int, str]
"""One question of a batch part: (item position, criterion key)."""


@dataclass(frozen=True)
class Decided:
    """Which stage (1 the first) decided a question, and whether with fewer judges than
    the stage has."""

    stage: int
    short: bool


def check_request(rubric: Rubric, judges: Mapping[str, JudgeLike], options: ScoreOptions) -> None:
    """Refuse a request a cascade cannot serve: a subset of judges (``options.judges``) or
    a bar of judges (``options.min_judges``: each stage has its own), or a stage judge
    that scores whole items (a reward model answers no criterion)."""
    if rubric.cascade is None:
        return
    for name, value in (("judges", options.judges), ("min_judges", options.min_judges)):
        if value is not None:
            raise RequestError.at(
                ("options", name), "a cascaded rubric is scored by its stages, as they are"
            )
    for name in rubric.cascade.judges:
        judge = judges.get(name)
        if judge is not None and scores_whole_item(judge):
            raise RequestError.at(
                ("rubric", "cascade"), f"judge {name!r} scores whole items, not criteria"
            )


def refuse_comparisons(rubric: Rubric) -> None:
    """Groups and preferences compare completions; a cascade of pointwise answers does not
    apply to them: refused as a bad request."""
    if rubric.cascade is not None:
        raise RequestError.at(
            ("rubric", "cascade"), "groups and preferences do not run cascades; use /v1/rewards"
        )


def decided_by(
    rubric: Rubric, judges: Mapping[str, JudgeLike], names: list[str], min_judges: int
) -> Rows:
    """The rows of ``rubric``'s rewards: the cascade's one row (one must score) when the
    rubric has one, else one per judge of ``names`` with ``min_judges``."""
    if rubric.cascade is None:
        return Rows({n: (judges[n],) for n in names}, min_judges)
    stages = tuple(judges[n] for n in rubric.cascade.judges)
    return Rows({rubric.cascade.name: stages}, 1)


async def serve_stages(
    cascade: Cascade,
    calls: Sequence[Call],
    serve: Callable[[list[Call]], Awaitable[list[Outcome]]],
) -> list[Outcome]:
    """Each call's outcome, ``SKIPPED`` for the calls no stage needed: stage by stage, each
    asked the questions the previous left uncertain."""
    outcomes: list[Outcome] = [SKIPPED] * len(calls)
    open_: set[Question] | None = None  # None: every question (the first stage)
    for stage in cascade.stages:
        asked = [
            n
            for n, c in enumerate(calls)
            if c.judge in stage.judges and (open_ is None or (c.item, c.criterion) in open_)
        ]
        for n, outcome in zip(asked, await serve([calls[n] for n in asked]), strict=True):
            outcomes[n] = outcome
        rule = stage.escalate
        if rule is None:
            break
        answers = _answers(stage, calls, outcomes, asked)
        by_item: dict[int, dict[str, bool]] = {}
        for (item, criterion), (answer, _) in answers.items():
            escalates = rule.escalates(answer.verdict, answer.scores)
            by_item.setdefault(item, {})[criterion] = escalates
        open_ = {
            (item, criterion)
            for item, uncertain in by_item.items()
            for criterion, goes_on in cascade.spread(uncertain).items()
            if goes_on
        }
        if not open_:
            break
    return outcomes


def _answers(
    stage: Stage, calls: Sequence[Call], outcomes: Sequence[Outcome], asked: Sequence[int]
) -> dict[Question, tuple[StageAnswer, bool]]:
    """The answer of ``stage`` on each question it was asked (the calls at ``asked``), and
    whether every verdict of it came from the cache."""
    got: dict[Question, list[Outcome]] = {}
    for n in asked:
        got.setdefault((calls[n].item, calls[n].criterion), []).append(outcomes[n])
    return {
        q: (stage_answer(stage, [v for v, _ in os]), all(s == "hit" for _, s in os))
        for q, os in got.items()
    }


def tally_stages(
    cascade: Cascade,
    calls: Sequence[Call],
    outcomes: Sequence[Outcome],
    items: int,
    usage: Usage,
) -> tuple[list[dict[str, dict[str, Outcome]]], list[dict[str, Decided]]]:
    """Each item's row under the cascade's name (criterion -> the deciding stage's answer)
    and which stage decided each criterion; the calls made, their tokens and cost counted
    into ``usage`` and, per stage, into ``usage.stages``."""
    rows: list[dict[str, dict[str, Outcome]]] = [{cascade.name: {}} for _ in range(items)]
    decided: list[dict[str, Decided]] = [{} for _ in range(items)]
    for number, stage in enumerate(cascade.stages, start=1):
        asked = [
            n for n, c in enumerate(calls) if c.judge in stage.judges and outcomes[n] is not SKIPPED
        ]
        spent = Usage()
        tally([calls[n] for n in asked], [outcomes[n] for n in asked], stage.judges, items, spent)
        answers = _answers(stage, calls, outcomes, asked)
        usage.add_stage(number, spent, StageUsage.of(spent, stage.judges, len(answers)))
        # Stage by stage: a later stage's answer replaces an escalated question's.
        for (item, criterion), (answer, hit) in answers.items():
            rows[item][cascade.name][criterion] = (answer.verdict, "hit" if hit else "call")
            decided[item][criterion] = Decided(number, answer.short)
    return rows, decided


def mark(reward: ItemReward, name: str, decided: Mapping[str, Decided]) -> None:
    """Write on ``reward`` which stage decided each criterion of the cascade's row, and
    degrade an ok reward an ensemble stage decided short of judges."""
    row = reward.judges.get(name)
    if row is None:
        return
    for criterion, outcome in row.criteria.items():
        if criterion in decided:
            outcome.stage = decided[criterion].stage
    short = sorted(c for c, d in decided.items() if d.short)
    if short and reward.status == "ok":
        reward.status = "degraded"
        reward.error = f"fewer judges than their stage has answered criteria {short}"
