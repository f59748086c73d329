"""A judge: one pool entry, scoring criteria of rubrics against rollouts into :class:`Verdict`s.

A :class:`Judge` chooses once, from its config, its scoring method
(``rewardsvc.judges.methods``) and its API shape (``rewardsvc.judges.shapes``), and owns
the :class:`~rewardsvc.judges.backends.Backend` that reaches its endpoints. It is asked
one way, :meth:`Judge.ask`, every question (``rewardsvc.judges.asks``: a criterion on an
item, the holistic question, the criteria of one view batched in one call, a comparison,
and for a ``reward_model`` judge the whole item or all its steps); each question owns its
rendering and its reading, the judge the rest. A call is rendered and sent in one of the
judge's turns (``rewardsvc.judges.turns``); :meth:`Judge.render` renders a question
without sending it (``options.explain``).

Every failure (a question the judge is never asked, no prompt, a prompt too long for the
judge's context, transport, HTTP, deadline, no scale token, unparseable output) becomes a
failed verdict with an ``error_kind`` (``rewardsvc.judges.failures.failed_verdict``): a
failed call is never a score and never raises. Every call is reported to the observer
(``observer.judge_call``) once, one answering several keys with one verdict for all.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TypeVar

from rewardsvc.core.observe import NULL_OBSERVER, Observer
from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import pricing
from rewardsvc.judges.backends import Backend
from rewardsvc.judges.failures import failed_verdict, failure_of
from rewardsvc.judges.identity import defuser_for, identity_text, served_identity
from rewardsvc.judges.limits import context_tokens, least_tokens
from rewardsvc.judges.methods import Call, ScoringMethod
from rewardsvc.judges.prompts import Asking, Prompt
from rewardsvc.judges.reasoning import reader_for
from rewardsvc.judges.shapes import prompt_images, prompt_text
from rewardsvc.judges.strategy import strategy_for
from rewardsvc.judges.turns import Turns
from rewardsvc.safety.defuse import Defuser

if TYPE_CHECKING:  # the questions read the judge: a runtime import would be a cycle
    from rewardsvc.judges.asks import Question, Sent

R = TypeVar("R")
S = TypeVar("S", bound="Sent")


class Judge:
    """One pool judge, ready to score criteria of rubrics against rollouts.

    ``defuser`` breaks control tokens in untrusted text; the default covers the
    maintained families plus the config's ``special_tokens`` (the judge model's own).
    """

    def __init__(
        self,
        name: str,
        config: JudgeConfig,
        backend: Backend | None = None,
        observer: Observer = NULL_OBSERVER,
        defuser: Defuser | None = None,
    ):
        self.name = name
        self.config = config
        self.observer = observer
        self.defuser = defuser if defuser is not None else defuser_for(config)
        self.backend = backend or Backend(name, config, observer=observer)
        # A reward model is its own scoring strategy; an LLM judge's comes from its method.
        self._strategy = strategy_for(config)
        self.reward_model = self._strategy.reward_model
        self.method: ScoringMethod = self._strategy.method
        # What the engine asks it: whole items, not criteria; all steps in one call (a PRM).
        self.scores_whole_item = self.reward_model is not None
        self.scores_steps = self.reward_model is not None and self.reward_model.scores_steps
        self.shape = self._strategy.shape
        # Its prompts show an item's images as image parts, else placeholders.
        self.sees_images = self._strategy.sees
        self._reader = reader_for(config)
        self._extras = config.request_extras()
        self._identity: tuple[JudgeConfig, Defuser, str] | None = None
        # How its prompts are asked, made once for as long as the defuser stays the same.
        self._asking: tuple[Defuser, Asking] | None = None
        # As many turns as the backend has slots (``rewardsvc.judges.turns``).
        self._turns = Turns(name, config.max_concurrency)

    def cache_identity(self) -> str:
        """Judge name, model and its ``revision``, API, method, sampling, prompt version and
        defusing of the model's own special tokens: what makes a verdict reusable.

        The name is in it because two pool judges may serve the same model name from
        different servers (different weights); the base URLs are not, because the replicas
        of one judge serve the same weights and must share verdicts.
        """
        # Asked by every request; config and defuser are immutable, so the text is made
        # once for as long as the judge holds the same ones.
        held = self._identity
        if held is None or held[0] is not self.config or held[1] is not self.defuser:
            settings = self.reward_model.settings if self.reward_model is not None else None
            text = identity_text(self.name, self.config, self.defuser, settings)
            held = self._identity = (self.config, self.defuser, text)
        return held[2]

    async def ask(self, question: Question[R, S], *, deadline: float | None = None) -> R:
        """The answer to ``question`` (a ``rewardsvc.judges.asks`` question): a verdict, or
        verdicts by key; failures are returned, never raised. Rendered once a turn is held
        (so the prompts alive stay bounded by the judge's concurrency), checked against the
        context, metered, priced and reported to the observer once.

        ``deadline`` is a ``time.monotonic()`` instant by which the call must be over.
        """
        refused = question.refusal(self)
        if refused is not None:
            return question.failed(self._report(failed_verdict("internal", refused, 0.0)))
        late = await self._turns.take(deadline)
        if late is not None:
            return question.failed(self._report(late))
        # One coroutine for the whole call: every suspension resumes each one of its chain.
        try:
            try:
                sent = question.render(self)
            except Exception as exc:  # a prompt that cannot be built is this call's failure
                failed = failed_verdict("internal", f"prompt: {exc}", 0.0)
                return question.failed(self._report(failed))
            too_long = question.overflow(self, sent)
            if too_long is not None:
                failed = failed_verdict("context_overflow", too_long, 0.0)
                return question.failed(self._report(failed))
            prices = self.config.prices
            start = time.perf_counter()
            with pricing.metering() as meter:
                try:
                    got = await question.answer(self, self._call(deadline), sent)
                except Exception as exc:
                    failed = pricing.priced(
                        failure_of(exc, time.perf_counter() - start), meter, prices
                    )
                    return question.failed(self._report(failed))
                got = question.finished(got, (time.perf_counter() - start) * 1000.0, meter, prices)
            self._report(question.outcome(got))
            return got
        finally:
            self._turns.release()

    def render(self, question: Question[R, S]) -> S:
        """``question`` rendered as this judge would send it, unsent (may raise)."""
        return question.render(self)

    @property
    def batches_criteria(self) -> bool:
        """Whether the engine should ask all criteria of an item in one call
        (``asks.BatchedCriteria``) rather than one call per criterion."""
        return self.method.batches_criteria

    @property
    def asking(self) -> Asking:
        """How its prompts are asked, made once for as long as the defuser stays the same."""
        held = self._asking
        if held is None or held[0] is not self.defuser:
            held = self._asking = (self.defuser, self._strategy.asking(self.defuser))
        return held[1]

    @property
    def context(self) -> int | None:
        """Its context in tokens, when known."""
        return context_tokens(self.config)

    async def reachable(self, timeout: float = 2.0) -> bool:
        """Whether the judge answers ``GET /models`` on any base URL whose breaker is not open."""
        return await self.backend.reachable(timeout)

    async def served_identity(self, timeout: float = 2.0) -> dict[str, str] | None:
        """What this judge is: its configured model and revision and what its endpoint
        reports (:func:`served_identity`); None when no base URL answers ``GET /models``."""
        reply = await self.backend.models(timeout)
        return None if reply is None else served_identity(self.config, reply)

    def overflow(self, prompt: Prompt, answer: int | None = None) -> str | None:
        """Why ``prompt`` cannot fit the judge's context with an answer of ``answer`` tokens
        (default: the method's output budget), or None when it may: its text's least
        tokens plus ``capabilities.image_tokens`` for each image it shows."""
        limit = context_tokens(self.config)
        if limit is None:
            return None
        text, images = prompt_text(prompt), prompt_images(prompt)
        # An image costs the model's own count of tokens, at least the pool's image_tokens.
        least = least_tokens(text) + images * self.config.capabilities.image_tokens
        if answer is None:
            answer = self.method.output_tokens(self.config.sampling)
        # A reasoning judge's thinking must fit too.
        answer = self._reader.output_tokens(answer)
        if least + answer <= limit:
            return None
        shown = f"{len(text)} characters" + (f" and {images} images" if images else "")
        return (
            f"the prompt ({shown}, at least {least} tokens) and the answer "
            f"({answer} tokens) do not fit judge {self.name!r}'s context of {limit} tokens"
        )

    async def aclose(self) -> None:
        """Close the backend's connections."""
        await self.backend.aclose()

    # ------------------------------------------------------------------ internals

    def _call(self, deadline: float | None) -> Call:
        """A call of this judge, by ``deadline``: its reader bounds a reasoning judge's
        thinking, and its own request fields go with it."""
        return Call(
            self.backend,
            self.shape,
            self.config.sampling,
            self._strategy.reasoning,
            deadline,
            reader=self._reader,
            extras=self._extras,
        )

    def _report(self, verdict: Verdict) -> Verdict:
        self.observer.judge_call(self.name, verdict)
        return verdict


def build_judges(pool: JudgePool, observer: Observer = NULL_OBSERVER) -> dict[str, Judge]:
    """One :class:`Judge` per pool entry, keyed by judge name, reporting to ``observer``.

    Raises ``KeyError`` when a judge's API key is neither in its ``api_key_env``
    variable nor in the file named by ``{api_key_env}_FILE``: a misconfigured pool
    should stop start-up, not fail every call. A judge with ``special_tokens`` defuses
    them in untrusted text beside the maintained families.
    """
    return {name: Judge(name, config, observer=observer) for name, config in pool.judges.items()}
