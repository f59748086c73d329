"""The plan of a comparative request: every question its groups ask, each one call of the
engine's executor (``serving.serve``: the verdict cache, joining identical calls in flight,
the request's deadline and the engine's expiry).

Two kinds of question: a comparison (one criterion, or the holistic question, over the
completions shown in one order) and a criterion asked of one completion alone, exactly as
``/v1/rewards`` asks it (same judge call, same cache key): an essential gate's, and one
allowing tools of a judge that declares them, an agentic loop per completion
(:mod:`.agentic`: its own tool context, never shared with another completion's). Each call is
keyed by its inputs (rubric version, judge identity, criterion, order shown and the digest
of the group's texts); each is a question (``rewardsvc.judges.asks``) its judge is asked
(``Judge.ask``), so a comparison's prompt is rendered once, inside its judge's turn.
Each question carries the calls and prompt bytes it will send at most, for admission (an
agentic loop its worst case), its images counted as ``/v1/rewards`` counts them
(``imagery.sent_bytes``): a comparison sends the prompt's images and those of each
completion it shows, a question of one completion alone its rollout's, each image's
``data:`` URL to a judge that sees images, a placeholder to a text-only one. The plan also
counts the sandbox seconds its code grader criteria may run (every completion graded) and
its loops may spend.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsvc.core import comparative as cmp
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import imagery, prompts
from rewardsvc.judges.asks import Comparing, CriterionOnItem, Question
from rewardsvc.judges.comparative import FencedGroup, ask, fenced_group
from rewardsvc.judges.judge import Judge
from rewardsvc.judgetools.registry import Later
from rewardsvc.safety.defuse import Defuser
from rewardsvc.scoring import agentic
from rewardsvc.scoring.group_judges import Comparison
from rewardsvc.scoring.group_plan import (
    GroupImages,
    GroupIn,
    GroupOptions,
    gated,
    group_sandbox_seconds,
    plan_seed,
    presentations,
    questions,
    reject_reason,
)
from rewardsvc.scoring.judging import sees_images
from rewardsvc.scoring.planning import Call, Cost, image_cost
from rewardsvc.storage.cache import cache_key

Ask = Callable[[Judge, Comparing, float | None], Awaitable[Verdict]]
"""How a comparison is asked of a judge (``comparative.ask``; a test's stand-in)."""


@dataclass
class Asked:
    """One planned question of one group: a comparison, or (``comparison`` None)
    ``criterion`` asked of completion ``completion`` alone (gated, or agentic)."""

    group: int
    judge: str
    criterion: str
    comparison: Comparison | None = None
    completion: int = 0


@dataclass
class GroupPlan:
    """Every question of a request, each with its call (in the same order), the groups
    rejected outright (index -> why), what the calls carry beyond one call each
    (``carried``: the prompt bytes at most, of them the ``data:`` URLs explain never
    returns, the sandbox seconds the groups' code graders and agentic loops may run, and
    the calls those loops may make beyond one each), and ``contexts``, each group's tool
    context per completion (set once it is graded)."""

    names: list[str]
    bar: int
    asked: list[Asked] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    rejected: dict[int, str] = field(default_factory=dict)
    carried: Cost = field(default_factory=Cost)
    contexts: dict[int, tuple[Later, ...]] = field(default_factory=dict)
    blind: frozenset[str] = frozenset()
    """The judges that read text only: a placeholder stands for each image of a group."""

    @property
    def cost(self) -> Cost:
        """What admission weighs: the judge calls planned (an agentic loop's every turn),
        the prompt bytes they carry at most and the sandbox seconds they may run."""
        return self.carried + Cost(len(self.calls))

    def carry(self, cost: Cost) -> None:
        """Count what one question's calls add (``cost``) beyond one call each."""
        self.carried += cost


def group_digest(group: GroupIn) -> str:
    """The digest of a group's texts (every completion, in input order, with the prompt
    and reference): what a comparison of it is keyed by, with the order shown."""
    h = hashlib.sha256()
    for r in group.rollouts:
        h.update(r.digest().encode())
    return h.hexdigest()


@dataclass(frozen=True)
class _Group:
    """One group being planned: its rubric and what every call of it shares."""

    index: int
    group: GroupIn
    rubric: Rubric
    version: str
    digest: str
    fenced: Mapping[Defuser, FencedGroup]
    deadline: float | None
    asker: Ask
    laters: tuple[Later, ...]
    shared: int  # the prompt bytes every question of the group carries
    images: GroupImages  # what its comparisons show


def _alone(plan: GroupPlan, g: _Group, name: str, judge: Judge, criterion: Criterion) -> None:
    """``criterion`` asked of each completion alone by ``judge``: an agentic loop (its own
    tool context per completion; its worst case counted) when the rubric allows it tools
    the judge declares, else plainly, as ``/v1/rewards`` asks it."""
    identity = judge.cache_identity()
    for k, rollout in enumerate(g.group.rollouts):
        plan.asked.append(Asked(g.index, name, criterion.id, None, k))
        images = image_cost(judge, rollout)  # its whole rollout's, as /v1/rewards asks it
        shown = g.shared + prompts.text_bytes(rollout.completion) + images.prompt_bytes
        later = g.laters[k]
        tooled = agentic.agentic_question(judge, g.rubric, criterion, rollout, later)
        alone: Question[Verdict, Any] = tooled or CriterionOnItem(g.rubric, criterion, rollout)
        run = functools.partial(judge.ask, alone, deadline=g.deadline)
        key = cache_key(g.version, identity, criterion.id, rollout.digest())
        call = Call(g.index, name, criterion.id, key, alone, run)
        calls, seconds = 1, 0.0
        if tooled is not None:
            calls, shown, seconds = agentic.loop_cost(judge, shown)
            call.tools = later
        plan.calls.append(call)
        # Each turn of a loop carries the question, its images with it.
        plan.carry(Cost(calls - 1, shown, seconds, calls * images.image_bytes))


def _plan_group(
    plan: GroupPlan, g: _Group, judges: Mapping[str, Judge], options: GroupOptions
) -> None:
    """The group's comparisons, then the criteria each judge asks of each completion alone
    (its gated ones, and those it asks agentically)."""
    rollouts = g.group.rollouts
    each = [prompts.text_bytes(r.completion) for r in rollouts]
    shows = presentations(len(rollouts), options, cmp.rng_for(plan_seed(g.group, options.seed)))
    for name in plan.names:
        judge, identity = judges[name], judges[name].cache_identity()
        alone = list(gated(g.rubric))
        for question, criterion in questions(g.rubric):
            if criterion is not None and agentic.asks_agentically(judge, g.rubric, criterion):
                alone.append(criterion)
                continue
            for order, shown in shows:
                what = f"compare:{question}:{','.join(map(str, shown))}"
                key = cache_key(g.version, identity, what, g.digest)
                plan.asked.append(
                    Asked(g.index, name, question, Comparison(question, shown, order))
                )
                comparing = Comparing(g.rubric, criterion, g.fenced, shown)
                asked = functools.partial(g.asker, judge, comparing, g.deadline)
                plan.calls.append(Call(g.index, name, question, key, comparing, asked))
                texts = Cost(prompt_bytes=g.shared + sum(each[k] for k in shown))
                plan.carry(texts + _images(judge, g, shown))
        for criterion in alone:
            _alone(plan, g, name, judge, criterion)


def _images(judge: Judge, g: _Group, shown: Sequence[int]) -> Cost:
    """What the images of a comparison showing ``shown`` add to its call to ``judge``."""
    sent, inline = imagery.sent_bytes(g.images.compared(shown), sees_images(judge))
    return Cost(prompt_bytes=sent + inline, image_bytes=inline)


def plan_calls(
    judges: Mapping[str, Judge],
    rubric: Rubric,
    groups: Sequence[GroupIn],
    options: GroupOptions,
    plan: GroupPlan,
    max_text_chars: int,
    deadline: float | None,
    asker: Ask = ask,
) -> GroupPlan:
    """``plan`` filled with every group's questions and calls (each group's texts fenced
    once per defuser its judges use, not once per call); a group that cannot be scored
    is rejected alone."""
    defusers = list(dict.fromkeys(judges[name].defuser for name in plan.names))
    for gi, group in enumerate(groups):
        reason = reject_reason(group, gi, options, max_text_chars)
        if reason is not None:
            plan.rejected[gi] = reason
            continue
        own = group.rubric or rubric
        base = group.rollouts[0]
        completions = [r.completion for r in group.rollouts]
        images = [r.images for r in group.rollouts]
        fenced = {
            d: fenced_group(base.prompt, completions, base.reference, d, images) for d in defusers
        }
        laters = tuple(Later() for _ in group.rollouts)
        shared = (
            prompts.CALL_OVERHEAD_BYTES
            + prompts.rubric_bytes(own)
            + prompts.text_bytes(base.prompt, base.reference)
        )
        digest = group_digest(group)
        # Its markers are the same whichever defuser fenced it (none: no judge asked).
        shown = next((GroupImages.of(f) for f in fenced.values()), GroupImages())
        g = _Group(
            gi, group, own, own.version(), digest, fenced, deadline, asker, laters, shared, shown
        )
        _plan_group(plan, g, judges, options)
        if any(c.tools is not None for c in plan.calls if c.item == gi):
            plan.contexts[gi] = laters
        plan.carry(Cost(sandbox_s=group_sandbox_seconds(own, group)))
    return plan
