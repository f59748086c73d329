"""A rejected sample's field as each trainer protocol (and ORS) names it, read from data.

A rejected result carries its problems placed within the item (``RewardResult.problems``:
``["reference"]``, ``["criteria", 2, "text"]``); a trainer route names the field of its
own request that holds that item field, by one table per protocol keyed by the item's
field (its first key), the rest of the place kept (``label.criteria[2].text``). No error
text is read: a message that happens to start with a field's name names nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from rewardsvc.core.errors import FieldProblem, placed
from rewardsvc.protocol.rewards import ItemProblem, RewardResult

ItemFields = Mapping[str, str]
"""A protocol's name of each item field (``completion``, ``reference``, ...)."""

SLIME_FIELDS: ItemFields = {
    "completion": "response",
    "reference": "label",
    "prompt": "prompt",
    "criteria": "label.criteria",
}
"""slime's ``{prompt, response, label}``; a sample's own rubric rides in its label."""

ROLL_FIELDS: ItemFields = {
    "completion": "response",
    "reference": "reward_info.ground_truth",
    "prompt": "prompt",
    "criteria": "reward_info.criteria",
}
"""ROLL's submit body: the reference is ``reward_info["ground_truth"]``."""


def nemo_gym_fields(reference_field: str, criteria_field: str) -> ItemFields:
    """NeMo Gym's verify request: the reference and criteria in the fields the route was
    told (query parameters), the task in ``responses_create_params``."""
    return {
        "completion": "response.output",
        "reference": reference_field,
        "prompt": "responses_create_params",
        "criteria": criteria_field,
    }


ORS_FIELDS: ItemFields = {
    "completion": "answer",
    "reference": "task.reference",
    "prompt": "task.prompt",
    "criteria": "task.criteria",
}
"""ORS's answer tool: the policy sends ``answer``; the rest is the environment's task."""


def placed_at(result: RewardResult, position: int) -> RewardResult:
    """``result`` with its error naming its problems at ``position`` of the request
    (``items[3].reference: ...``), whatever part of the request it was scored in."""
    if not result.problems:
        return result
    problems = [FieldProblem(tuple(p.loc), p.message) for p in result.problems]
    return result.model_copy(update={"error": placed(("items", position), problems)})


def their_field(result: RewardResult, fields: ItemFields, default: str) -> tuple[str, str]:
    """The protocol's field at fault in ``result`` (rejected: ``label``, the field the
    first problem's item field maps to) and the message placing its problems there
    (``label.criteria[0].weight: ...``); ``default`` and the whole error when the first
    is of the item as a whole or of a field the protocol does not send."""
    problems = result.problems or []
    first = problems[0].loc if problems else []
    theirs = fields.get(str(first[0])) if first else None
    if theirs is None:
        return default, result.error or "the sample cannot be scored"
    return theirs, "; ".join(_there(p, fields, default) for p in problems)


def _there(problem: ItemProblem, fields: ItemFields, default: str) -> str:
    """One problem placed at the protocol's field (``default`` for a field it lacks)."""
    if not problem.loc:
        return str(FieldProblem((default,), problem.message))
    theirs = fields.get(str(problem.loc[0]), default)
    return str(FieldProblem((theirs, *problem.loc[1:]), problem.message))
