"""The request-level checks of a batch's items, before their judge calls are planned.

Each item is checked on its own: one without a rollout (it was malformed), with a text
longer than the engine's ``max_text_chars``, or without the reference its rubric requires
is ``rejected`` with a message naming the field; the rest go on to planning as
:class:`~rewardsvc.scoring.planning.Prepared` items.
"""

from __future__ import annotations

from collections.abc import Sequence

from rewardsvc.core.results import ItemReward
from rewardsvc.core.rollout import ItemIn
from rewardsvc.core.rubric import Rubric
from rewardsvc.scoring.pacing import Pacer
from rewardsvc.scoring.planning import Prepared


def prepare(rubric: Rubric, index: int, item: ItemIn, max_text_chars: int) -> Prepared | ItemReward:
    """The item at ``index`` ready to plan, or its ``rejected`` result."""

    def reject(message: str) -> ItemReward:
        return ItemReward(id=item.id, reward=None, status="rejected", error=message)

    if item.rollout is None:
        return reject(item.error or "item rejected")
    rollout = item.rollout
    prefix = f"items[{index}]"
    texts = {
        "prompt": rollout.prompt,
        "completion": rollout.completion,
        "reference": rollout.reference,
    }
    for name, text in texts.items():
        if text is not None and len(text) > max_text_chars:
            return reject(
                f"{prefix}.{name}: {len(text)} characters, more than the limit of "
                f"{max_text_chars} (max_text_chars)"
            )
    if rubric.requires_reference and rollout.reference is None:
        return reject(f"{prefix}.reference: rubric {rubric.id!r} requires a reference")
    return Prepared(index, item.id, rollout, [])


async def prepare_all(
    rubric: Rubric,
    items: Sequence[ItemIn],
    positions: Sequence[int],
    results: list[ItemReward | None],
    max_text_chars: int,
    pacer: Pacer,
) -> list[Prepared]:
    """The items at ``positions`` that pass the request-level checks; the rest go to
    ``results``."""
    prepared: list[Prepared] = []
    for index in positions:
        await pacer.step()
        outcome = prepare(rubric, index, items[index], max_text_chars)
        if isinstance(outcome, Prepared):
            prepared.append(outcome)
        else:
            results[index] = outcome
    return prepared
