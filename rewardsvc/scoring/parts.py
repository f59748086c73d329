"""A batch in parts: the items scored with one rubric each.

Items may bring their own rubric (the batch rubric with the item's criteria: see
``core.item_rubric``); the engine judges each part with its rubric, then calibrates the
whole batch against one window (the batch rubric's), so that a reward depends neither on
how the batch splits nor on the order of its items, and assembles each part again with
its own rubric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rewardsvc.core.results import JudgeOutcome
from rewardsvc.core.rollout import ItemIn
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders.result import GraderResult
from rewardsvc.scoring.cascade import Decided
from rewardsvc.scoring.planning import Call, Prepared
from rewardsvc.scoring.serving import Outcome


@dataclass
class Part:
    """The items of a batch scored with ``rubric``, at ``positions`` in the batch, and
    what judging them gave (filled by the engine as it goes)."""

    rubric: Rubric
    positions: list[int]
    own: bool = False
    """Whether ``rubric`` is the items' own (not the batch's)."""
    prepared: list[Prepared] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    """The judge calls planned for ``prepared`` (``Call.item`` indexes it)."""
    verdicts: list[dict[str, dict[str, Outcome]]] = field(default_factory=list)
    graded: list[dict[str, GraderResult]] = field(default_factory=list)
    rows: list[dict[str, JudgeOutcome]] = field(default_factory=list)
    decided: list[dict[str, Decided]] = field(default_factory=list)
    """A cascaded rubric's: which stage decided each criterion of each item."""


def split(rubric: Rubric, items: Sequence[ItemIn]) -> list[Part]:
    """The parts of a batch, in order of first appearance: the batch rubric's items, and
    one part per distinct rubric the items bring (items of one prompt share theirs)."""
    parts: dict[str, Part] = {}
    for n, item in enumerate(items):
        scored_with = item.rubric or rubric
        key = scored_with.version()
        part = parts.get(key)
        if part is None:
            part = parts[key] = Part(scored_with, [], key != rubric.version())
        part.positions.append(n)
    return list(parts.values())
