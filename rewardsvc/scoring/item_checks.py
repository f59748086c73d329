"""The engine's request-level checks of one item, made when a batch is planned.

An item the server could not read, with a text longer than ``max_text_chars`` or without
the reference its rubric requires is rejected on its own, before any judge call: its
:class:`~rewardsvc.core.errors.FieldProblem` holds the field at fault relative to the item
(``("reference",)``), so that every protocol names it from data, and the request's
position is added where the batch's place in the request is known.
"""

from __future__ import annotations

from collections.abc import Sequence

from rewardsvc.core.errors import FieldProblem, placed
from rewardsvc.core.results import ItemReward
from rewardsvc.core.rollout import ItemIn
from rewardsvc.core.rubric import Rubric
from rewardsvc.scoring.pacing import Pacer
from rewardsvc.scoring.planning import Prepared


def check_item(
    rubric: Rubric, index: int, item: ItemIn, max_text_chars: int
) -> Prepared | ItemReward:
    """``item`` (at ``index`` of the batch) prepared for planning, or rejected."""

    def reject(problem: FieldProblem) -> ItemReward:
        error = placed(("items", index), [problem])
        return ItemReward(item.id, None, "rejected", error=error, problems=(problem,))

    if item.rollout is None:  # not read: its error names its place in the request
        error = item.error or "item rejected"
        return ItemReward(item.id, None, "rejected", error=error, problems=item.problems)
    rollout = item.rollout
    texts = {
        "prompt": rollout.prompt,
        "completion": rollout.completion,
        "reference": rollout.reference,
    }
    for name, text in texts.items():
        if text is not None and len(text) > max_text_chars:
            too_long = f"{len(text)} characters, more than the limit of {max_text_chars}"
            return reject(FieldProblem((name,), f"{too_long} (max_text_chars)"))
    if rubric.requires_reference and rollout.reference is None:
        return reject(FieldProblem(("reference",), f"rubric {rubric.id!r} requires a reference"))
    return Prepared(index, item.id, rollout, [])


async def checked(
    rubric: Rubric,
    items: Sequence[ItemIn],
    positions: Sequence[int],
    results: list[ItemReward | None],
    pacer: Pacer,
    max_text_chars: int,
) -> list[Prepared]:
    """The items at ``positions`` that pass the checks; the rest go to ``results``."""
    prepared: list[Prepared] = []
    for index in positions:
        await pacer.step()
        outcome = check_item(rubric, index, items[index], max_text_chars)
        if isinstance(outcome, Prepared):
            prepared.append(outcome)
        else:
            results[index] = outcome
    return prepared
