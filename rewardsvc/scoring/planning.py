"""Planning a batch's judge calls: one per (item, judge, criterion), or one holistic call
per (item, judge) for ``combine: implicit``, or one call answering all criteria per
(item, judge, view) for a judge with method ``batched``, plus one per (step, criterion,
judge) for step criteria. A judge that scores whole items (a reward model) is asked no
criteria: one call per item, under ``aggregate.HOLISTIC``, and for step criteria one per
step (``HOLISTIC@stepK``, the trajectory up to step K as the item) or, for a process reward
model, one per trajectory shared by its steps and the item. A criterion the rubric allows
tools, asked of a judge whose pool entry declares tools, is an agentic question
(:mod:`.agentic`), its cost the loop's worst case. Each call carries its
verdict-cache key and its cost: one call (a call shared by several verdicts is carried by
the first of them) and the prompt bytes it shows at most, bounded from the texts before
anything is rendered, with the item's images as the judge is sent them (every image's URL
in each call of a judge that sees images, a placeholder each for a text-only judge). The
calls read the request's deadline when they start (``When``):
a plan is made before its request is admitted, and run after.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rewardsvc.core import aggregate
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.trajectory import step_key
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import imagery, prompts
from rewardsvc.judges.asks import (
    AllSteps,
    BatchedCriteria,
    CriterionOnItem,
    Holistic,
    Question,
    WholeItem,
)
from rewardsvc.judges.batching import SharedCall, by_view
from rewardsvc.judgetools.registry import Later
from rewardsvc.scoring import agentic, steps
from rewardsvc.scoring.judging import (
    JudgeLike,
    batches_criteria,
    scores_steps,
    scores_whole_item,
    sees_images,
)
from rewardsvc.scoring.pacing import Pacer
from rewardsvc.storage.cache import cache_key

_T = TypeVar("_T")


@dataclass(slots=True)
class Cost:
    """What planned work costs: judge calls, the prompt bytes they carry at most, and the
    sandbox seconds of its code graders' runs (each run's wall-clock limit). Of the prompt
    bytes, ``image_bytes`` are the ``data:`` URLs of images shown to vision judges, which
    explain does not return (it shows each such image by its hash and size).

    A value: made and added, never changed (``+`` makes a new one). Not frozen, because
    the frozen ``__init__`` costs three times as much (8 K instructions against 2.5 K) and
    a request makes about a dozen."""

    calls: int = 0
    prompt_bytes: int = 0
    sandbox_s: float = 0.0
    image_bytes: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.calls + other.calls,
            self.prompt_bytes + other.prompt_bytes,
            self.sandbox_s + other.sandbox_s,
            self.image_bytes + other.image_bytes,
        )

    @property
    def shown_bytes(self) -> int:
        """The prompt bytes ``options.explain`` returns of this work, at most."""
        return self.prompt_bytes - self.image_bytes


ONE_CALL = Cost(1)
SHARED = Cost()
"""The cost of a verdict read from a call another verdict of the plan carries."""


@dataclass
class When:
    """The deadline a plan's calls run by (``time.monotonic()`` seconds), set when the plan
    runs: the calls are made before it is known."""

    at: float | None = None


@dataclass
class Prepared:
    """An item that passed the request-level checks, with its detector flags."""

    index: int
    id: str
    rollout: Rollout
    flags: list[str]
    tools: Later = field(default_factory=Later)  # its agentic questions' context, once known


@dataclass
class Call:
    """One planned judge call (or one criterion's share of a batched call): the question
    ``judge`` is asked (explain renders it unsent) and how it runs."""

    item: int  # position in the prepared list
    judge: str
    criterion: str
    key: bytes
    question: Question[Any, Any]
    run: Callable[[], Awaitable[Verdict]]
    batch: SharedCall | None = None  # the call this verdict shares with its item's other criteria
    cost: Cost = field(default_factory=lambda: ONE_CALL)  # shared: a Cost is never changed
    tools: Later | None = None  # an agentic question's: the context it waits for


def question_bytes(rubric: Rubric, criteria: Sequence[Criterion], texts: int) -> int:
    """The prompt bytes of one call asking ``criteria`` of ``rubric`` about an item whose
    texts are ``texts`` bytes (:func:`item_bytes`), at most, before it is rendered: the
    call's overhead, the rubric's instructions, those criteria (one holistic or batched call
    lists several) and the texts."""
    shown = len(rubric.instructions.encode()) + sum(
        len(c.text.encode()) + (prompts.GIVEN_OVERHEAD_BYTES if rubric.from_item(c) else 0)
        for c in criteria
    )
    return prompts.CALL_OVERHEAD_BYTES + shown + texts


def item_bytes(rollout: Rollout) -> int:
    """The texts of ``rollout`` a call shows (a reward model reads the item alone)."""
    return prompts.text_bytes(rollout.prompt, rollout.completion, rollout.reference)


def image_cost(judge: JudgeLike, rollout: Rollout) -> Cost:
    """What showing ``rollout``'s images adds to one call of ``judge``, in prompt bytes:
    each image's part and URL (a ``data:`` URL is the whole image, in base64) to a judge
    that sees images, the placeholder where each stood to a text-only judge."""
    if not rollout.images:
        return Cost()  # the common case, on the hot path: nothing to count
    shown, inline = imagery.sent_bytes(rollout.images, sees_images(judge))
    return Cost(prompt_bytes=shown + inline, image_bytes=inline)


def _by(when: When, judge: JudgeLike, question: Question[_T, Any]) -> Callable[[], Awaitable[_T]]:
    """``judge`` asked ``question`` by the deadline ``when`` holds when the call starts.

    The call is ``Judge.ask``'s own awaitable, not one wrapped in a coroutine of this
    module: every suspension of a judge call resumes each coroutine of its chain, per call."""

    def start() -> Awaitable[_T]:
        return judge.ask(question, deadline=when.at)

    return start


@dataclass(frozen=True)
class _Slot:
    """One judge's place in one item's plan: what every call it makes there is keyed by."""

    name: str
    identity: str
    version: str
    pos: int
    item: Prepared
    digest: str  # the item's, hashed once for all its judges
    texts: int  # the item's text bytes, counted once for all its judges
    when: When
    images: Cost  # what the item's images add to each call of this judge

    def call(
        self,
        criterion: str,
        digest: str,
        question: Question[Any, Any],
        run: Callable[[], Awaitable[Verdict]],
        cost: Cost,
        batch: SharedCall | None = None,
    ) -> Call:
        """The call answering ``criterion`` about the rollout of ``digest``."""
        key = cache_key(self.version, self.identity, criterion, digest)
        return Call(self.pos, self.name, criterion, key, question, run, batch, cost)


async def plan(
    judges: Mapping[str, JudgeLike],
    rubric: Rubric,
    version: str,
    names: list[str],
    prepared: list[Prepared],
    when: When,
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
        digest, texts = p.rollout.digest(), item_bytes(p.rollout)
        images = {n: image_cost(judges[n], p.rollout) for n in names}
        slots = {
            n: _Slot(n, identities[n], version, pos, p, digest, texts, when, images[n])
            for n in names
        }
        for name in names:
            if scores_whole_item(judges[name]):
                calls.extend(_item_calls(judges[name], rubric, slots[name]))
            else:
                calls.extend(_episode_calls(judges[name], rubric, slots[name]))
        # Process rewards: step-major, so that consecutive steps of one trajectory
        # reach a judge in order and reuse its prefix cache.
        asked = [n for n in names if not scores_whole_item(judges[n])]
        for sc in steps.plan(rubric, p.rollout):
            step_digest = sc.rollout.digest()
            cost = Cost(1, question_bytes(rubric, [sc.criterion], item_bytes(sc.rollout)))
            question = CriterionOnItem(rubric, sc.criterion, sc.rollout)
            for name in asked:
                run = _by(when, judges[name], question)
                sent = cost + images[name]
                calls.append(slots[name].call(sc.key, step_digest, question, run, sent))
    return calls


def _episode_calls(judge: JudgeLike, rubric: Rubric, slot: _Slot) -> list[Call]:
    """One judge's calls on one item's episode criteria."""
    rollout, when, digest, texts = slot.item.rollout, slot.when, slot.digest, slot.texts
    if rubric.implicit_combine:
        holistic = Holistic(rubric, rollout)
        cost = Cost(1, question_bytes(rubric, rubric.criteria, texts)) + slot.images
        return [slot.call(aggregate.HOLISTIC, digest, holistic, _by(when, judge, holistic), cost)]
    asked = [c for c in rubric.criteria if c.asks_judges]
    calls: list[Call] = []
    if not batches_criteria(judge):
        for c in asked:
            calls.append(_criterion_call(judge, rubric, c, slot))
        return calls
    for group in by_view(rubric, asked):
        batched = BatchedCriteria.of(rubric, group, rollout)
        batch = SharedCall(_by(when, judge, batched))
        cost = Cost(1, question_bytes(rubric, group, texts)) + slot.images
        for criterion in group:
            run = functools.partial(batch.verdict, criterion.id)
            calls.append(slot.call(criterion.id, digest, batched, run, cost, batch))
            cost = SHARED  # the group's first verdict carries the call
    return calls


def _criterion_call(judge: JudgeLike, rubric: Rubric, criterion: Criterion, slot: _Slot) -> Call:
    """One judge's call on one criterion of one item: an agentic question when the rubric
    allows the criterion tools the judge declares (its cost the loop's worst case),
    else a plain one."""
    item, images = slot.item, slot.images
    shown = question_bytes(rubric, [criterion], slot.texts) + images.prompt_bytes
    tooled = agentic.agentic_question(judge, rubric, criterion, item.rollout, item.tools)
    if tooled is None:
        question = CriterionOnItem(rubric, criterion, item.rollout)
        run = _by(slot.when, judge, question)
        cost = Cost(1, shown, image_bytes=images.image_bytes)
        return slot.call(criterion.id, slot.digest, question, run, cost)
    calls, sent, seconds = agentic.loop_cost(judge, shown)
    cost = Cost(calls, sent, seconds, calls * images.image_bytes)
    call = slot.call(criterion.id, slot.digest, tooled, _by(slot.when, judge, tooled), cost)
    call.tools = item.tools
    return call


def _item_calls(judge: JudgeLike, rubric: Rubric, slot: _Slot) -> list[Call]:
    """A whole-item judge's calls on one item: one on the item when the rubric has episode
    criteria; for step criteria, one per step, or one per trajectory that all its steps
    share (a process reward model, whose item score is then its last step's, from the same
    call). A step's verdict is keyed by the trajectory up to it, which is all a causal
    model's score at that step depends on."""
    rollout, when = slot.item.rollout, slot.when
    calls: list[Call] = []
    steps = rollout.step_count() if rubric.step_criteria else 0
    every = AllSteps.of(rollout) if steps and scores_steps(judge) else None
    shared = None if every is None else SharedCall(_by(when, judge, every))
    # The shared call is carried by the first verdict read from it.
    carried = Cost(1, prompts.CALL_OVERHEAD_BYTES + slot.texts) + slot.images
    if rubric.has_episode_criteria:
        if shared is not None and every is not None:
            last = functools.partial(shared.verdict, step_key(aggregate.HOLISTIC, steps - 1))
            calls.append(slot.call(aggregate.HOLISTIC, slot.digest, every, last, carried, shared))
            carried = SHARED
        else:
            item = WholeItem(rollout)
            run = _by(when, judge, item)
            calls.append(slot.call(aggregate.HOLISTIC, slot.digest, item, run, carried))
    for k in range(steps):
        at = rollout.at_step(k)
        sk = step_key(aggregate.HOLISTIC, k)
        if shared is not None and every is not None:
            run = functools.partial(shared.verdict, sk)
            calls.append(slot.call(sk, at.digest(), every, run, carried, shared))
            carried = SHARED
        else:
            item = WholeItem(at)
            cost = Cost(1, prompts.CALL_OVERHEAD_BYTES + item_bytes(at)) + slot.images
            calls.append(slot.call(sk, at.digest(), item, _by(when, judge, item), cost))
    return calls
