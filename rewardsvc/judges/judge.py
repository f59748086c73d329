"""A judge: one pool entry, scoring criteria of rubrics against rollouts into :class:`Verdict`s.

A :class:`Judge` chooses once, from its config, its scoring method
(``rewardsvc.judges.methods``) and its API shape (``rewardsvc.judges.shapes``), and owns
the :class:`~rewardsvc.judges.backends.Backend` that reaches its endpoints. A judge with
method ``batched`` also answers all criteria of an item in one call (``score_criteria``,
``rewardsvc.judges.batching``). A call is rendered and sent in one of the judge's
turns (``rewardsvc.judges.turns``).

A ``reward_model`` judge (``rewardsvc.judges.reward_model``) is asked no questions: it scores
whole items (``score_item``) and, as a process reward model, all steps in one call
(``score_steps``); the engine plans so from ``scores_whole_item``.

Every failure (no prompt, a prompt too long for the judge's context, transport, HTTP,
deadline, no scale token, unparseable output) becomes a failed verdict with an
``error_kind`` (``rewardsvc.judges.failures.failed_verdict``): a failed call is never a
score and never raises. Every call is reported
to the observer (``observer.judge_call``) once, a batched one with one verdict for all.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace

from rewardsvc.core.aggregate import HOLISTIC
from rewardsvc.core.observe import NULL_OBSERVER, Observer
from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.trajectory import step_key
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import batching, pricing, prompts, reward_model
from rewardsvc.judges.backends import Backend
from rewardsvc.judges.failures import failed_verdict, failure_of
from rewardsvc.judges.identity import defuser_for, identity_text
from rewardsvc.judges.limits import context_tokens, least_tokens
from rewardsvc.judges.methods import Call, ScoringMethod
from rewardsvc.judges.prompts import Asking, Prompt
from rewardsvc.judges.reasoning import reader_for
from rewardsvc.judges.reward_model import PoolingRequest
from rewardsvc.judges.shapes import prompt_text
from rewardsvc.judges.strategy import strategy_for
from rewardsvc.judges.turns import Turns
from rewardsvc.safety.defuse import Defuser

Answer = Callable[[Call, Prompt], Awaitable[Verdict]]
"""A scoring method's way of answering one prompt (``score`` or ``compare``)."""


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

    async def score_criterion(
        self,
        rubric: Rubric,
        criterion: Criterion,
        rollout: Rollout,
        *,
        deadline: float | None = None,
    ) -> Verdict:
        """The verdict on one criterion of one item; failures are returned, never raised.

        ``deadline`` is a ``time.monotonic()`` instant by which the call must be over.
        """
        if self.reward_model is not None:
            return self._report(failed_verdict("internal", reward_model.UNASKED, 0.0))
        render = self._prompt_of(prompts.criterion_prompt, rubric, criterion, rollout)
        return await self._render_and_score(render, deadline)

    async def score_holistic(
        self, rubric: Rubric, rollout: Rollout, *, deadline: float | None = None
    ) -> Verdict:
        """Implicit scoring: one call that sees all criteria, answering Likert 1..9."""
        if self.reward_model is not None:
            return self._report(failed_verdict("internal", reward_model.UNASKED, 0.0))
        if rubric.is_constitution:
            return self._report(
                failed_verdict(
                    "internal", "a constitution is scored per principle, not holistically", 0.0
                )
            )
        render = self._prompt_of(prompts.holistic_prompt, rubric, rollout)
        return await self._render_and_score(render, deadline)

    async def compare(self, prompt: Prompt, deadline: float | None = None) -> Verdict:
        """One comparison call (``rewardsvc.judges.comparative``), answered by the judge's
        own scoring method: label probabilities, or a failed verdict with its
        ``error_kind``; reported to the observer once. Never raises.

        The caller holds the judge's :meth:`turn` when it wants the concurrency bound.
        """
        return await self._score(prompt, deadline, self.method.compare)

    @property
    def batches_criteria(self) -> bool:
        """Whether the engine should ask all criteria of an item in one call
        (``score_criteria``) rather than one call per criterion."""
        return self.method.batches_criteria

    async def score_criteria(
        self,
        rubric: Rubric,
        criteria: Sequence[Criterion],
        rollout: Rollout,
        *,
        deadline: float | None = None,
    ) -> dict[str, Verdict]:
        """The verdicts on ``criteria`` (one view) of one item from ONE call, by criterion
        id: a position that cannot be read fails its criterion only; a failed call fails
        them all. Reported to the observer as one call. Never raises."""
        late = await self._turns.take(deadline)
        if late is not None:
            return dict.fromkeys((c.id for c in criteria), self._report(late))
        try:
            return await self._score_criteria(rubric, criteria, rollout, deadline)
        finally:
            self._turns.release()

    async def _score_criteria(
        self,
        rubric: Rubric,
        criteria: Sequence[Criterion],
        rollout: Rollout,
        deadline: float | None,
    ) -> dict[str, Verdict]:
        try:
            batch = batching.batch_prompt(rubric, criteria, rollout, self.shape, self.defuser)
        except Exception as exc:  # a prompt that cannot be built is this call's failure
            failed = self._report(failed_verdict("internal", f"prompt: {exc}", 0.0))
            return dict.fromkeys((c.id for c in criteria), failed)
        too_long = self.overflow(batch.prompt, batch.reply_tokens())
        if too_long is not None:
            failed = self._report(failed_verdict("context_overflow", too_long, 0.0))
            return dict.fromkeys(batch.ids, failed)
        call = self._call(deadline)
        start = time.perf_counter()
        with pricing.metering() as meter:
            try:
                verdicts = await batching.score_batch(call, batch)
            except Exception as exc:
                failed = failure_of(exc, time.perf_counter() - start)
                failed = self._report(pricing.priced(failed, meter, self.config.prices))
                return dict.fromkeys(batch.ids, failed)
        latency_ms = (time.perf_counter() - start) * 1000.0
        prices = self.config.prices
        verdicts = {
            cid: pricing.priced(replace(v, latency_ms=latency_ms), meter, prices)
            for cid, v in verdicts.items()
        }
        self._report(batching.call_outcome(verdicts.values()))
        return verdicts

    async def score_item(self, rollout: Rollout, *, deadline: float | None = None) -> Verdict:
        """A reward model's verdict on the whole item (one pooling call). Never raises."""
        rm = self.reward_model
        request = rm.item_request(rollout, self.defuser) if rm is not None else None
        return (await self._pooled(request, deadline))[0]

    async def score_steps(
        self, rollout: Rollout, *, deadline: float | None = None
    ) -> dict[str, Verdict]:
        """A process reward model's verdict on every step of the trajectory from ONE call,
        by ``step_key(HOLISTIC, k)``; a failed call fails every step. Never raises."""
        keys = [step_key(HOLISTIC, k) for k in range(rollout.step_count())]
        rm = self.reward_model if self.scores_steps else None
        request = rm.steps_request(rollout, self.defuser) if rm is not None else None
        got = await self._pooled(request, deadline)
        return dict(zip(keys, got if len(got) == len(keys) else got * len(keys), strict=True))

    async def _pooled(
        self, request: PoolingRequest | None, deadline: float | None
    ) -> list[Verdict]:
        """One pooling call in a turn, read into verdicts; a failure is one verdict (also for
        no request: not the reward model the call needs). Reported to the observer once."""
        if request is None:
            return [self._report(failed_verdict("internal", "not that kind of reward model", 0.0))]
        async with self.turn(deadline) as late:
            if late is not None:
                return [self._report(late)]
            too_long = request.overflow(context_tokens(self.config))
            if too_long is not None:
                return [self._report(failed_verdict("context_overflow", too_long, 0.0))]
            start = time.perf_counter()
            try:
                got = request.read(await request.send(self.backend, deadline))
            except Exception as exc:
                return [self._report(failure_of(exc, time.perf_counter() - start))]
            latency_ms = (time.perf_counter() - start) * 1000.0
            got = [replace(v, latency_ms=latency_ms) for v in got]
            self._report(batching.call_outcome(got))
            return got

    def turn(self, deadline: float | None) -> AbstractAsyncContextManager[Verdict | None]:
        """Hold one of the judge's ``max_concurrency`` turns for rendering and sending one
        call: yields None once held, or the failed ``deadline`` verdict when ``deadline``
        passed first (then nothing is held)."""
        return self._turns.held(deadline)

    async def reachable(self, timeout: float = 2.0) -> bool:
        """Whether the judge answers ``GET /models`` on any base URL whose breaker is not open."""
        return await self.backend.reachable(timeout)

    def overflow(self, prompt: Prompt, answer: int | None = None) -> str | None:
        """Why ``prompt`` cannot fit the judge's context with an answer of ``answer`` tokens
        (default: the method's output budget), or None when it may."""
        limit = context_tokens(self.config)
        if limit is None:
            return None
        text = prompt_text(prompt)
        least = least_tokens(text)
        if answer is None:
            answer = self.method.output_tokens(self.config.sampling)
        # A reasoning judge's thinking must fit too.
        answer = self._reader.output_tokens(answer)
        if least + answer <= limit:
            return None
        return (
            f"the prompt ({len(text)} characters, at least {least} tokens) and the answer "
            f"({answer} tokens) do not fit judge {self.name!r}'s context of {limit} tokens"
        )

    async def aclose(self) -> None:
        """Close the backend's connections."""
        await self.backend.aclose()

    # ------------------------------------------------------------------ internals

    def _prompt_of(self, build: Callable[..., Prompt], *what: object) -> Callable[[], Prompt]:
        """``build`` (a ``rewardsvc.judges.prompts`` builder) of ``what``, as this judge
        asks it (method, API, reasoning budget, defuser), to call once a turn is held."""
        held = self._asking
        if held is None or held[0] is not self.defuser:
            held = self._asking = (self.defuser, self._strategy.asking(self.defuser))
        return functools.partial(build, *what, held[1])

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

    async def _render_and_score(
        self, render: Callable[[], Prompt], deadline: float | None
    ) -> Verdict:
        """Render the prompt once a turn is held (so prompts alive stay bounded by the
        judge's concurrency) and score it; a prompt that cannot be built is the call's
        failure."""
        late = await self._turns.take(deadline)
        if late is not None:
            return self._report(late)
        try:
            try:
                prompt = render()
            except Exception as exc:
                return self._report(failed_verdict("internal", f"prompt: {exc}", 0.0))
            return await self._score(prompt, deadline)
        finally:
            self._turns.release()

    async def _score(
        self, prompt: Prompt, deadline: float | None, answer: Answer | None = None
    ) -> Verdict:
        """Check ``prompt`` fits, have ``answer`` (default: the method's ``score``) send it,
        type any failure and report the verdict once."""
        too_long = self.overflow(prompt)
        if too_long is not None:
            return self._report(failed_verdict("context_overflow", too_long, 0.0))
        call = self._call(deadline)
        start = time.perf_counter()
        with pricing.metering() as meter:
            try:
                verdict = await (answer or self.method.score)(call, prompt)
                verdict = replace(verdict, latency_ms=(time.perf_counter() - start) * 1000.0)
            except Exception as exc:
                verdict = failure_of(exc, time.perf_counter() - start)
        return self._report(pricing.priced(verdict, meter, self.config.prices))


def build_judges(pool: JudgePool, observer: Observer = NULL_OBSERVER) -> dict[str, Judge]:
    """One :class:`Judge` per pool entry, keyed by judge name, reporting to ``observer``.

    Raises ``KeyError`` when a judge's API key is neither in its ``api_key_env``
    variable nor in the file named by ``{api_key_env}_FILE``: a misconfigured pool
    should stop start-up, not fail every call. A judge with ``special_tokens`` defuses
    them in untrusted text beside the maintained families.
    """
    return {name: Judge(name, config, observer=observer) for name, config in pool.judges.items()}
