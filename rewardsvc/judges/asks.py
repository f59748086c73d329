"""The questions a judge is asked, one class each, through its one way to ask
(:meth:`~rewardsvc.judges.judge.Judge.ask`).

A question owns what differs between them: whether a judge can be asked it at all
(:meth:`~Question.refusal`), how it is rendered for that judge (a :class:`Prompt`, a
:class:`~rewardsvc.judges.batching.Batch` or a reward model's
:class:`~rewardsvc.judges.reward_model.PoolingRequest`), whether that fits the judge's
context, how the judge's method sends it and reads the reply, and how its result (one
:class:`Verdict`, or verdicts by key) is timed, failed as a whole and reported. The judge
owns what is the same for all: its turn, the context check, metering, pricing and the
observer. ``explain`` renders a plan's questions without sending them
(:meth:`~rewardsvc.judges.judge.Judge.render`), keyed by :meth:`~Question.label`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from rewardsvc.core.aggregate import HOLISTIC
from rewardsvc.core.judge_tools import JudgeTools
from rewardsvc.core.pool import Prices
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.trajectory import step_key
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import batching, pricing, prompts, toolloop
from rewardsvc.judges.batching import Batch
from rewardsvc.judges.comparative import FencedGroup, group_prompt
from rewardsvc.judges.methods import Call
from rewardsvc.judges.prompts import Prompt, Seen
from rewardsvc.judges.reward_model import UNASKED, PoolingRequest
from rewardsvc.judges.shapes import CHAT
from rewardsvc.judges.toolresults import Tool
from rewardsvc.safety.defuse import Defuser

if TYPE_CHECKING:  # the judge asks these: a runtime import would be a cycle
    from rewardsvc.judges.judge import Judge

BATCH_JOIN = "+"
"""A call answering several keys (a batched judge's criteria, a process reward model's
steps) is shown once by explain, under those keys joined by this."""


class Sent(Protocol):
    """What a rendered question sends, as explain shows it."""

    @property
    def seen(self) -> Seen:
        """The messages (chat, a reward model's conversation) or text (completion) read."""
        ...


R = TypeVar("R")
S = TypeVar("S", bound=Sent)


class Question(Protocol[R, S]):
    """One question a judge can be asked: rendered as ``S``, answered as ``R``."""

    def refusal(self, judge: Judge) -> str | None:
        """Why ``judge`` is never asked this (its failure, reported, no turn taken)."""
        ...

    def render(self, judge: Judge) -> S:
        """The call as ``judge`` asks it (its method, API shape, defuser); may raise."""
        ...

    def overflow(self, judge: Judge, sent: S) -> str | None:
        """Why ``sent`` and its answer cannot fit ``judge``'s context (None: they may)."""
        ...

    def answer(self, judge: Judge, call: Call, sent: S) -> Awaitable[R]:
        """Send ``sent`` as ``call`` and read the reply; raises as the methods do. The
        method's own awaitable where it can be (no coroutine of this module around it:
        every suspension of a call resumes each coroutine of its chain)."""
        ...

    def failed(self, verdict: Verdict) -> R:
        """The result of a call that failed as a whole with ``verdict``."""
        ...

    def finished(self, got: R, latency_ms: float, meter: pricing.Meter, prices: Prices | None) -> R:
        """``got`` with the call's latency, cached tokens and cost."""
        ...

    def outcome(self, got: R) -> Verdict:
        """The one verdict standing for the call, for the observer."""
        ...

    def label(self, key: str) -> str:
        """The key explain shows the call under, for the verdict of ``key`` read from it."""
        ...


class _OneVerdict:
    """A question answered by one verdict."""

    def failed(self, verdict: Verdict) -> Verdict:
        """The failure is the verdict."""
        return verdict

    def finished(
        self, got: Verdict, latency_ms: float, meter: pricing.Meter, prices: Prices | None
    ) -> Verdict:
        """The verdict, timed and priced."""
        return pricing.priced(got.timed(latency_ms), meter, prices)

    def outcome(self, got: Verdict) -> Verdict:
        """The verdict itself."""
        return got

    def label(self, key: str) -> str:
        """Shown under its own key."""
        return key


class _Asked(_OneVerdict):
    """A question an LLM judge answers with its scoring method; a reward model never."""

    def refusal(self, judge: Judge) -> str | None:
        """A reward model answers no question of ours."""
        return UNASKED if judge.reward_model is not None else None

    def overflow(self, judge: Judge, sent: Prompt) -> str | None:
        """Whether the prompt and the method's answer fit."""
        return judge.overflow(sent)

    def answer(self, judge: Judge, call: Call, sent: Prompt) -> Awaitable[Verdict]:
        """The method's score of the prompt."""
        return judge.method.score(call, sent)


# The questions are made one per planned call, and never changed after: not frozen, since a
# frozen dataclass is made three times as slowly (measured: 2.3 against 0.8 us).
@dataclass(slots=True)
class CriterionOnItem(_Asked):
    """One criterion of ``rubric`` about one item (a step rollout: about that step)."""

    rubric: Rubric
    criterion: Criterion
    rollout: Rollout

    def render(self, judge: Judge) -> Prompt:
        """The criterion's prompt (``prompts.criterion_prompt``)."""
        return prompts.criterion_prompt(self.rubric, self.criterion, self.rollout, judge.asking)


@dataclass(slots=True)
class Holistic(_Asked):
    """Implicit scoring: one question seeing all criteria of ``rubric``, answered 1..9."""

    rubric: Rubric
    rollout: Rollout

    def refusal(self, judge: Judge) -> str | None:
        """A reward model's, or a constitution's (scored per principle)."""
        if self.rubric.is_constitution:
            return "a constitution is scored per principle, not holistically"
        return _Asked.refusal(self, judge)

    def render(self, judge: Judge) -> Prompt:
        """The holistic prompt (``prompts.holistic_prompt``)."""
        return prompts.holistic_prompt(self.rubric, self.rollout, judge.asking)


def _declared(judge: Judge) -> JudgeTools:
    """The tools ``judge`` declares (an agentic question refuses a judge without)."""
    declared = judge.config.tools
    assert declared is not None  # refused otherwise
    return declared


@dataclass(slots=True)
class AgenticCriterion(_Asked):
    """One criterion of ``rubric`` about one item, answered after a bounded tool loop
    (``judges.toolloop``) with ``tools`` bound to the item; the loop's limits and tool
    choice are the judge's (its pool entry's ``tools``), the verdict read by its method."""

    rubric: Rubric
    criterion: Criterion
    rollout: Rollout
    tools: tuple[Tool, ...]

    def refusal(self, judge: Judge) -> str | None:
        """A judge that declares no tools or not these, a judge that does not speak the chat
        API (tool calling), or a reward model."""
        declared = judge.config.tools
        if declared is None or judge.shape is not CHAT:
            return "an agentic question needs a chat judge that declares tools"
        bound = {t.name for t in self.tools}
        refused = sorted(bound - set(declared.allowed))
        if refused:
            return f"judge {judge.name!r} is not allowed the tools {refused}"
        unbound = sorted(set(declared.named) - bound)
        if unbound:
            return f"judge {judge.name!r} is to call {unbound} first, which this item lacks"
        return _Asked.refusal(self, judge)

    def render(self, judge: Judge) -> Prompt:
        """The criterion's prompt (``prompts.criterion_prompt``), before any tool call."""
        return prompts.criterion_prompt(self.rubric, self.criterion, self.rollout, judge.asking)

    def overflow(self, judge: Judge, sent: Prompt) -> str | None:
        """Whether the first turn's prompt and its tool calls fit (later turns and the
        verdict's prompt grow by bounded tool results: the loop's token limit bounds them)."""
        return judge.overflow(sent, _declared(judge).turn_tokens)

    def answer(self, judge: Judge, call: Call, sent: Prompt) -> Awaitable[Verdict]:
        """The loop's verdict (a reached limit: a failed verdict of its ``loop_*`` kind)."""
        limits, choice = toolloop.settings_of(_declared(judge))
        loop = toolloop.ToolLoop(
            self.tools, limits, choice, judge.defuser, judge.observer, judge.name
        )
        return loop.verdict(call, judge.method, sent)


@dataclass(slots=True)
class Comparing(_OneVerdict):
    """Which of the completions ``shown`` (input indices, in that order) of one group best
    answers ``criterion`` (None: the holistic question); the group's texts are fenced once
    per defuser, ``fenced`` holding the judge's. Answered with the method's ``compare``."""

    rubric: Rubric
    criterion: Criterion | None
    fenced: Mapping[Defuser, FencedGroup]
    shown: tuple[int, ...]

    def refusal(self, judge: Judge) -> str | None:
        """None: a reward model's own method refuses the comparison when it is sent."""
        return None

    def render(self, judge: Judge) -> Prompt:
        """The comparison prompt (``comparative.group_prompt``)."""
        group, sees = self.fenced[judge.defuser], judge.asking.sees
        return group_prompt(self.rubric, self.criterion, group, self.shown, judge.shape, sees)

    def overflow(self, judge: Judge, sent: Prompt) -> str | None:
        """Whether the prompt and the method's answer fit."""
        return judge.overflow(sent)

    def answer(self, judge: Judge, call: Call, sent: Prompt) -> Awaitable[Verdict]:
        """The method's label probabilities."""
        return judge.method.compare(call, sent)


class _ByKey:
    """A question answered by one call with a verdict per key (a failed call fails all)."""

    keys: tuple[str, ...]

    def failed(self, verdict: Verdict) -> dict[str, Verdict]:
        """Every key's verdict is the failure."""
        return dict.fromkeys(self.keys, verdict)

    def finished(
        self,
        got: dict[str, Verdict],
        latency_ms: float,
        meter: pricing.Meter,
        prices: Prices | None,
    ) -> dict[str, Verdict]:
        """Every verdict timed and priced with the whole call (the engine counts it once)."""
        return {k: pricing.priced(v.timed(latency_ms), meter, prices) for k, v in got.items()}

    def outcome(self, got: dict[str, Verdict]) -> Verdict:
        """The call's outcome (``batching.call_outcome``)."""
        return batching.call_outcome(got.values())

    def label(self, key: str) -> str:
        """Shown once, under its keys joined by :data:`BATCH_JOIN`."""
        return BATCH_JOIN.join(self.keys)


@dataclass(slots=True)
class BatchedCriteria(_ByKey):
    """The ``criteria`` (one view) of ``rubric`` about one item in one call, by id."""

    rubric: Rubric
    criteria: Sequence[Criterion]
    rollout: Rollout
    keys: tuple[str, ...]

    @classmethod
    def of(cls, rubric: Rubric, criteria: Sequence[Criterion], rollout: Rollout) -> BatchedCriteria:
        """The batched question of ``criteria``, keyed by their ids."""
        return cls(rubric, criteria, rollout, tuple(c.id for c in criteria))

    def refusal(self, judge: Judge) -> str | None:
        """A reward model answers no question of ours."""
        return UNASKED if judge.reward_model is not None else None

    def render(self, judge: Judge) -> Batch:
        """The batched prompt (``batching.batch_prompt``)."""
        sees = judge.asking.sees
        return batching.batch_prompt(
            self.rubric, self.criteria, self.rollout, judge.shape, judge.defuser, sees=sees
        )

    def overflow(self, judge: Judge, sent: Batch) -> str | None:
        """Whether the prompt and the longest reply fit."""
        return judge.overflow(sent.prompt, sent.reply_tokens())

    def answer(self, judge: Judge, call: Call, sent: Batch) -> Awaitable[dict[str, Verdict]]:
        """Each criterion's verdict read at its position."""
        return batching.score_batch(call, sent)


class _Pooled:
    """A reward model's question: one pooling call, read into verdicts."""

    def overflow(self, judge: Judge, sent: PoolingRequest) -> str | None:
        """Whether the conversation fits the reward model's context."""
        return sent.overflow(judge.context)

    async def _read(self, call: Call, sent: PoolingRequest) -> list[Verdict]:
        return sent.read(await sent.send(call.backend, call.deadline))


@dataclass(slots=True)
class WholeItem(_Pooled, _OneVerdict):
    """A reward model's score of the whole item (a process reward model's: its last step)."""

    rollout: Rollout

    def refusal(self, judge: Judge) -> str | None:
        """A judge that is no reward model."""
        return None if judge.reward_model is not None else "not that kind of reward model"

    def render(self, judge: Judge) -> PoolingRequest:
        """The item's pooling call."""
        assert judge.reward_model is not None  # refused otherwise
        return judge.reward_model.item_request(self.rollout, judge.defuser)

    async def answer(self, judge: Judge, call: Call, sent: PoolingRequest) -> Verdict:
        """The item's verdict."""
        return (await self._read(call, sent))[0]


@dataclass(slots=True)
class AllSteps(_Pooled, _ByKey):
    """A process reward model's score of every step of the trajectory in one call, by
    ``step_key(HOLISTIC, k)``."""

    rollout: Rollout
    keys: tuple[str, ...]

    @classmethod
    def of(cls, rollout: Rollout) -> AllSteps:
        """The question on every step of ``rollout``."""
        return cls(rollout, tuple(step_key(HOLISTIC, k) for k in range(rollout.step_count())))

    def refusal(self, judge: Judge) -> str | None:
        """A judge that is no process reward model."""
        rm = judge.reward_model
        return None if rm is not None and rm.scores_steps else "not that kind of reward model"

    def render(self, judge: Judge) -> PoolingRequest:
        """The steps' pooling call."""
        assert judge.reward_model is not None  # refused otherwise
        return judge.reward_model.steps_request(self.rollout, judge.defuser)

    async def answer(self, judge: Judge, call: Call, sent: PoolingRequest) -> dict[str, Verdict]:
        """Each step's verdict, by key."""
        return dict(zip(self.keys, await self._read(call, sent), strict=True))

    def label(self, key: str) -> str:
        """Its steps shown once, under their keys joined; the item's verdict read from it
        under its own key."""
        return _ByKey.label(self, key) if key in self.keys else key
