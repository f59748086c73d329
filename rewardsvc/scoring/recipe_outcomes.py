"""What one component's result becomes in an item's recipe breakdown.

A grader's outcome carries the flags the grader raised (the tamper detector's, on the
code it ran), its score less their penalties (:mod:`~rewardsvc.scoring.penalties`): a
flagged grader then fails its gate or veto as a flagged judged component does, whose
rubric's transforms took its flags off its score already.
"""

from __future__ import annotations

from collections.abc import Mapping

from rewardsvc.core.recipe import Component, ComponentOutcome
from rewardsvc.core.results import ItemReward
from rewardsvc.graders.result import GraderResult
from rewardsvc.scoring.penalties import penalised_grader_score

__all__ = ["graded", "judged"]


def graded(
    component: Component, result: GraderResult, penalties: Mapping[str, float]
) -> ComponentOutcome:
    """A grader's outcome, its score less the penalties of the flags it raised (as a
    rubric's flags cost its score), so that its gates and vetoes see them."""
    score, evidence = result.score, result.evidence
    if score is not None and result.flags:
        score = penalised_grader_score(score, result.flags, penalties)
        evidence = {**evidence, "score_before_flags": result.score}
    return ComponentOutcome(
        "grader",
        component.weight,
        score,
        status="ok" if score is not None else "judge_error",
        evidence=evidence,
        error=result.error,
        error_kind=result.verdict().error_kind,
        flags=result.flags,
    )


def judged(component: Component, version: str, reward: ItemReward) -> ComponentOutcome:
    """A judged component's outcome: its batch's reward of the item."""
    return ComponentOutcome(
        component.kind,
        component.weight,
        reward.reward,
        status=reward.status,
        judges=reward.judges,
        uncertainty=reward.uncertainty,
        version=version,
        error=reward.error,
    )
