"""Scoring methods: one judge call -> one :class:`Verdict`.

- ``logprob`` (default): one decoded token constrained to the scale (vLLM
  structured outputs ``choice``); the score is the probability-weighted mean of
  the normalized scale values, with the probabilities read from
  ``top_logprobs`` and renormalized over the scale; the variance comes from the
  same distribution.
- ``structured``: bounded reasoning then an answer, as JSON enforced by a
  schema; the answer is parsed and normalized (variance 0).
- ``sampled``: ``n`` constrained samples at temperature > 0; mean and variance
  of the parsed answers, unparseable samples dropped.

Every failure (transport, HTTP, no scale token, unparseable output) becomes
``Verdict.failed(...)``: a failed call is never a score and never raises.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import prompts
from rewardsvc.judges.backends import Backend, BackendError
from rewardsvc.judges.prompts import Prompt, Question
from rewardsvc.server.metrics import JUDGE_CALLS, JUDGE_ERRORS, JUDGE_LATENCY, JUDGE_TOKENS

# Temperature of the sampled method when the pool leaves the judge at 0 (greedy
# samples would all be the same and the variance meaningless).
SAMPLED_DEFAULT_TEMPERATURE = 1.0
# Below this total probability on the scale tokens, a logprob answer is an error, not a
# score. With constrained decoding the scale (and its prefixes) holds nearly all the mass.
MIN_SCALE_MASS = 1e-3
# Output budget of one sampled answer: the answer is a single constrained word or digit.
SAMPLED_MAX_TOKENS = 8


class Unparseable(Exception):
    """The judge answered, but not with something on the scale."""


def distribution(
    question: Question, top: Iterable[tuple[str, float]]
) -> tuple[dict[str, float], float, float]:
    """Scale probabilities, mean and variance from ``(token, logprob)`` alternatives.

    Tokens are matched to answers with whitespace stripped and case ignored;
    the probabilities of variants (``"yes"``, ``" yes"``, ``"Yes"``) add up; the
    result is renormalized over the scale. Raises :class:`Unparseable` when no
    scale token is among the alternatives.
    """
    mass = dict.fromkeys(question.choices, 0.0)
    seen: set[str] = set()
    for token, logprob in top:
        if token in seen:
            continue
        seen.add(token)
        choice = question.match(token)
        if choice is not None and logprob is not None and math.isfinite(logprob):
            mass[choice] += math.exp(logprob)
    total = sum(mass.values())
    if not total > 0.0:
        raise Unparseable(
            f"no scale token {list(question.choices)} among the top logprobs {sorted(seen)}"
        )
    if total < MIN_SCALE_MASS:
        # Renormalizing a vanishing mass would turn noise into a confident-looking score.
        raise Unparseable(f"the scale tokens carry only {total:.2g} of the probability")
    probs = {c: m / total for c, m in mass.items()}
    mean = sum(p * question.normalized(c) for c, p in probs.items())
    variance = sum(p * (question.normalized(c) - mean) ** 2 for c, p in probs.items())
    return probs, min(1.0, max(0.0, mean)), max(0.0, variance)


def parse_answer(question: Question, text: str) -> str | None:
    """The scale answer in a short free-text reply, if there is exactly one way to read it."""
    choice = question.match(text)
    if choice is not None:
        return choice
    words = text.strip().split()
    if not words:
        return None
    return question.match(words[0].strip(".,:;!?\"'()[]*"))


def parse_structured(question: Question, text: str) -> str:
    """The answer of a structured (JSON) reply; raises :class:`Unparseable`."""
    start = text.find("{")
    if start < 0:
        raise Unparseable("no JSON object in the reply")
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise Unparseable(f"invalid JSON: {exc.msg}") from exc
    if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str | int):
        raise Unparseable('the JSON reply has no "answer"')
    choice = question.match(str(obj["answer"]))
    if choice is None:
        raise Unparseable(f"answer {obj['answer']!r} is not one of {list(question.choices)}")
    return choice


def _usage(response: Any) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0
    return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)


class Judge:
    """One pool judge, ready to score criteria of rubrics against rollouts."""

    def __init__(
        self,
        name: str,
        config: JudgeConfig,
        backend: Backend | None = None,
    ):
        self.name = name
        self.config = config
        self.backend = backend or Backend(name, config)
        self._reasoning = prompts.reasoning_chars(config.sampling.max_tokens)

    def cache_identity(self) -> str:
        """Model, API, method, sampling and prompt version: what makes a verdict reusable."""
        return json.dumps(
            {
                "model": self.config.model,
                "api": self.config.api,
                "method": self.config.method,
                "sampling": self.config.sampling.model_dump(mode="json"),
                "prompts": prompts.PROMPT_VERSION,
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    async def score_criterion(
        self, rubric: Rubric, criterion: Criterion, rollout: Rollout
    ) -> Verdict:
        """The verdict on one criterion of one item; failures are returned, never raised."""
        try:
            prompt = prompts.criterion_prompt(
                rubric,
                criterion,
                rollout,
                self.config.method,
                self.config.api,
                self._reasoning,
            )
        except Exception as exc:  # a prompt that cannot be built is this call's failure
            return self._failed("internal", f"prompt: {exc}", 0.0)
        return await self._score(prompt)

    async def score_holistic(self, rubric: Rubric, rollout: Rollout) -> Verdict:
        """Implicit scoring: one call that sees all criteria, answering Likert 1..9."""
        if rubric.kind == "constitution":
            return self._failed(
                "internal", "a constitution is scored per principle, not holistically", 0.0
            )
        try:
            prompt = prompts.holistic_prompt(
                rubric, rollout, self.config.method, self.config.api, self._reasoning
            )
        except Exception as exc:
            return self._failed("internal", f"prompt: {exc}", 0.0)
        return await self._score(prompt)

    async def aclose(self) -> None:
        """Close the backend's connections."""
        await self.backend.aclose()

    # ------------------------------------------------------------------ internals

    def _failed(
        self,
        kind: str,
        message: str,
        latency_s: float,
        raw: str = "",
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> Verdict:
        JUDGE_ERRORS.labels(judge=self.name, kind=kind).inc()
        return Verdict(
            score=None,
            error=f"{kind}: {message}",
            raw=raw,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_ms=latency_s * 1000.0,
        )

    async def _score(self, prompt: Prompt) -> Verdict:
        JUDGE_CALLS.labels(judge=self.name).inc()
        start = time.perf_counter()
        try:
            method = self.config.method
            if method == "logprob":
                verdict = await self._logprob(prompt)
            elif method == "structured":
                verdict = await self._structured(prompt)
            else:
                verdict = await self._sampled(prompt)
            verdict = replace(verdict, latency_ms=(time.perf_counter() - start) * 1000.0)
        except BackendError as exc:
            verdict = self._failed(exc.kind, exc.args[0], time.perf_counter() - start)
        except _Failed as exc:
            verdict = self._failed(
                "unparseable",
                exc.message,
                time.perf_counter() - start,
                exc.raw,
                exc.prompt_tokens,
                exc.completion_tokens,
            )
        except Exception as exc:  # a bug or an unexpected response shape: still no score
            message = f"{type(exc).__name__}: {exc}"
            verdict = self._failed("internal", message, time.perf_counter() - start)
        JUDGE_LATENCY.labels(judge=self.name).observe(verdict.latency_ms / 1000.0)
        JUDGE_TOKENS.labels(judge=self.name, kind="prompt").inc(verdict.prompt_tokens)
        JUDGE_TOKENS.labels(judge=self.name, kind="completion").inc(verdict.completion_tokens)
        return verdict

    def _common(self, **extra: Any) -> dict[str, Any]:
        kwargs: dict[str, Any] = dict(extra)
        if self.config.sampling.seed is not None:
            kwargs["seed"] = self.config.sampling.seed
        return kwargs

    def _top_logprobs(self, question: Question) -> int:
        """How many alternatives to ask for at the constrained answer position.

        Only tokens that spell a prefix of an answer ("y", "ye", "yes", "n", "no")
        can carry probability there, so more than that many alternatives adds
        nothing. Asking for more also does harm on /completions, whose
        ``top_logprobs`` is a dict keyed by token text: byte-fallback tokens
        that spell the same text ("<0x34>" for "4", near-zero probability) then
        enter the list and overwrite the real entries (seen with Gemma 3 on
        vLLM 0.32: the digits' probabilities came back as e^-39).
        """
        prefixes = {c[:i] for c in question.choices for i in range(1, len(c) + 1)}
        return max(1, min(self.config.sampling.top_logprobs, len(prefixes)))

    async def _send(self, prompt: Prompt, **kwargs: Any) -> Any:
        if self.config.api == "chat":
            return await self.backend.chat(messages=prompt.messages, **kwargs)
        return await self.backend.complete(prompt=prompt.text, **kwargs)

    async def _logprob(self, prompt: Prompt) -> Verdict:
        sampling = self.config.sampling
        question = prompt.question
        # The answers are sent without a leading space, also to completion judges whose
        # prompt ends in "Answer (yes or no):". With " yes", vLLM may decode the bare
        # space token as the one allowed token (a prefix of " yes"); on Gemma 3 it did,
        # and the answer was lost. Unspaced answers are single tokens for both CPU judges.
        constrained = {"structured_outputs": {"choice": list(question.choices)}}
        if self.config.api == "chat":
            response = await self._send(
                prompt,
                **self._common(
                    max_tokens=1,
                    temperature=sampling.temperature,
                    logprobs=True,
                    top_logprobs=self._top_logprobs(question),
                    **constrained,
                ),
            )
            choice = response.choices[0]
            raw = choice.message.content or ""
            content = choice.logprobs.content if choice.logprobs is not None else None
            top: list[tuple[str, float]] = []
            if content:
                first = content[0]
                top = [(t.token, t.logprob) for t in first.top_logprobs or []]
                top.append((first.token, first.logprob))
        else:
            response = await self._send(
                prompt,
                **self._common(
                    max_tokens=1,
                    temperature=sampling.temperature,
                    logprobs=self._top_logprobs(question),
                    **constrained,
                ),
            )
            choice = response.choices[0]
            raw = choice.text or ""
            logprobs = choice.logprobs
            top = []
            if logprobs is not None and logprobs.top_logprobs:
                top = list((logprobs.top_logprobs[0] or {}).items())
                if logprobs.tokens and logprobs.token_logprobs:
                    top.append((logprobs.tokens[0], logprobs.token_logprobs[0]))
        prompt_tokens, completion_tokens = _usage(response)
        try:
            probs, mean, variance = distribution(question, top)
        except Unparseable as exc:
            raise _Failed(str(exc), raw, prompt_tokens, completion_tokens) from exc
        return Verdict(
            score=mean,
            variance=variance,
            probs=probs,
            raw=raw,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )

    async def _structured(self, prompt: Prompt) -> Verdict:
        sampling = self.config.sampling
        question = prompt.question
        response_format = {
            "type": "json_schema",
            "json_schema": {
                "name": "verdict",
                "schema": prompts.structured_schema(question.choices, self._reasoning),
                "strict": True,
            },
        }
        # vLLM honours response_format on /completions too (checked on vLLM 0.32).
        constrained: dict[str, Any] = {"response_format": response_format}
        # Greedy decoding would repeat an unparseable reply; a sampled one may not.
        attempts = 2 if sampling.temperature > 0 else 1
        prompt_tokens = completion_tokens = 0
        raw = ""
        error = ""
        for _ in range(attempts):
            response = await self._send(
                prompt,
                **self._common(
                    max_tokens=sampling.max_tokens, temperature=sampling.temperature, **constrained
                ),
            )
            p, c = _usage(response)
            prompt_tokens += p
            completion_tokens += c
            raw = _text(response.choices[0])
            try:
                answer = parse_structured(question, raw)
            except Unparseable as exc:
                error = str(exc)
                continue
            return Verdict(
                score=question.normalized(answer),
                variance=0.0,
                raw=raw,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
        raise _Failed(error, raw, prompt_tokens, completion_tokens)

    async def _sampled(self, prompt: Prompt) -> Verdict:
        sampling = self.config.sampling
        question = prompt.question
        temperature = sampling.temperature or SAMPLED_DEFAULT_TEMPERATURE
        response = await self._send(
            prompt,
            **self._common(
                n=sampling.n,
                max_tokens=min(sampling.max_tokens, SAMPLED_MAX_TOKENS),
                temperature=temperature,
                structured_outputs={"choice": list(question.choices)},
            ),
        )
        prompt_tokens, completion_tokens = _usage(response)
        texts = [_text(c) for c in response.choices]
        answers = [a for a in (parse_answer(question, t) for t in texts) if a is not None]
        raw = json.dumps(texts)
        if not answers:
            raise _Failed(
                f"none of {len(texts)} samples is on the scale",
                raw,
                prompt_tokens,
                completion_tokens,
            )
        scores = [question.normalized(a) for a in answers]
        mean = sum(scores) / len(scores)
        variance = sum((s - mean) ** 2 for s in scores) / len(scores)
        probs = {c: answers.count(c) / len(answers) for c in question.choices}
        return Verdict(
            score=mean,
            variance=variance,
            probs=probs,
            raw=raw,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )


class _Failed(Exception):
    """An answer that did not parse, with what it cost (internal to this module)."""

    def __init__(self, message: str, raw: str, prompt_tokens: int, completion_tokens: int):
        super().__init__(message)
        self.message = message
        self.raw = raw
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


def _text(choice: Any) -> str:
    message = getattr(choice, "message", None)
    if message is not None:
        return message.content or ""
    return getattr(choice, "text", None) or ""


def build_judges(pool: JudgePool) -> dict[str, Judge]:
    """One :class:`Judge` per pool entry, keyed by judge name.

    Raises ``KeyError`` when a judge's ``api_key_env`` variable is unset: a
    misconfigured pool should stop start-up, not fail every call.
    """
    return {name: Judge(name, config) for name, config in pool.judges.items()}
