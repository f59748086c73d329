"""Planning comparisons: the groups and options of a request, the questions asked, the
orders each group is shown in, which groups cannot be scored, and the work a request plans
(for the service's limits, before anything is rendered)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rewardsvc.core import aggregate
from rewardsvc.core import comparative as cmp
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, JudgeRule, Rubric
from rewardsvc.judges import prompts
from rewardsvc.judges.comparative import asks_for_worst

Method = Literal["listwise", "pairwise"]


@dataclass(frozen=True)
class GroupIn:
    """One group: the rollouts of its completions (same prompt and reference), or why it
    was rejected before scoring."""

    id: str
    rollouts: tuple[Rollout, ...] = ()
    error: str | None = None
    rubric: Rubric | None = None
    """The group's own rubric (the batch rubric with its criteria); None: the batch's."""


@dataclass(frozen=True)
class GroupOptions:
    """How to compare: method, tournament and its pair budget, listwise orders, overrides."""

    method: Method = "listwise"
    tournament: cmp.Tournament = "circular"
    orders: int = 2
    pairs: int | None = None
    judges: tuple[str, ...] | None = None
    rule: JudgeRule | None = None
    min_judges: int | None = None
    seed: int | None = None
    use_cache: bool = True


def worst_questions(rubric: Rubric) -> dict[str, bool]:
    """Per comparison question, whether its judge is asked which completion is worst."""
    return {key: asks_for_worst(rubric, c) for key, c in questions(rubric)}


def questions(rubric: Rubric) -> list[tuple[str, Criterion | None]]:
    """The comparison questions: one per criterion, or one holistic for ``implicit``."""
    if rubric.implicit_combine:
        return [(aggregate.HOLISTIC, None)]
    return [(c.id, c) for c in rubric.criteria]


def presentations(
    n: int, options: GroupOptions, rng: random.Random
) -> list[tuple[str, tuple[int, ...]]]:
    """The presentation orders of a group of ``n``: each listwise order, or each pair of the
    tournament in both orders (``ab``, ``ba``)."""
    if options.method == "listwise":
        return [(f"order{k + 1}", o) for k, o in enumerate(cmp.plan_orders(n, options.orders, rng))]
    shows: list[tuple[str, tuple[int, ...]]] = []
    for i, j in cmp.plan_pairs(n, options.tournament, rng, options.pairs):
        shows += [("ab", (i, j)), ("ba", (j, i))]
    return shows


def planned_work(
    rubric: Rubric, groups: Sequence[GroupIn], options: GroupOptions, max_text_chars: int
) -> tuple[int, int]:
    """The judge calls a request plans and the prompt bytes they carry at most (for the
    service's work limits, before anything is rendered): the groups that will be scored,
    with the orders and pairs they will be shown in."""
    judges = len(options.judges) if options.judges else len(rubric.judges)
    calls = size = 0
    for gi, group in enumerate(groups):
        if reject_reason(group, gi, options, max_text_chars) is not None:
            continue
        own = group.rubric or rubric
        asked = judges * len(questions(own))
        base = group.rollouts[0]
        shared = (
            prompts.CALL_OVERHEAD_BYTES
            + prompts.rubric_bytes(own)
            + prompts.text_bytes(base.prompt, base.reference)
        )
        each = [prompts.text_bytes(r.completion) for r in group.rollouts]
        for _, shown in presentations(
            len(each), options, cmp.rng_for(plan_seed(group, options.seed))
        ):
            calls += asked
            size += asked * (shared + sum(each[k] for k in shown))
    return calls, size


def reject_reason(group: GroupIn, index: int, options: GroupOptions, max_chars: int) -> str | None:
    if group.error is not None:
        return group.error
    n = len(group.rollouts)
    if n < 2:
        return f"groups[{index}].completions: a group needs at least 2 completions, not {n}"
    if options.method == "listwise" and n > cmp.MAX_LISTWISE:
        return (
            f"groups[{index}].completions: {n} completions, more than {cmp.MAX_LISTWISE} for "
            "one listwise call; use method pairwise"
        )
    for k, r in enumerate(group.rollouts):
        for name, text in (("prompt", r.prompt), ("completion", r.completion)):
            if len(text) > max_chars:
                where = name if name == "prompt" else f"completions[{k}]"
                return f"groups[{index}].{where}: {len(text)} characters, over {max_chars}"
    return None


def plan_seed(group: GroupIn, seed: int | None) -> str:
    """Plans are seeded by the group's content: the same group gets the same orders."""
    h = hashlib.sha256(str(seed).encode())
    for r in group.rollouts:
        h.update(r.digest().encode())
    return h.hexdigest()
