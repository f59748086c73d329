"""Reasoning judges: where a judge's answer starts when it thinks first, and its budget.

A judge with ``reasoning: {budget_tokens, parser}`` (``core.pool.Reasoning``) writes its
reasoning, then the answer. Its server runs vLLM with ``--reasoning-parser``; what vLLM 0.32
does with such a request (read from its source, checked on the CPU judge ``smollm2-think``):

- the request field ``thinking_token_budget`` bounds the reasoning: once the judge has
  thought that many tokens, the sampler forces the end of reasoning (the parser's end
  marker, ``</think>``, or ``--reasoning-config``'s ``reasoning_end_str``). The budget
  counts the thinking already in the prompt (a template that opens ``<think>\\n`` spends one
  token of it);
- structured outputs (``choice``, ``regex``, ``json_schema``) apply only once the reasoning
  has ended, so the answer is still held to the scale;
- ``message.content`` holds the answer and ``message.reasoning`` the reasoning (older vLLM:
  ``reasoning_content``); ``logprobs.content`` covers EVERY decoded token, reasoning and
  end marker included; ``usage.completion_tokens`` counts them all and
  ``completion_tokens_details.reasoning_tokens`` the reasoning alone.

So one call per verdict suffices: ``max_tokens`` is the budget plus room for a forced end
and the answer, and the answer is read at the first position after the end marker.
Bounding the reasoning in a first call and continuing the assistant message in a second
(``continue_final_message``) would prefill the prompt twice and double the calls; the
server's budget does it in one. A reply whose reasoning did not end in time (a server that
ignores the budget, or reasoning longer than ``budget_tokens``) raises
:class:`ReasoningOverrun`: a failed verdict of kind ``reasoning_budget``, never a score.

The scoring methods read replies through an :class:`AnswerReader` chosen once per judge
(:func:`reader_for`): :data:`DIRECT` for a judge that answers at once (the requests and
readings of before, byte for byte), :class:`Thinking` for a reasoning judge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from rewardsvc.core.errors import JudgeErrorKind
from rewardsvc.core.pool import REASONING_END_TOKENS, JudgeConfig
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.failures import ReplyFailed
from rewardsvc.judges.shapes import ApiShape, Choice, Position, Reply, usage
from rewardsvc.judges.usage import read_usage


@dataclass(frozen=True)
class Thought:
    """What a judge reasoned before its answer, and how many tokens it took."""

    text: str = ""
    tokens: int = 0


NO_THOUGHT = Thought()


class ReasoningOverrun(ReplyFailed):
    """A reply whose reasoning did not end within the judge's budget: no answer to read."""

    kind: JudgeErrorKind = "reasoning_budget"


class AnswerReader(Protocol):
    """How a judge's request bounds its output and where its answer is read in the reply."""

    def output_tokens(self, answer_tokens: int) -> int:
        """The most tokens a reply with an answer of ``answer_tokens`` may decode (what
        must fit the judge's context beside the prompt)."""
        ...

    def request(self, answer_tokens: int) -> dict[str, Any]:
        """Request fields for an answer of at most ``answer_tokens`` tokens."""
        ...

    def first(
        self, shape: ApiShape, choice: Choice, response: Reply
    ) -> tuple[list[tuple[str, float]], Thought]:
        """The ``(token, logprob)`` alternatives at the answer's first position, and the
        reasoning before it."""
        ...

    def positions(
        self, shape: ApiShape, choice: Choice, response: Reply
    ) -> tuple[list[Position], Thought]:
        """The answer's decoded positions, and the reasoning before them."""
        ...

    def thought(self, shape: ApiShape, choice: Choice, response: Reply) -> Thought:
        """The reasoning of a reply read as text (structured and sampled methods)."""
        ...


class Direct:
    """A judge that answers at once: its answer is the whole reply."""

    def output_tokens(self, answer_tokens: int) -> int:
        """The answer's."""
        return answer_tokens

    def request(self, answer_tokens: int) -> dict[str, Any]:
        """``max_tokens`` only."""
        return {"max_tokens": answer_tokens}

    def first(
        self, shape: ApiShape, choice: Choice, response: Reply
    ) -> tuple[list[tuple[str, float]], Thought]:
        """The first decoded position's alternatives."""
        return shape.first_top_logprobs(choice), NO_THOUGHT

    def positions(
        self, shape: ApiShape, choice: Choice, response: Reply
    ) -> tuple[list[Position], Thought]:
        """Every decoded position."""
        return shape.positions(choice), NO_THOUGHT

    def thought(self, shape: ApiShape, choice: Choice, response: Reply) -> Thought:
        """None."""
        return NO_THOUGHT


DIRECT: AnswerReader = Direct()


@dataclass(frozen=True)
class Thinking:
    """A reasoning judge: thinks within ``budget`` tokens between ``start`` (in its output
    or in the prompt) and ``marker``, then answers."""

    budget: int
    start: str
    marker: str

    def output_tokens(self, answer_tokens: int) -> int:
        """The budget, room for a forced end of reasoning, and the answer."""
        return self.budget + REASONING_END_TOKENS + answer_tokens

    def request(self, answer_tokens: int) -> dict[str, Any]:
        """vLLM's ``thinking_token_budget``, and ``max_tokens`` for the budget, a forced
        end of reasoning and the answer: the reply cannot run past them. ``logprobs``
        (the decoded tokens, no alternatives unless a method asks) lets the reasoning be
        counted by the text methods too: vLLM counts none when the template opened the
        thinking in the prompt (its parser looks for ``<think>`` in the output)."""
        return {
            "max_tokens": self.output_tokens(answer_tokens),
            "thinking_token_budget": self.budget,
            "logprobs": True,
        }

    def first(
        self, shape: ApiShape, choice: Choice, response: Reply
    ) -> tuple[list[tuple[str, float]], Thought]:
        """The alternatives at the first position after the end of reasoning."""
        answer, thought = self.positions(shape, choice, response)
        return answer[0][1], thought

    def positions(
        self, shape: ApiShape, choice: Choice, response: Reply
    ) -> tuple[list[Position], Thought]:
        """The positions after the last end marker (the decoded text rebuilt from the
        tokens); :class:`ReasoningOverrun` when there is none, or no answer after it, or
        the reasoning before it is longer than the budget."""
        every = shape.positions(choice)
        starts, text = [], ""
        for token, _ in every:
            starts.append(len(text))
            text += token
        cut = text.rfind(self.marker)
        if cut < 0:
            raise self._unended(choice, response, f"no {self.marker} in {len(every)} tokens")
        end = cut + len(self.marker)
        after = [i for i, s in enumerate(starts) if s >= end]
        # Tokens thought, as vLLM counts them against the budget: after the judge's own
        # start marker when it wrote one (a template that opens thinking writes it in the
        # prompt instead), up to the end marker.
        spent = self._spent(starts, text, cut)
        thought = Thought(reasoning_text(choice) or text[:cut], _reasoning_tokens(response, spent))
        if spent > self.budget:
            raise self._overrun(choice, response, f"{spent} tokens of reasoning")
        if len(text) > end and (not after or starts[after[0]] != end):
            # The answer shares a token with the marker: its alternatives are not the scale's.
            raise ReplyFailed(
                f"the answer is not a token of its own after {self.marker}",
                text[end:],
                *usage(response),
            )
        if not after:
            raise self._unended(choice, response, "no answer after the reasoning")
        return every[after[0] :], thought

    def thought(self, shape: ApiShape, choice: Choice, response: Reply) -> Thought:
        """The message's reasoning; :class:`ReasoningOverrun` when the reply ran out of
        tokens before any answer, :class:`ReplyFailed` when it stopped before one."""
        message = choice.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not content:
            raise self._unended(choice, response, "no answer after the reasoning")
        starts, text = [], ""
        for token, _ in shape.positions(choice):
            starts.append(len(text))
            text += token
        cut = text.rfind(self.marker)
        spent = self._spent(starts, text, cut) if cut >= 0 else 0
        if spent > self.budget:
            raise self._overrun(choice, response, f"{spent} tokens of reasoning")
        return Thought(reasoning_text(choice), _reasoning_tokens(response, spent))

    def _spent(self, starts: list[int], text: str, cut: int) -> int:
        """The tokens thought before the end marker at ``cut``."""
        opened = text.rfind(self.start, 0, cut)
        begin = opened + len(self.start) if opened >= 0 else 0
        return sum(1 for s in starts if begin <= s < cut)

    def _unended(self, choice: Choice, response: Reply, why: str) -> ReplyFailed:
        """The failure of a reply without an end of reasoning: over the budget when it ran
        out of tokens, unparseable when the judge stopped inside its reasoning (a small
        model may end its turn there; vLLM's ``min_tokens`` in ``extra_body`` forbids it)."""
        if choice.get("finish_reason") == "length":
            return self._overrun(choice, response, why)
        return ReplyFailed(
            f"the judge stopped without an answer after its reasoning ({why})",
            reasoning_text(choice)[-200:],
            *usage(response),
        )

    def _overrun(self, choice: Choice, response: Reply, why: str) -> ReasoningOverrun:
        prompt_tokens, completion_tokens = usage(response)
        return ReasoningOverrun(
            f"the reasoning did not end within the budget of {self.budget} tokens ({why})",
            reasoning_text(choice)[-200:],
            prompt_tokens,
            completion_tokens,
        )


def reasoning_text(choice: Choice) -> str:
    """The reasoning vLLM's parser split off a chat reply (``reasoning``, or the older
    ``reasoning_content``), or ``""``."""
    message = choice.get("message")
    if not isinstance(message, dict):
        return ""
    for field in ("reasoning", "reasoning_content"):
        value = message.get(field)
        if isinstance(value, str) and value:
            return value
    return ""


def _reasoning_tokens(response: Reply, counted: int) -> int:
    """The server's count of reasoning tokens when it gives one, else ``counted``."""
    return read_usage(response).reasoning or counted


def thought_of(verdict: Verdict, thought: Thought | None) -> Verdict:
    """``verdict`` with the reasoning of ``thought`` (itself when there is none)."""
    if thought is None or (not thought.text and not thought.tokens):
        return verdict
    return replace(verdict, reasoning=thought.text, reasoning_tokens=thought.tokens)


def reasoning_identity(config: JudgeConfig) -> dict[str, object]:
    """The verdict cache identity's part for a reasoning judge's settings and the judge's
    own request fields (``reasoning``, ``chat_template_kwargs``, ``extra_body``), each only
    when set: a changed budget never reuses old verdicts, and the identity of a judge that
    sets none is what it was."""
    out: dict[str, object] = {}
    reasoning = getattr(config, "reasoning", None)
    if reasoning is not None:
        out["reasoning"] = reasoning.model_dump(mode="json")
    for name in ("chat_template_kwargs", "extra_body"):
        value = getattr(config, name, None)
        if value:
            out[name] = value
    return out


def reader_for(config: JudgeConfig) -> AnswerReader:
    """The reader of a judge: :class:`Thinking` when it has ``reasoning``, else DIRECT."""
    reasoning = getattr(config, "reasoning", None)
    if reasoning is None:
        return DIRECT
    start, end = reasoning.markers
    return Thinking(reasoning.budget_tokens, start, end)
