"""Comparative scoring: groups of completions of one prompt, and preference pairs.

:func:`plan_groups` plans, for each judge of the rubric, the questions of every group
(``group_calls``): per criterion the judges compare (one holistic question for ``combine:
implicit``) the comparisons of the options' method (``comparison_methods``: ``listwise``
asks each of ``orders`` presentation orders once; ``pairwise`` every pair of the
tournament in both orders), and each essential gate's criterion asked of every completion
alone, as ``/v1/rewards`` asks it, as is a criterion allowing tools of a judge declaring
them (each completion its own tool loop, run once the completion's graders have graded:
its tool context holds their results). A feature a comparison cannot honour (``scope: step``,
``objectives``) is refused there, naming its field. :func:`run_groups` runs the plan through
the engine's executor (``serving.serve``: cache, joining calls in flight, deadline, the
engine's expiry) beside the grader criteria (``graders.registry.grade_criteria``); per judge
and criterion the answers become win rates within the group; the criteria combine with
their absolute weights (``explicit`` and ``implicit``) or by the lowest (``worst``), graded
and gated criteria joining by their weights and an essential gate capping a completion
below it (``group_judges.combine_criteria``); each judge's scores are calibrated as the
rubric asks; the judges combine per completion by the rubric's rule, and the rubric's
transforms apply last (``group_assembly``).

:func:`score_groups` is both in one. Results are plain dataclasses; the server maps them to
its wire. A group that cannot be scored (fewer than 2 completions, too many for one
listwise call, text over the limit) is ``rejected`` on its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict, Unpack

from rewardsvc.core.observe import NULL_OBSERVER, Observer
from rewardsvc.core.results import BatchResult, ItemReward, Usage
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders.registry import Graders, grade_criteria
from rewardsvc.graders.result import GraderResult
from rewardsvc.judges.comparative import ask
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.prompts import Seen
from rewardsvc.scoring import agentic
from rewardsvc.scoring.comparison_methods import Method
from rewardsvc.scoring.group_assembly import (
    GroupReward,
    calibrate,
    collect,
    group_reward,
    judge_views,
)
from rewardsvc.scoring.group_calls import Ask, GroupPlan, plan_calls
from rewardsvc.scoring.group_judges import JudgeGroup
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions, check_comparable, graded
from rewardsvc.scoring.pacing import Pacer
from rewardsvc.scoring.planning import Call
from rewardsvc.scoring.selection import min_judges_for, select_judges
from rewardsvc.scoring.serving import Expiry, Outcome, serve, serve_beside_graders
from rewardsvc.storage.cache import VerdictCache
from rewardsvc.storage.calibration import CalibrationWindows

__all__ = ["Comparing", "GroupBatch", "GroupReward", "monitored", "run_groups", "score_groups"]


class Comparing(TypedDict, total=False):
    """How a comparative request is run beyond its rubric, groups and options: the keywords
    of :func:`score_groups` (defaults there), which callers pass on as one. An engine gives
    its own (``Engine.comparer``): its cache, expiry, observer, graders and windows."""

    max_text_chars: int
    deadline: float | None
    asker: Ask
    cache: VerdictCache | None
    observer: Observer
    run: str | None
    expiry: Expiry | None
    graders: Graders | None
    windows: CalibrationWindows | None


@dataclass
class GroupBatch:
    """Every group's result in input order, and the rubric that gave them."""

    rubric_id: str
    version: str
    method: Method
    results: list[GroupReward]
    usage: Usage


async def plan_groups(
    judges: Mapping[str, Judge],
    rubric: Rubric,
    groups: Sequence[GroupIn],
    options: GroupOptions | None = None,
    **comparing: Unpack[Comparing],
) -> GroupPlan:
    """Every question of ``groups``, each one call (admission counts them: ``work``).

    Raises :class:`RequestError` for request-level problems (unknown judges, ``min_judges``
    above the judges selected, a rubric feature a comparison cannot honour); a group that
    cannot be scored is ``rejected`` alone.
    """
    options = options or GroupOptions()
    check_comparable(rubric)
    names = select_judges(rubric, judges, options.judges)
    plan = GroupPlan(names, min_judges_for(rubric, options.min_judges, len(names)))
    plan.blind = frozenset(n for n in names if not judges[n].sees_images)
    # Planning and fencing a large request takes a while: off the event loop.
    return await asyncio.to_thread(
        plan_calls,
        judges,
        rubric,
        groups,
        options,
        plan,
        comparing.get("max_text_chars", 100_000),
        comparing.get("deadline"),
        comparing.get("asker", ask),
    )


async def _grade(
    graders: Graders | None,
    rubric: Rubric,
    groups: Sequence[GroupIn],
    plan: GroupPlan,
    deadline: float | None,
) -> list[list[dict[str, GraderResult]]]:
    """Each group's grader results per completion (none for a group rejected outright)."""

    async def one(gi: int, group: GroupIn) -> list[dict[str, GraderResult]]:
        own = group.rubric or rubric
        if gi in plan.rejected or not graded(own):
            return [{} for _ in group.rollouts]
        return await grade_criteria(graders, own, group.rollouts, deadline)

    return list(await asyncio.gather(*(one(gi, g) for gi, g in enumerate(groups))))


async def _judge(
    rubric: Rubric,
    groups: Sequence[GroupIn],
    options: GroupOptions,
    plan: GroupPlan,
    usage: Usage,
    comparing: Comparing,
) -> tuple[dict[int, dict[str, JudgeGroup]], list[list[dict[str, GraderResult]]], list[Outcome]]:
    """Each judge's view of each group scored, from the plan's calls (served) and the
    grader criteria (graded side by side), with each group's grader results (their flags
    are the completions') and the calls' outcomes; the work is counted into ``usage``."""
    outcomes, grades = await _served(rubric, groups, options, plan, comparing)
    usage.grader_calls += sum(len(per) for g in grades for per in g)
    answered = collect(plan, outcomes, usage)

    def views() -> dict[int, dict[str, JudgeGroup]]:
        out = {
            gi: judge_views(g.rubric or rubric, g, gi, plan.names, options, answered, grades[gi])
            for gi, g in enumerate(groups)
            if gi not in plan.rejected
        }
        for gi, per in out.items():
            if any(r.images for r in groups[gi].rollouts):
                for name in plan.blind & per.keys():
                    per[name].without_images = True
        return out

    return await asyncio.to_thread(views), grades, outcomes


def explained(
    judges: Mapping[str, Judge], plan: GroupPlan, outcomes: Sequence[Outcome]
) -> dict[int, dict[int, dict[str, dict[str, Seen]]]]:
    """Per group and completion, per judge and criterion, what the judge read of each
    question asked of that completion alone (``options.explain``): its messages rendered
    unsent, an agentic judge's followed by its transcript (``agentic.transcript_seen``)."""
    shown: dict[int, dict[int, dict[str, dict[str, Seen]]]] = {}
    for asked, call, (verdict, _) in zip(plan.asked, plan.calls, outcomes, strict=True):
        if asked.comparison is not None:
            continue
        seen = judges[call.judge].render(call.question).seen
        if call.tools is not None:
            seen = agentic.transcript_seen(seen, verdict)
        per = shown.setdefault(asked.group, {}).setdefault(asked.completion, {})
        per.setdefault(call.judge, {})[asked.criterion] = seen
    return shown


async def _served(
    rubric: Rubric,
    groups: Sequence[GroupIn],
    options: GroupOptions,
    plan: GroupPlan,
    comparing: Comparing,
) -> tuple[list[Outcome], list[list[dict[str, GraderResult]]]]:
    """The outcomes of the plan's calls, in its order, and each group's grader results:
    the comparisons and plain questions beside the graders, the agentic loops after them
    (each completion's tool context holds its graders' results)."""
    deadline = comparing.get("deadline")
    cache = comparing.get("cache")
    expiry = comparing.get("expiry") or Expiry()
    if cache is None:  # identical calls in flight are still joined
        cache = VerdictCache(max_entries=0)
    graders = comparing.get("graders")
    grading = _grade(graders, rubric, groups, plan, deadline)
    lanes = None if graders is None else graders.sandbox

    def contexts(grades: list[list[dict[str, GraderResult]]]) -> None:
        for gi, laters in plan.contexts.items():
            group = groups[gi]
            items = list(zip(group.rollouts, laters, strict=True))
            agentic.set_contexts(group.rubric or rubric, items, grades[gi], lanes, deadline)

    pacer = Pacer()

    def serving(some: list[Call]) -> Awaitable[list[Outcome]]:
        return serve(cache, expiry, some, options.use_cache, deadline, pacer)

    return await serve_beside_graders(serving, plan.calls, grading, [], contexts)


async def run_groups(
    rubric: Rubric,
    groups: Sequence[GroupIn],
    options: GroupOptions,
    plan: GroupPlan,
    judges: Mapping[str, Judge] | None = None,
    **comparing: Unpack[Comparing],
) -> GroupBatch:
    """Rewards of every group of ``plan``, relative within the group, in input order
    (with ``options.explain``, what the ``judges`` read of each completion alone).

    Verdicts are read from and written to the ``cache`` (unless ``options.use_cache`` is
    off; without one identical calls in flight are still joined); the judge work ends at
    the ``deadline`` or once ``expiry`` is set, whichever comes first (the calls cut
    fail as ``deadline``). The rewards are reported to ``observer`` (``groups``) under ``run``.
    """
    started = time.perf_counter()
    usage = Usage()
    per_group, grades, outcomes = await _judge(rubric, groups, options, plan, usage, comparing)
    version = rubric.version()
    if rubric.aggregation.calibration != "none":
        windows = comparing.get("windows")
        windows = CalibrationWindows() if windows is None else windows
        key = f"compare:{options.method}:{version}"
        await calibrate(rubric, key, plan.names, list(per_group.values()), windows)
    rule = options.rule or rubric.aggregation.rule

    def assemble() -> list[GroupReward]:
        seen = explained(judges or {}, plan, outcomes) if options.explain else None
        results = []
        for gi, group in enumerate(groups):
            if gi in plan.rejected:
                n = len(group.rollouts)
                results.append(
                    GroupReward(group.id, [None] * n, "rejected", error=plan.rejected[gi])
                )
                continue
            own = group.rubric or rubric
            views = per_group[gi]
            reward = group_reward(own, group, plan.names, plan.bar, rule, views, grades[gi])
            if own is not rubric:
                reward.version = own.version()
            if seen is not None:
                mine = seen.get(gi, {})
                reward.explain = [mine.get(k, {}) for k in range(len(group.rollouts))]
            results.append(reward)
        return results

    results = await asyncio.to_thread(assemble)  # detectors and fits over every completion
    usage.latency_ms = (time.perf_counter() - started) * 1000.0
    batch = GroupBatch(rubric.id, version, options.method, results, usage)
    observer = comparing.get("observer", NULL_OBSERVER)
    observer.groups(rubric.id, monitored(batch, groups, comparing.get("run")))
    return batch


async def score_groups(
    judges: Mapping[str, Judge],
    rubric: Rubric,
    groups: Sequence[GroupIn],
    options: GroupOptions | None = None,
    **comparing: Unpack[Comparing],
) -> GroupBatch:
    """:func:`plan_groups`, then :func:`run_groups`: rewards of every group, relative
    within the group, in input order."""
    options = options or GroupOptions()
    plan = await plan_groups(judges, rubric, groups, options, **comparing)
    return await run_groups(rubric, groups, options, plan, judges, **comparing)


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
