"""Domain results as wire models: the one place they are mapped.

The engine, the recipe runner and the comparative scorers return domain results
(``rewardsvc.core``, ``rewardsvc.scoring``); what the routes answer, the CLI prints and
``rewardsvc eval`` reads are the models of ``rewardsvc.protocol``, built here.
"""

from __future__ import annotations

from rewardsvc.core.recipe import ComponentOutcome, RecipeItemReward, RecipeUsage
from rewardsvc.core.results import BatchUsage, ItemReward, JudgeOutcome
from rewardsvc.protocol.comparative import (
    ComparativeUsageOut,
    ComparisonOut,
    GroupJudgeOut,
    GroupResponse,
    GroupResultOut,
    JudgePreferenceOut,
    PreferenceResponse,
    PreferenceResultOut,
)
from rewardsvc.protocol.rewards import (
    ComponentScore,
    CriterionScore,
    JudgeResult,
    RewardResult,
    RubricRef,
    StepScore,
    Usage,
)
from rewardsvc.scoring.group_judges import JudgeGroup
from rewardsvc.scoring.groups import GroupBatch
from rewardsvc.scoring.preferences import PreferenceBatch


def judge_result(outcome: JudgeOutcome) -> JudgeResult:
    """The wire form of one judge's score of one item."""
    return JudgeResult(
        score=outcome.score,
        raw_score=outcome.raw_score,
        variance=outcome.variance,
        criteria={
            cid: CriterionScore(
                score=c.score,
                variance=c.variance,
                p=c.probs,
                error=c.error,
                error_kind=c.error_kind,
                evidence=c.evidence,
            )
            for cid, c in outcome.criteria.items()
        },
        error=outcome.error,
    )


def reward_result(item: ItemReward) -> RewardResult:
    """The wire form of one item's reward under a rubric."""
    return RewardResult(
        id=item.id,
        reward=item.reward,
        status=item.status,
        uncertainty=item.uncertainty,
        judges={name: judge_result(j) for name, j in item.judges.items()},
        flags=item.flags,
        cached=item.cached,
        error=item.error,
        version=item.version,
        steps=None
        if item.steps is None
        else [
            StepScore(
                index=s.index, reward=s.reward, status=s.status, criteria=s.criteria, error=s.error
            )
            for s in item.steps
        ],
    )


def usage_out(usage: BatchUsage | RecipeUsage) -> Usage:
    """The wire form of a batch's usage (a rubric's has no calls avoided by gates)."""
    return Usage.model_validate(usage, from_attributes=True)


def _component(c: ComponentOutcome) -> ComponentScore:
    return ComponentScore(
        kind=c.kind,
        weight=c.weight,
        score=c.score,
        status=c.status,
        evidence=c.evidence,
        judges={name: judge_result(j) for name, j in c.judges.items()},
        uncertainty=c.uncertainty,
        version=c.version,
        skipped=c.skipped,
        error=c.error,
        error_kind=c.error_kind,
    )


def recipe_result(item: RecipeItemReward) -> RewardResult:
    """The wire form of one item's reward under a recipe."""
    return RewardResult(
        id=item.id,
        reward=item.reward,
        status=item.status,
        uncertainty=item.uncertainty,
        flags=item.flags,
        error=item.error,
        components={cid: _component(c) for cid, c in item.components.items()},
        decided_by=item.decided_by,
        vetoed_by=item.vetoed_by,
    )


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
                version=r.version,
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
                version=r.version,
            )
            for r in batch.results
        ],
        usage=ComparativeUsageOut(**vars(batch.usage)),
    )
