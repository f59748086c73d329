"""Comparative scoring: groups of completions of one prompt, and preference pairs.

:func:`score_groups` plans, for each judge of the rubric and each criterion (one holistic
question for ``combine: implicit``), the comparison calls of every group: ``listwise``
asks each of ``orders`` presentation orders once; ``pairwise`` asks every pair of the
tournament in both orders. All calls run concurrently (each judge's backend enforces its
own concurrency limit). Per judge and criterion the answers become win rates within the
group (``rewardsvc.core.comparative``); the criteria combine with their absolute weights
(``explicit`` and ``implicit``) or by the lowest (``worst``); the judges combine per
completion by the rubric's rule, and the rubric's transforms apply last.

:func:`judge_preferences` asks each pair in both orders and reports P(a better) per order,
their mean, whether they agree, and a label.

Failures are honest: a judge with any failed call contributes nothing to that group (never
a 0); with fewer than ``min_judges`` judges left a group's rewards are all None with status
``judge_error``; fewer than all but enough is ``degraded``. A group that cannot be scored
(fewer than 2 completions, too many for one listwise call, text over the limit) is
``rejected`` on its own. Results are plain dataclasses; the server maps them to its wire.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from rewardsvc.core import aggregate
from rewardsvc.core import comparative as cmp
from rewardsvc.core.observe import NULL_OBSERVER, Observer
from rewardsvc.core.results import BatchResult, ItemReward, Status, Usage
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import prompts
from rewardsvc.judges.comparative import (
    FencedGroup,
    ask,
    fenced_group,
    group_prompt,
)
from rewardsvc.judges.judge import Judge
from rewardsvc.safety.defuse import Defuser
from rewardsvc.safety.detectors import detect
from rewardsvc.scoring import penalties
from rewardsvc.scoring.group_judges import (
    Comparison,
    JudgeGroup,
    listwise_judge,
    pairwise_judge,
)
from rewardsvc.scoring.group_plan import (
    GroupIn,
    GroupOptions,
    Method,
    plan_seed,
    presentations,
    questions,
    reject_reason,
    worst_questions,
)
from rewardsvc.scoring.pacing import Pacer, run_calls
from rewardsvc.scoring.selection import min_judges_for, select_judges
from rewardsvc.storage.cache import Source, VerdictCache, cache_key

log = logging.getLogger(__name__)

Ask = Callable[[Judge, prompts.Prompt, float | None], Awaitable[Verdict]]


@dataclass
class GroupReward:
    """Rewards of one group, in input order, with status, uncertainty and breakdown."""

    id: str
    rewards: list[float | None]
    status: Status
    position_consistency: float | None = None
    uncertainty: list[float] | None = None
    judges: dict[str, JudgeGroup] = field(default_factory=dict)
    flags: list[list[str]] = field(default_factory=list)
    error: str | None = None
    version: str | None = None
    """The version of the group's own rubric, when it brought criteria."""


class Comparing(TypedDict, total=False):
    """How a comparative request is run beyond its rubric, groups and options: the keywords
    of :func:`score_groups` (defaults there), which callers pass on as one."""

    max_text_chars: int
    deadline: float | None
    asker: Ask
    cache: VerdictCache | None
    observer: Observer
    run: str | None


@dataclass
class GroupBatch:
    """Every group's result in input order, and the rubric that gave them."""

    rubric_id: str
    version: str
    method: Method
    results: list[GroupReward]
    usage: Usage


# ------------------------------------------------------------------ running the calls


def _probs(verdict: Verdict, n: int) -> list[float] | None:
    if not verdict.ok or verdict.probs is None:
        return None
    return [verdict.probs.get(cmp.LABELS[k], 0.0) for k in range(n)]


# ------------------------------------------------------------------ groups


@dataclass
class _Planned:
    group: int
    judge: str
    comparison: Comparison
    criterion: Criterion | None
    source: Source = "call"  # or from the cache, or an identical call in flight


def _plan_group(
    rubric: Rubric, group: GroupIn, gi: int, names: list[str], options: GroupOptions
) -> list[_Planned]:
    shows = presentations(len(group.rollouts), options, cmp.rng_for(plan_seed(group, options.seed)))
    return [
        _Planned(gi, name, Comparison(key, tuple(shown), order), criterion)
        for name in names
        for key, criterion in questions(rubric)
        for order, shown in shows
    ]


Fenced = dict[Defuser, FencedGroup]


def _fenced(group: GroupIn, defusers: Sequence[Defuser]) -> Fenced:
    """The group's texts fenced once per defuser its judges use (not once per call)."""
    base = group.rollouts[0]
    completions = [r.completion for r in group.rollouts]
    return {d: fenced_group(base.prompt, completions, base.reference, d) for d in defusers}


Keyed = dict[tuple[int, str], list[Comparison]]


async def _collect(
    planned: Sequence[_Planned], verdicts: Sequence[Verdict]
) -> tuple[Usage, Keyed, dict[tuple[int, str], list[str]]]:
    """The answers per (group, judge), the failed calls among them, and the work done (a
    cache hit is no call, nor is a verdict shared with an identical call in flight)."""
    usage = Usage()
    per: Keyed = {}
    failures: dict[tuple[int, str], list[str]] = {}
    pacer = Pacer()
    for p, v in zip(planned, verdicts, strict=True):
        await pacer.step()
        if p.source == "call":
            usage.called(v, p.comparison.order)
        elif p.source == "hit":
            usage.cache_hits += 1
        c = p.comparison
        c.p, c.error, c.error_kind = _probs(v, len(c.shown)), v.error, v.error_kind
        per.setdefault((p.group, p.judge), []).append(c)
        if c.p is None:
            failures.setdefault((p.group, p.judge), []).append(
                f"{c.criterion} {c.order}: {v.error}"
            )
    return usage, per, failures


def _call_of(
    p: _Planned,
    judge: Judge,
    rubric: Rubric,
    fenced: dict[int, Fenced],
    deadline: float | None,
    asker: Ask,
    cache: VerdictCache | None,
) -> Callable[[], Awaitable[Verdict]]:
    """One planned comparison as a call: its prompt is put together only when its judge
    has a turn for it; through ``cache`` when there is one (the request's ``use_cache``)."""

    def render() -> prompts.Prompt:
        group = fenced[p.group][judge.defuser]
        return group_prompt(rubric, p.criterion, group, p.comparison.shown, judge.shape)

    async def call() -> Verdict:
        async with judge.turn(deadline) as late:
            if late is not None:
                judge.observer.judge_call(judge.name, late)
                return late
            return await asker(judge, render(), deadline)

    if cache is None:
        return call

    async def cached() -> Verdict:
        key = comparison_key(rubric.version(), judge.cache_identity(), p.comparison, render())
        verdict, p.source = await cache.get_or_call(key, call)
        return verdict

    return cached


def _plan(
    rubric: Rubric,
    groups: Sequence[GroupIn],
    names: list[str],
    options: GroupOptions,
    max_text_chars: int,
    defusers: Sequence[Defuser],
) -> tuple[list[GroupReward | None], list[_Planned], dict[int, Fenced]]:
    """Every group's calls and fenced texts; a group rejected outright has its result."""
    results: list[GroupReward | None] = [None] * len(groups)
    planned: list[_Planned] = []
    fenced: dict[int, Fenced] = {}
    for gi, group in enumerate(groups):
        reason = reject_reason(group, gi, options, max_text_chars)
        if reason is not None:
            results[gi] = GroupReward(
                group.id, [None] * len(group.rollouts), "rejected", error=reason
            )
            continue
        planned += _plan_group(group.rubric or rubric, group, gi, names, options)
        fenced[gi] = _fenced(group, defusers)
    return results, planned, fenced


async def score_groups(
    judges: Mapping[str, Judge],
    rubric: Rubric,
    groups: Sequence[GroupIn],
    options: GroupOptions | None = None,
    *,
    max_text_chars: int = 100_000,
    deadline: float | None = None,
    asker: Ask = ask,
    cache: VerdictCache | None = None,
    observer: Observer = NULL_OBSERVER,
    run: str | None = None,
) -> GroupBatch:
    """Rewards of every group, relative within the group, in input order.

    Verdicts are read from and written to ``cache`` (unless ``options.use_cache`` is
    off); the rewards are reported to ``observer`` (``groups``) under ``run``.

    Raises :class:`RequestError` for request-level problems (unknown judges, ``min_judges``
    above the judges selected); a group that cannot be scored is ``rejected`` alone.
    """
    started = time.perf_counter()
    options = options or GroupOptions()
    names = select_judges(rubric, judges, options.judges)
    bar = min_judges_for(rubric, options.min_judges, len(names))
    defusers = list(dict.fromkeys(judges[name].defuser for name in names))

    # Planning and fencing a large request takes a while: off the event loop. Each call's
    # prompt is put together only when its judge has a turn for it (``call_of``).
    results, planned, fenced = await asyncio.to_thread(
        _plan, rubric, groups, names, options, max_text_chars, defusers
    )

    version = rubric.version()
    store = cache if options.use_cache else None
    calls = [
        _call_of(
            p, judges[p.judge], groups[p.group].rubric or rubric, fenced, deadline, asker, store
        )
        for p in planned
    ]
    verdicts = await run_calls(calls, deadline)
    usage, per, failures = await _collect(planned, verdicts)

    def assemble() -> None:
        for gi, group in enumerate(groups):
            if results[gi] is None:
                own = group.rubric or rubric
                reward = _assemble_group(own, group, names, bar, options, per, failures, gi)
                if own is not rubric:
                    reward.version = own.version()
                results[gi] = reward

    await asyncio.to_thread(assemble)  # detectors and fits over every completion
    usage.latency_ms = (time.perf_counter() - started) * 1000.0
    batch = GroupBatch(rubric.id, version, options.method, [r for r in results if r], usage)
    observer.groups(rubric.id, monitored(batch, groups, run))
    return batch


def comparison_key(
    version: str, identity: str, comparison: Comparison, prompt: prompts.Prompt
) -> bytes:
    """The verdict-cache key of one comparison call: the judge's identity, the question,
    the order shown and the exact rendered prompt (the same texts shown in another order
    are another question to the judge, and another key)."""
    rendered = json.dumps([prompt.messages, prompt.text], sort_keys=True)
    digest = hashlib.sha256(rendered.encode()).hexdigest()
    shown = ",".join(map(str, comparison.shown))
    return cache_key(version, identity, f"compare:{comparison.criterion}:{shown}", digest)


def monitored(batch: GroupBatch, groups: Sequence[GroupIn], run: str | None) -> BatchResult:
    """The groups' rewards as one batch of items (one per completion) for the monitor."""
    items = [
        ItemReward(
            f"{r.id}[{i}]",
            reward,
            r.status,
            r.uncertainty[i] if r.uncertainty else None,
            flags=r.flags[i] if i < len(r.flags) else [],
            completion_chars=len(g.rollouts[i].completion) if i < len(g.rollouts) else 0,
            group=str(gi),
        )
        for gi, (g, r) in enumerate(zip(groups, batch.results, strict=True))
        for i, reward in enumerate(r.rewards)
    ]
    return BatchResult(batch.rubric_id, batch.version, items, batch.usage, run)


def _flags(rollout: Rollout) -> list[str]:
    try:
        return sorted(set(detect(rollout)))
    except Exception:
        # A detector bug must not sink the group; the completion is scored without flags.
        log.exception("detectors failed")
        return []


def _assemble_group(
    rubric: Rubric,
    group: GroupIn,
    names: list[str],
    bar: int,
    options: GroupOptions,
    per: dict[tuple[int, str], list[Comparison]],
    failures: dict[tuple[int, str], list[str]],
    gi: int,
) -> GroupReward:
    n = len(group.rollouts)
    worst = worst_questions(rubric)
    build = listwise_judge if options.method == "listwise" else pairwise_judge
    outcomes: dict[str, JudgeGroup] = {}
    for name in names:
        comps = per.get((gi, name), [])
        failed = failures.get((gi, name))
        if failed:
            # Any failed call: the judge's view of this group is incomplete, so it gives none.
            outcomes[name] = JudgeGroup(
                None,
                comparisons=comps,
                error=f"{len(failed)} of {len(comps)} calls failed: " + "; ".join(failed[:3]),
            )
        else:
            outcomes[name] = build(rubric, n, comps, worst)
    flags = [_flags(r) for r in group.rollouts]
    rewards_of = {m: r for m in names if (r := outcomes[m].rewards) is not None}
    scored = list(rewards_of)
    agree = sum(outcomes[m].agree for m in scored)
    compared = sum(outcomes[m].compared for m in scored)
    consistency = agree / compared if compared else None
    errors = [f"{m}: {outcomes[m].error}" for m in names if outcomes[m].rewards is None]
    error = "; ".join(errors) or None
    if len(scored) < bar:
        return GroupReward(group.id, [None] * n, "judge_error", None, None, outcomes, flags, error)
    agg = rubric.aggregation
    weights = rubric.judge_weights
    w = [weights[m] for m in scored]
    rewards: list[float | None] = []
    spread: list[float] = []
    for i, rollout in enumerate(group.rollouts):
        scores = [rewards_of[m][i] for m in scored]
        variances = [(outcomes[m].variances or [0.0] * n)[i] for m in scored]
        value = aggregate.combine(
            options.rule or agg.rule, scores, w, lam=agg.uwo_lambda, beta=agg.softmin_beta
        )
        rewards.append(
            penalties.transformed(
                rubric.transforms, value, completion=rollout.completion, flags=flags[i]
            )
        )
        spread.append(aggregate.uncertainty(scores, variances, w))
    status: Status = "ok" if len(scored) == len(names) else "degraded"
    return GroupReward(group.id, rewards, status, consistency, spread, outcomes, flags, error)
