"""Assembly: one item's verdicts into its judges' scores and its reward, status and error.

Pure functions over verdicts (no I/O); the engine calls them after the judge calls and
the per-judge calibration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rewardsvc.core import aggregate
from rewardsvc.core.errors import FieldProblem
from rewardsvc.core.results import CriterionOutcome, ItemReward, JudgeOutcome, Status, StepResult
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import JudgeRule, Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.graders.result import GraderResult
from rewardsvc.scoring import penalties
from rewardsvc.scoring import steps as process
from rewardsvc.storage.cache import Source

PerJudge = Mapping[str, Mapping[str, tuple[Verdict, Source]]]
"""An item's verdicts: judge name -> criterion id -> (verdict, where it came from)."""


def episode_part(
    verdicts: Mapping[str, tuple[Verdict, Source]],
) -> dict[str, tuple[Verdict, Source]]:
    """A judge's verdicts on the episode criteria (step verdicts have keys ``crit@stepK``)."""
    return {key: v for key, v in verdicts.items() if "@" not in key}


def step_results(
    rubric: Rubric, rollout: Rollout, per_judge: PerJudge, rule: JudgeRule, min_judges: int
) -> list[StepResult] | None:
    """Each assistant step's reward when the rubric has step criteria, else None."""
    if not rubric.step_criteria:
        return None
    stepped = {
        name: {key: v for key, (v, _) in verdicts.items() if "@" in key}
        for name, verdicts in per_judge.items()
    }
    return process.assemble(rubric, rollout.step_count(), stepped, rule=rule, min_judges=min_judges)


def judge_outcome(rubric: Rubric, verdicts: Mapping[str, tuple[Verdict, Source]]) -> JudgeOutcome:
    """One judge's score of an item from its criterion verdicts; no score when any failed."""
    criteria = {cid: CriterionOutcome.of(v) for cid, (v, _) in verdicts.items()}
    errors = [
        f"criterion {cid!r}: {v.error or 'no score'}"
        for cid, (v, _) in verdicts.items()
        if not v.ok
    ]
    if errors:
        # A judge with any failed call contributes no score for this item: never a 0.
        return JudgeOutcome(score=None, criteria=criteria, error="; ".join(errors))
    raw, variance = aggregate.judge_score(
        rubric,
        {cid: v.score for cid, (v, _) in verdicts.items() if v.score is not None},
        {cid: v.variance for cid, (v, _) in verdicts.items()},
    )
    return JudgeOutcome(score=raw, raw_score=raw, variance=variance, criteria=criteria)


def overflow(per_judge: PerJudge) -> str | None:
    """Why judges could not read the item, when every judge call that failed did so because
    the item does not fit that judge's context: a re-send can never fix it."""
    failed = [v for crit in per_judge.values() for v, _ in crit.values() if not v.ok]
    if failed and all(v.error_kind == "context_overflow" for v in failed):
        return failed[0].error or "context_overflow"
    return None


def add_grades(
    verdicts: Sequence[Mapping[str, dict[str, tuple[Verdict, Source]]]],
    graded: Sequence[Mapping[str, GraderResult]],
) -> None:
    """Add each item's grader results to the verdicts of every one of its judges."""
    for per_judge, grades in zip(verdicts, graded, strict=True):
        # Every judge gets the grader's score, so that it weighs in each judge score
        # exactly as a criterion the judge answered itself would.
        for by_criterion in per_judge.values():
            by_criterion.update({c: (g.verdict(), "grader") for c, g in grades.items()})


def with_grader_flags(flags: Sequence[str], grades: Mapping[str, GraderResult]) -> list[str]:
    """An item's ``flags`` joined by those its grader criteria raised (the tamper
    detector's, on the code they ran), so that they cost their penalty under the rubric's
    transforms and are counted as the text detectors' are."""
    return sorted({*flags, *(f for grade in grades.values() for f in grade.flags)})


def attach_evidence(result: ItemReward, grades: Mapping[str, GraderResult]) -> None:
    """Put each grader criterion's evidence into every judge's breakdown of ``result``."""
    for by_judge in result.judges.values():
        for cid, grade in grades.items():
            by_judge.criteria[cid].evidence = grade.evidence


def item_reward(
    rubric: Rubric,
    rule: JudgeRule,
    names: Sequence[str],
    min_judges: int,
    place: str,
    item_id: str,
    rollout: Rollout,
    flags: list[str],
    row: Mapping[str, JudgeOutcome],
    per_judge: PerJudge,
    steps: list[StepResult] | None = None,
) -> ItemReward:
    """The reward of one item from its judges' (calibrated) scores, by the failure rules:
    enough judges -> ok or degraded; fewer than ``min_judges`` -> judge_error (no reward);
    every judge out of context -> rejected. ``place`` names the item in errors. With
    ``steps`` (process rewards), the steps' combined reward joins the episode's, and a
    failed step degrades the item, not the episode."""
    scored = [n for n in names if row[n].score is not None]
    sources = [s for crit in per_judge.values() for _, s in crit.values() if s != "grader"]
    cached = bool(sources) and all(s == "hit" for s in sources)
    too_long = overflow(per_judge)
    # Too long for enough judges: rejected (a trainer must drop or shorten it), never the
    # "retry later" of judge_error. Too long for one judge of several: degraded, saying so.
    if too_long is not None and len(scored) < min_judges:
        long_item = FieldProblem((), f"too long for the judges' context ({too_long})")
        return ItemReward(
            id=item_id,
            reward=None,
            status="rejected",
            judges=dict(row),
            flags=flags,
            error=f"{place}: {long_item.message}",
            completion_chars=len(rollout.completion),
            problems=(long_item,),
        )
    has_episode = rubric.has_episode_criteria
    if steps is not None and not has_episode:
        return _process_only(rubric, item_id, rollout, flags, row, cached, steps)
    reward: float | None = None
    spread: float | None = None
    status: Status = "judge_error"
    if len(scored) >= min_judges:
        reward, spread, status = _combined(rubric, rule, names, scored, rollout, flags, row, steps)
    return ItemReward(
        id=item_id,
        reward=reward,
        status=status,
        uncertainty=spread,
        judges=dict(row),
        flags=flags,
        cached=cached,
        error=_judge_errors(names, scored, min_judges, row),
        completion_chars=len(rollout.completion),
        steps=steps,
    )


def _transformed(rubric: Rubric, value: float, rollout: Rollout, flags: list[str]) -> float:
    """``value`` after the rubric's transforms (with the default flag penalties)."""
    return penalties.transformed(
        rubric.transforms, value, completion=rollout.completion, flags=flags
    )


def _process_only(
    rubric: Rubric,
    item_id: str,
    rollout: Rollout,
    flags: list[str],
    row: Mapping[str, JudgeOutcome],
    cached: bool,
    steps: list[StepResult],
) -> ItemReward:
    """The reward of an item whose rubric has only step criteria: its steps' reward."""
    value = process.process_reward(rubric, steps)
    reward = _transformed(rubric, value, rollout, flags) if value is not None else None
    return ItemReward(
        id=item_id,
        reward=reward,
        status=process.item_status(steps),
        judges=dict(row),
        flags=flags,
        cached=cached,
        error="; ".join(s.error for s in steps if s.error) or None,
        completion_chars=len(rollout.completion),
        steps=steps,
    )


def _combined(
    rubric: Rubric,
    rule: JudgeRule,
    names: Sequence[str],
    scored: list[str],
    rollout: Rollout,
    flags: list[str],
    row: Mapping[str, JudgeOutcome],
    steps: list[StepResult] | None,
) -> tuple[float | None, float | None, Status]:
    """Reward, uncertainty and status from the judges that ``scored`` (enough of them),
    joined with the steps' reward when there are ``steps``."""
    agg = rubric.aggregation
    weights = rubric.judge_weights
    scores = [s for n in scored if (s := row[n].score) is not None]
    variances = [row[n].variance for n in scored]
    w = [weights[n] for n in scored]
    value: float | None = aggregate.combine(
        rule, scores, w, lam=agg.uwo_lambda, beta=agg.softmin_beta
    )
    spread = aggregate.uncertainty(scores, variances, w)
    status: Status = "ok" if len(scored) == len(names) else "degraded"
    if steps is not None:
        value = process.item_reward(rubric, value, process.process_reward(rubric, steps))
        if status == "ok" and process.item_status(steps) != "ok":
            status = "degraded"
    if value is None:
        return None, spread, "judge_error"
    return _transformed(rubric, value, rollout, flags), spread, status


def _judge_errors(
    names: Sequence[str], scored: list[str], min_judges: int, row: Mapping[str, JudgeOutcome]
) -> str | None:
    """What the judges that gave no score said, with how many did score; None if all did."""
    failed = [f"{n}: {row[n].error}" for n in names if row[n].score is None]
    if not failed:
        return None
    return f"{len(scored)} of {len(names)} judges scored (min_judges {min_judges}); " + "; ".join(
        failed
    )
