"""Domain results as wire models: the one place they are mapped.

The engine, the recipe runner and the comparative scorers return domain results
(``rewardsvc.core``, ``rewardsvc.scoring``); what the routes answer, the CLI prints and
``rewardsvc eval`` reads are the models of ``rewardsvc.protocol``, built here.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from rewardsvc.core.recipe import RecipeItemReward
from rewardsvc.core.results import ItemReward, Usage
from rewardsvc.protocol.comparative import (
    ComparativeUsageOut,
    GroupResponse,
    GroupResultOut,
    PreferenceResponse,
    PreferenceResultOut,
)
from rewardsvc.protocol.rewards import RewardResult, RubricRef
from rewardsvc.protocol.rewards import Usage as UsageOut
from rewardsvc.scoring.groups import GroupBatch
from rewardsvc.scoring.preferences import PreferenceBatch

M = TypeVar("M", bound=BaseModel)


def _out(model: type[M], domain: Any) -> M:
    """``domain`` (a dataclass, nested ones included) read into ``model`` by field name:
    the wire models name their fields as the domain results do."""
    return model.model_validate(domain, from_attributes=True)


def reward_result(item: ItemReward) -> RewardResult:
    """The wire form of one item's reward under a rubric."""
    return _out(RewardResult, item)


def usage_out(usage: Usage, rewards: int = 0) -> UsageOut:
    """The wire form of a batch's usage of ``rewards`` results (a rubric's has no calls
    avoided by gates), with its cost per reward."""
    out = _out(UsageOut, usage)
    if usage.cost is not None and rewards:
        out.cost_per_reward = usage.cost / rewards
    return out


def recipe_result(item: RecipeItemReward) -> RewardResult:
    """The wire form of one item's reward under a recipe."""
    return _out(RewardResult, item)


def group_response(batch: GroupBatch) -> GroupResponse:
    """The wire form of scored groups."""
    return GroupResponse(
        rubric=RubricRef(id=batch.rubric_id, version=batch.version),
        method=batch.method,
        results=[_out(GroupResultOut, r) for r in batch.results],
        usage=_out(ComparativeUsageOut, batch.usage),
    )


def preference_response(batch: PreferenceBatch) -> PreferenceResponse:
    """The wire form of judged pairs."""
    return PreferenceResponse(
        rubric=RubricRef(id=batch.rubric_id, version=batch.version),
        results=[_out(PreferenceResultOut, r) for r in batch.results],
        usage=_out(ComparativeUsageOut, batch.usage),
    )
