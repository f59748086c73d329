"""Domain results as wire models: the one place they are mapped.

The engine, the recipe runner and the comparative scorers return domain results
(``rewardsvc.core``, ``rewardsvc.scoring``); what the routes answer, the CLI prints and
``rewardsvc eval`` reads are the models of ``rewardsvc.protocol``, built here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from rewardsvc.core.errors import FieldProblem
from rewardsvc.core.recipe import RecipeItemReward
from rewardsvc.core.results import ItemReward, Usage
from rewardsvc.protocol.comparative import (
    ComparativeUsageOut,
    GroupResponse,
    GroupResultOut,
    PreferenceResponse,
    PreferenceResultOut,
)
from rewardsvc.protocol.rejections import placed_at
from rewardsvc.protocol.rewards import ItemProblem, RewardResult, RubricRef
from rewardsvc.protocol.rewards import Usage as UsageOut
from rewardsvc.scoring.groups import GroupBatch
from rewardsvc.scoring.preferences import PreferenceBatch

M = TypeVar("M", bound=BaseModel)


def _out(model: type[M], domain: Any) -> M:
    """``domain`` (a dataclass, nested ones included) read into ``model`` by field name:
    the wire models name their fields as the domain results do."""
    return model.model_validate(domain, from_attributes=True)


def reward_result(item: ItemReward, position: int | None = None) -> RewardResult:
    """The wire form of one item's reward under a rubric, the item at ``position`` of
    the request (None: its error as the engine placed it). A cascaded rubric's judges are
    one row under the cascade's name, each criterion with the ``stage`` that decided it
    (``CriterionScore.stage``)."""
    return _placed(_out(RewardResult, item), item.problems, position)


def rejected_result(item_id: str, problems: Sequence[FieldProblem], position: int) -> RewardResult:
    """The wire form of an item rejected before scoring, at ``position`` of the request."""
    result = RewardResult(id=item_id, reward=None, status="rejected")
    return _placed(result, problems, position)


def _placed(
    result: RewardResult, problems: Sequence[FieldProblem], position: int | None
) -> RewardResult:
    """``result`` with its problems as data, and its error naming them at ``position``
    of the request (wherever in a part of the batch the item was scored)."""
    if not problems:
        return result
    found = [ItemProblem(loc=list(p.loc), message=p.message) for p in problems]
    result = result.model_copy(update={"problems": found})
    return result if position is None else placed_at(result, position)


def usage_out(usage: Usage, rewards: int = 0) -> UsageOut:
    """The wire form of a batch's usage of ``rewards`` results (a rubric's has no calls
    avoided by gates), with its cost per reward; a cascaded rubric's with each stage's work
    (``usage.stages``)."""
    out = _out(UsageOut, usage)
    if usage.cost is not None and rewards:
        out.cost_per_reward = usage.cost / rewards
    return out


def recipe_result(item: RecipeItemReward, position: int | None = None) -> RewardResult:
    """The wire form of one item's reward under a recipe, the item at ``position`` of
    the request (None: its error as the runner wrote it)."""
    return _placed(_out(RewardResult, item), item.problems, position)


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
