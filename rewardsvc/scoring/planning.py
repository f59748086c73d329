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
        for name in names:
            judge, identity = judges[name], identities[name]
            whole = whole_item_of(judge)
            if whole is not None:
                calls.extend(_item_calls(whole, name, identity, rubric, version, pos, p, deadline))
                continue
            calls.extend(
                _episode_calls(judge, name, identity, rubric, version, pos, p, digest, deadline)
            )
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
                key = cache_key(version, identities[name], sc.key, step_digest)
                calls.append(Call(pos, name, sc.key, key, run))
    return calls


def _episode_calls(
    judge: JudgeLike,
    name: str,
    identity: str,
    rubric: Rubric,
    version: str,
    pos: int,
    p: Prepared,
    digest: str,
    deadline: float | None,
) -> list[Call]:
    """One judge's calls on one item's episode criteria."""
    if rubric.combine == "implicit":
        run = functools.partial(judge.score_holistic, rubric, p.rollout, deadline=deadline)
        key = cache_key(version, identity, aggregate.HOLISTIC, digest)
        return [Call(pos, name, aggregate.HOLISTIC, key, run)]
    asked = [c for c in rubric.criteria if c.grader is None and c.scope != "step"]
    calls: list[Call] = []
    batching = batching_of(judge)
    if batching is not None:
        for group in by_view(rubric, asked):
            batch = SharedCall(
                functools.partial(
                    batching.score_criteria, rubric, group, p.rollout, deadline=deadline
                )
            )
            for criterion in group:
                run = functools.partial(batch.verdict, criterion.id)
                key = cache_key(version, identity, criterion.id, digest)
                calls.append(Call(pos, name, criterion.id, key, run, batch))
        return calls
    for criterion in asked:
        run = functools.partial(
            judge.score_criterion, rubric, criterion, p.rollout, deadline=deadline
        )
        key = cache_key(version, identity, criterion.id, digest)
        calls.append(Call(pos, name, criterion.id, key, run))
    return calls


def _item_calls(
    judge: WholeItemJudge,
    name: str,
    identity: str,
    rubric: Rubric,
    version: str,
    pos: int,
    p: Prepared,
    deadline: float | None,
) -> list[Call]:
    """A whole-item judge's calls on one item: one on the item when the rubric has episode
    criteria; for step criteria, one per step, or one per trajectory that all its steps
    share (a process reward model, whose item score is then its last step's, from the same
    call). A step's verdict is keyed by the trajectory up to it, which is all a causal
    model's score at that step depends on."""
    calls: list[Call] = []
    steps = p.rollout.step_count() if rubric.step_criteria else 0
    shared = None
    if steps and judge.scores_steps:
        shared = SharedCall(functools.partial(judge.score_steps, p.rollout, deadline=deadline))
    if any(c.scope != "step" for c in rubric.criteria):
        key = cache_key(version, identity, aggregate.HOLISTIC, p.rollout.digest())
        if shared is not None:
            last = functools.partial(shared.verdict, step_key(aggregate.HOLISTIC, steps - 1))
            calls.append(Call(pos, name, aggregate.HOLISTIC, key, last, shared))
        else:
            run = functools.partial(judge.score_item, p.rollout, deadline=deadline)
            calls.append(Call(pos, name, aggregate.HOLISTIC, key, run))
    for k in range(steps):
        at = p.rollout.at_step(k)
        sk = step_key(aggregate.HOLISTIC, k)
        key = cache_key(version, identity, sk, at.digest())
        if shared is not None:
            calls.append(Call(pos, name, sk, key, functools.partial(shared.verdict, sk), shared))
        else:
            run = functools.partial(judge.score_item, at, deadline=deadline)
            calls.append(Call(pos, name, sk, key, run))
    return calls
