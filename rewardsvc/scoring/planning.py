"""Planning a batch's judge calls: one per (item, judge, criterion), or one holistic call
per (item, judge) for ``combine: implicit``, or one call answering all criteria per
(item, judge, view) for a judge with method ``batched``, plus one per (step, criterion,
judge) for step criteria. A judge that scores whole items (a reward model) is asked no
criteria: one call per item, under ``aggregate.HOLISTIC``, and for step criteria one per
step (``HOLISTIC@stepK``, the trajectory up to step K as the item) or, for a process reward
model, one per trajectory shared by its steps and the item. Each call carries its
verdict-cache key.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from rewardsvc.core import aggregate
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.trajectory import step_key
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.batching import SharedCall, by_view
from rewardsvc.scoring import steps
from rewardsvc.scoring.judging import JudgeLike, WholeItemJudge, batching_of, whole_item_of
from rewardsvc.scoring.pacing import Pacer
from rewardsvc.storage.cache import cache_key


@dataclass
class Prepared:
    """An item that passed the request-level checks, with its detector flags."""

    index: int
    id: str
    rollout: Rollout
    flags: list[str]


@dataclass
class Call:
    """One planned judge call (or one criterion's share of a batched call)."""

    item: int  # position in the prepared list
    judge: str
    criterion: str
    key: bytes
    run: Callable[[], Awaitable[Verdict]]
    batch: SharedCall | None = None  # the call this verdict shares with its item's other criteria


@dataclass(frozen=True)
class _Slot:
    """One judge's place in one item's plan: what every call it makes there is keyed by."""

    name: str
    identity: str
    version: str
    pos: int
    item: Prepared
    digest: str  # the item's, hashed once for all its judges
    deadline: float | None

    def call(
        self,
        criterion: str,
        digest: str,
        run: Callable[[], Awaitable[Verdict]],
        batch: SharedCall | None = None,
    ) -> Call:
        """The call answering ``criterion`` about the rollout of ``digest``."""
        key = cache_key(self.version, self.identity, criterion, digest)
        return Call(self.pos, self.name, criterion, key, run, batch)


async def plan(
    judges: Mapping[str, JudgeLike],
    rubric: Rubric,
    version: str,
    names: list[str],
    prepared: list[Prepared],
    deadline: float | None,
    pacer: Pacer,
) -> list[Call]:
    """One call per (item, judge, criterion), item-major so that the calls for one
    item reach a judge together and share its prefix cache; for a judge that batches
    criteria, one call per (item, judge, view) answering all its criteria. Step
    criteria keep one call per (step, criterion)."""
    identities = {name: judges[name].cache_identity() for name in names}
    calls: list[Call] = []
    for pos, p in enumerate(prepared):
        await pacer.step()
        digest = p.rollout.digest()
        slots = {n: _Slot(n, identities[n], version, pos, p, digest, deadline) for n in names}
        for name in names:
            whole = whole_item_of(judges[name])
            if whole is not None:
                calls.extend(_item_calls(whole, rubric, slots[name]))
            else:
                calls.extend(_episode_calls(judges[name], rubric, slots[name]))
        # Process rewards: step-major, so that consecutive steps of one trajectory
        # reach a judge in order and reuse its prefix cache.
        asked = [n for n in names if whole_item_of(judges[n]) is None]
        for sc in steps.plan(rubric, p.rollout):
            step_digest = sc.rollout.digest()
            for name in asked:
                run = functools.partial(
                    judges[name].score_criterion,
                    rubric,
                    sc.criterion,
                    sc.rollout,
                    deadline=deadline,
                )
                calls.append(slots[name].call(sc.key, step_digest, run))
    return calls


def _episode_calls(judge: JudgeLike, rubric: Rubric, slot: _Slot) -> list[Call]:
    """One judge's calls on one item's episode criteria."""
    rollout, deadline, digest = slot.item.rollout, slot.deadline, slot.digest
    if rubric.implicit_combine:
        run = functools.partial(judge.score_holistic, rubric, rollout, deadline=deadline)
        return [slot.call(aggregate.HOLISTIC, digest, run)]
    asked = [c for c in rubric.criteria if c.asks_judges]
    batching = batching_of(judge)
    if batching is None:
        return [
            slot.call(
                c.id,
                digest,
                functools.partial(judge.score_criterion, rubric, c, rollout, deadline=deadline),
            )
            for c in asked
        ]
    calls: list[Call] = []
    for group in by_view(rubric, asked):
        batch = SharedCall(
            functools.partial(batching.score_criteria, rubric, group, rollout, deadline=deadline)
        )
        for criterion in group:
            run = functools.partial(batch.verdict, criterion.id)
            calls.append(slot.call(criterion.id, digest, run, batch))
    return calls


def _item_calls(judge: WholeItemJudge, rubric: Rubric, slot: _Slot) -> list[Call]:
    """A whole-item judge's calls on one item: one on the item when the rubric has episode
    criteria; for step criteria, one per step, or one per trajectory that all its steps
    share (a process reward model, whose item score is then its last step's, from the same
    call). A step's verdict is keyed by the trajectory up to it, which is all a causal
    model's score at that step depends on."""
    rollout, deadline = slot.item.rollout, slot.deadline
    calls: list[Call] = []
    steps = rollout.step_count() if rubric.step_criteria else 0
    shared = None
    if steps and judge.scores_steps:
        shared = SharedCall(functools.partial(judge.score_steps, rollout, deadline=deadline))
    if rubric.has_episode_criteria:
        if shared is not None:
            last = functools.partial(shared.verdict, step_key(aggregate.HOLISTIC, steps - 1))
            calls.append(slot.call(aggregate.HOLISTIC, slot.digest, last, shared))
        else:
            run = functools.partial(judge.score_item, rollout, deadline=deadline)
            calls.append(slot.call(aggregate.HOLISTIC, slot.digest, run))
    for k in range(steps):
        at = rollout.at_step(k)
        sk = step_key(aggregate.HOLISTIC, k)
        if shared is not None:
            calls.append(slot.call(sk, at.digest(), functools.partial(shared.verdict, sk), shared))
        else:
            run = functools.partial(judge.score_item, at, deadline=deadline)
            calls.append(slot.call(sk, at.digest(), run))
    return calls
