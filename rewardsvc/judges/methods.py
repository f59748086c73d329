"""Scoring methods: how one judge call turns into a score.

A :class:`ScoringMethod` is chosen once per judge from its ``method`` setting:

- :class:`LogprobMethod` (``logprob``, default): one decoded token constrained to the
  scale (vLLM structured outputs ``choice``); the score is the probability-weighted
  mean of the normalized scale values, with the probabilities read from the top
  logprobs and renormalized over the scale; the variance comes from the same
  distribution. A logprob that is missing or not a log-probability (NaN, ``+inf``, above
  0; ``-inf`` on the decoded token) makes the answer unparseable, never a score.
- :class:`StructuredMethod` (``structured``): bounded reasoning then an answer, as
  JSON enforced by a schema; the answer is parsed and normalized (variance 0).
- :class:`SampledMethod` (``sampled``): ``n`` constrained samples at temperature > 0;
  mean and variance of the parsed answers, unparseable samples dropped.
- :class:`BatchedMethod` (``batched``): all criteria of an item in one call, one
  constrained token each (``rewardsvc.judges.batching``); single questions as ``logprob``.

Each method owns its prompt instruction (``instruction``: the last line of every question
it is asked) and its reply reading (``score``). It also answers a comparison question
(``compare``: one label of a ``rewardsvc.judges.comparative`` prompt) with its own
request, and says whether the engine should batch an item's criteria
(``batches_criteria``).

The answer itself is read by ``rewardsvc.judges.answers`` (the scale's distribution from
the logprobs, a parsed text or JSON answer). A method builds its request fields and reads
the response through the judge's
:class:`~rewardsvc.judges.shapes.ApiShape` (chat or completion), so it never asks
which API it speaks. An answer that does not parse raises :class:`ReplyFailed`
carrying what the call cost; transport failures pass through as ``BackendError``.

A reasoning judge's call (``rewardsvc.judges.reasoning``) is bounded and read through the
call's :class:`~rewardsvc.judges.reasoning.AnswerReader`: the output budget covers the
reasoning, the answer is read after it (still constrained), and the verdict carries the
reasoning and its token count.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from rewardsvc.core.pool import Sampling
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.answers import (
    Unparseable,
    distribution,
    parse_answer,
    parse_structured,
    top_logprobs,
)
from rewardsvc.judges.backends import Backend
from rewardsvc.judges.failures import ReplyFailed
from rewardsvc.judges.prompts import Prompt
from rewardsvc.judges.questions import REASONING_MAX_CHARS, AnswerStyle, Question, TokenAnswer
from rewardsvc.judges.reasoning import DIRECT, AnswerReader, Thought, thought_of
from rewardsvc.judges.shapes import ApiShape, Reply, choices, usage

# Temperature of the sampled method when the pool leaves the judge at 0 (greedy
# samples would all be the same and the variance meaningless).
SAMPLED_DEFAULT_TEMPERATURE = 1.0
# Output budget of one sampled answer: the answer is a single constrained word or digit.
SAMPLED_MAX_TOKENS = 8


# Made once per judge call and never changed after: not frozen, for the reason
# ``rewardsvc.judges.asks.CriterionOnItem`` gives.
@dataclass(slots=True)
class Call:
    """One judge call in the making: where it goes, how it is shaped, by when it must end."""

    backend: Backend
    shape: ApiShape
    sampling: Sampling
    reasoning: int
    deadline: float | None = None
    # How the output is bounded and where the answer is read (a reasoning judge's own).
    reader: AnswerReader = DIRECT
    # The judge's own request fields (extra_body, chat_template_kwargs): under ours.
    extras: Mapping[str, Any] = field(default_factory=dict)

    def send(self, prompt: Prompt, **fields: Any) -> Awaitable[Reply]:
        """Send ``prompt`` with the request ``fields`` over the judge's own ``extras`` (and
        the judge's seed, if any); awaited, the judge's parsed JSON reply, checked by the
        shape's ``well_formed``. The backend's own coroutine, not one wrapping it: each wait
        of a judge call resumes every coroutine of its chain."""
        body = {**self.extras, **self.shape.body(prompt), **fields}
        if self.sampling.seed is not None:
            body["seed"] = self.sampling.seed
        return self.backend.send(self.shape, body, self.deadline, affinity=prompt.affinity)


class ScoringMethod(AnswerStyle, Protocol):
    """How a judge is asked (its :class:`AnswerStyle`) and how its reply becomes a score."""

    name: str
    """Its entry in ``rewardsvc.core.scoring_methods.METHODS``."""
    # Whether the engine asks all criteria of an item in one call
    # (``rewardsvc.judges.batching``) rather than one call per criterion.
    batches_criteria: bool

    def output_tokens(self, sampling: Sampling) -> int:
        """The most tokens one call may decode (counted against the judge's context)."""
        ...

    async def score(self, call: Call, prompt: Prompt) -> Verdict:
        """Score one prompt; raises ``ReplyFailed`` or ``BackendError`` on failure."""
        ...

    async def compare(self, call: Call, prompt: Prompt) -> Verdict:
        """Answer one comparison question (one label of ``prompt.question``): ``probs`` per
        label, ``score`` P(first label); raises as :meth:`score` does."""
        ...


def label_verdict(verdict: Verdict, question: Question) -> Verdict:
    """A scored verdict read as a comparison's answer: ``score`` is P(first label)."""
    probs = verdict.probs or {}
    return replace(verdict, score=probs.get(question.choices[0], 0.0), variance=0.0)


def distributed(
    reading: tuple[dict[str, float], float, float],
    raw: str,
    prompt_tokens: int,
    completion_tokens: int,
    thought: Thought | None = None,
) -> Verdict:
    """The verdict of a ``(probs, mean, variance)`` reading of a reply, its cost and the
    reasoning before its answer, if any."""
    probs, mean, variance = reading
    verdict = Verdict.answered(mean, variance, probs, raw, prompt_tokens, completion_tokens)
    return thought_of(verdict, thought)


class _DistributionMethod(TokenAnswer):
    """A method whose verdicts carry the scale's probabilities: a comparison's label
    distribution is read as a criterion's scale distribution is."""

    async def score(self, call: Call, prompt: Prompt) -> Verdict:
        """Score one prompt (each method's own)."""
        raise NotImplementedError

    async def compare(self, call: Call, prompt: Prompt) -> Verdict:
        """The labels' probabilities, read as :meth:`score` reads the scale's."""
        return label_verdict(await self.score(call, prompt), prompt.question)


class LogprobMethod(_DistributionMethod):
    """One constrained token; the expected value over the scale from its logprobs."""

    name = "logprob"
    batches_criteria = False

    def output_tokens(self, sampling: Sampling) -> int:
        """One token."""
        return 1

    async def score(self, call: Call, prompt: Prompt) -> Verdict:
        """Probabilities of the scale answers at the single decoded position."""
        question = prompt.question
        # The answers are sent without a leading space, also to completion judges whose
        # prompt ends in "Answer (yes or no):". With " yes", vLLM may decode the bare
        # space token as the one allowed token (a prefix of " yes"); on Gemma 3 it did,
        # and the answer was lost. Unspaced answers are single tokens for both CPU judges.
        # A reasoning judge's reader adds its budget to max_tokens and reads the answer
        # position after the reasoning (structured outputs apply from there).
        fields = {
            **call.reader.request(1),
            "temperature": call.sampling.temperature,
            **call.shape.logprob_fields(top_logprobs(question, call.sampling.top_logprobs)),
            "structured_outputs": {"choice": list(question.choices)},
        }
        response = await call.send(prompt, **fields)
        choice = choices(response)[0]
        raw = call.shape.text(choice)
        prompt_tokens, completion_tokens = usage(response)
        top, thought = call.reader.first(call.shape, choice, response)
        try:
            reading = distribution(question, top)
        except Unparseable as exc:
            raise ReplyFailed(str(exc), raw, prompt_tokens, completion_tokens) from exc
        return distributed(reading, raw, prompt_tokens, completion_tokens, thought)


class StructuredMethod:
    """Bounded reasoning then an answer, as JSON enforced by a schema."""

    name = "structured"
    batches_criteria = False

    def output_tokens(self, sampling: Sampling) -> int:
        """The judge's output budget."""
        return sampling.max_tokens

    def instruction(
        self, choices: tuple[str, ...], what: str, shape: ApiShape, reasoning: int
    ) -> str:
        """One line of JSON: the reasoning (at most ``reasoning`` characters), then the
        answer, one of ``choices``."""
        listed = ", ".join(f'"{c}"' for c in choices)
        # The one-line form matters: without it small judges (Gemma 3 270M) filled
        # the output budget with the whitespace that a JSON grammar allows.
        return (
            'Reply with one line of JSON in this form: {"reasoning": "...", "answer": "..."}. '
            f"The reasoning comes first, at most {reasoning} characters; the answer is one of "
            f"{listed}." + ("\nJSON:" if shape.continues_text else "")
        )

    async def score(self, call: Call, prompt: Prompt) -> Verdict:
        """The parsed answer, normalized; one more attempt when sampling and unparseable."""
        answer, verdict = await self._answer(call, prompt)
        return replace(verdict, score=prompt.question.normalized(answer))

    async def compare(self, call: Call, prompt: Prompt) -> Verdict:
        """The parsed label: probability 1 on it, 0 on the others."""
        answer, verdict = await self._answer(call, prompt)
        probs = {c: float(c == answer) for c in prompt.question.choices}
        return label_verdict(replace(verdict, probs=probs), prompt.question)

    async def _answer(self, call: Call, prompt: Prompt) -> tuple[str, Verdict]:
        """The parsed answer and a verdict carrying the reply and its cost (no score yet)."""
        sampling = call.sampling
        question = prompt.question
        response_format = {
            "type": "json_schema",
            "json_schema": {
                "name": "verdict",
                "schema": structured_schema(question.choices, call.reasoning),
                "strict": True,
            },
        }
        # vLLM honours response_format on /completions too (checked on vLLM 0.32).
        # Greedy decoding would repeat an unparseable reply; a sampled one may not.
        attempts = 2 if sampling.temperature > 0 else 1
        prompt_tokens = completion_tokens = 0
        raw = ""
        error = ""
        for _ in range(attempts):
            response = await call.send(
                prompt,
                **call.reader.request(sampling.max_tokens),
                temperature=sampling.temperature,
                response_format=response_format,
            )
            p, c = usage(response)
            prompt_tokens += p
            completion_tokens += c
            choice = choices(response)[0]
            raw = call.shape.text(choice)
            thought = call.reader.thought(call.shape, choice, response)
            try:
                answer = parse_structured(question, raw)
            except Unparseable as exc:
                error = str(exc)
                continue
            verdict = Verdict(
                score=None,
                variance=0.0,
                raw=raw,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
            return answer, thought_of(verdict, thought)
        raise ReplyFailed(error, raw, prompt_tokens, completion_tokens)


class SampledMethod(_DistributionMethod):
    """``n`` constrained samples; mean and variance of the parsed answers."""

    name = "sampled"
    batches_criteria = False

    def output_tokens(self, sampling: Sampling) -> int:
        """A short answer per sample."""
        return min(sampling.max_tokens, SAMPLED_MAX_TOKENS)

    async def score(self, call: Call, prompt: Prompt) -> Verdict:
        """Mean and variance over the samples that are on the scale."""
        sampling = call.sampling
        question = prompt.question
        response = await call.send(
            prompt,
            n=sampling.n,
            **call.reader.request(self.output_tokens(sampling)),
            temperature=sampling.temperature or SAMPLED_DEFAULT_TEMPERATURE,
            structured_outputs={"choice": list(question.choices)},
        )
        prompt_tokens, completion_tokens = usage(response)
        # A sample that ran out inside its reasoning has no answer: the reply fails as one.
        thought = call.reader.thought(call.shape, choices(response)[0], response)
        texts = [call.shape.text(c) for c in choices(response)]
        answers = [a for a in (parse_answer(question, t) for t in texts) if a is not None]
        raw = json.dumps(texts)
        if not answers:
            raise ReplyFailed(
                f"none of {len(texts)} samples is on the scale",
                raw,
                prompt_tokens,
                completion_tokens,
            )
        scores = [question.normalized(a) for a in answers]
        mean = sum(scores) / len(scores)
        variance = sum((s - mean) ** 2 for s in scores) / len(scores)
        probs = {c: answers.count(c) / len(answers) for c in question.choices}
        return distributed((probs, mean, variance), raw, prompt_tokens, completion_tokens, thought)


class BatchedMethod(LogprobMethod):
    """``batched``: the engine asks all criteria of an item in one call
    (``rewardsvc.judges.batching``); a single question (holistic, a step) is asked as by
    ``logprob``."""

    name = "batched"
    batches_criteria = True


_METHODS: dict[str, ScoringMethod] = {
    m.name: m for m in (LogprobMethod(), StructuredMethod(), SampledMethod(), BatchedMethod())
}
"""The strategy of each LLM judge's method in ``rewardsvc.core.scoring_methods.METHODS``
(a whole-item method is ``rewardsvc.judges.reward_model``'s): one each, a test checks."""


def method_for(name: str) -> ScoringMethod:
    """The scoring method of an LLM judge's ``method`` setting."""
    return _METHODS[name]


def structured_schema(
    choices: tuple[str, ...], reasoning: int = REASONING_MAX_CHARS
) -> dict[str, object]:
    """JSON schema of the structured method: bounded reasoning, then the answer."""
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": reasoning},
            "answer": {"type": "string", "enum": list(choices)},
        },
        "required": ["reasoning", "answer"],
        "additionalProperties": False,
    }
