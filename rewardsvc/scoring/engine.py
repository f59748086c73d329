"""The engine: one batch of items against one rubric, from rollouts to rewards.

For each request it checks every item on its own (a bad one is ``rejected``, the rest go
on), runs the detectors, plans one judge call per (item, judge, criterion) — or one
holistic call per (item, judge) for ``combine: implicit``, or one call answering all
criteria per (item, judge) for a judge with method ``batched``, whose verdicts are still
cached and deduplicated per criterion — serves what it can from the
verdict cache or from an identical call already in flight, sends the rest concurrently
(the backends enforce each judge's concurrency limit), and assembles each item's reward,
status, uncertainty and breakdown with the pure functions of ``core.aggregate``.

It returns domain results (``core.results``); the server turns them into wire models.
The engine's only state is the verdict cache and the calibration windows.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardsvc.core import aggregate
from rewardsvc.core.observe import NULL_OBSERVER, Observer
from rewardsvc.core.results import (
    BatchResult,
    BatchUsage,
    ItemReward,
    JudgeOutcome,
)
from rewardsvc.core.rollout import ItemIn, Rollout, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.graders.registry import Graders, grade_criteria
from rewardsvc.judges import prompts
from rewardsvc.judges.batching import SharedCall, by_view
from rewardsvc.safety.detectors import THREAD_ABOVE_CHARS, detect
from rewardsvc.scoring import steps
from rewardsvc.scoring.assemble import episode_part, item_reward, judge_outcome, step_results
from rewardsvc.scoring.judging import JudgeLike, batching_of
from rewardsvc.scoring.pacing import Pacer
from rewardsvc.scoring.selection import min_judges_for, select_judges
from rewardsvc.storage.cache import Source, VerdictCache, cache_key
from rewardsvc.storage.calibration import CalibrationWindows

log = logging.getLogger(__name__)


_NO_VERDICT: tuple[Verdict, Source] = (Verdict.failed("not scored"), "call")
_DEADLINE = Verdict.failed("deadline: the request's deadline passed first", kind="deadline")


@dataclass
class _Prepared:
    index: int
    id: str
    rollout: Rollout
    flags: list[str]


@dataclass
class _Call:
    item: int  # position in the prepared list
    judge: str
    criterion: str
    key: bytes
    run: Callable[[], Awaitable[Verdict]]
    batch: SharedCall | None = None  # the call this verdict shares with its item's other criteria


def planned_cost(rubric: Rubric, rollout: Rollout) -> tuple[int, int]:
    """The calls one judge makes for ``rollout`` under ``rubric``, as ``Engine._plan`` plans
    them, and the prompt bytes they carry at most: what admission weighs before anything
    is rendered. A batched judge makes fewer calls; graders make none."""
    if rubric.combine == "implicit":
        calls = 1
    else:
        calls = sum(1 for c in rubric.criteria if c.grader is None and c.scope != "step")
    calls += rollout.step_count() * len(steps.step_criteria(rubric))
    each = (
        prompts.CALL_OVERHEAD_BYTES
        + prompts.rubric_bytes(rubric)
        + prompts.text_bytes(rollout.prompt, rollout.completion, rollout.reference)
    )
    return calls, calls * each


class Engine:
    """Scores batches against rubrics with a set of judges, sharing one verdict cache.

    ``judges`` maps pool judge names to judges (``rewardsvc.judges.judge.build_judges``);
    the engine owns them and closes them in ``aclose``. ``cache=None`` keeps no verdicts
    but still deduplicates identical calls in flight. Items whose prompt, completion or
    reference is longer than ``max_text_chars`` are rejected. Criteria with a ``grader``
    are scored by ``graders`` (no judge call); without it they fail as ``internal``.
    """

    def __init__(
        self,
        judges: Mapping[str, JudgeLike],
        cache: VerdictCache | None = None,
        max_text_chars: int = 100_000,
        observer: Observer = NULL_OBSERVER,
        graders: Graders | None = None,
        windows: CalibrationWindows | None = None,
    ):
        self.judges = dict(judges)
        self.graders = graders
        self.cache = cache if cache is not None else VerdictCache(max_entries=0)
        self.max_text_chars = max_text_chars
        self.windows = windows or CalibrationWindows()
        self._expired: asyncio.Future[None] | None = None  # done once ``expire`` is called
        self.observer = observer

    # ----------------------------------------------------------- request-level checks

    async def _prepare(self, rubric: Rubric, index: int, item: ItemIn) -> _Prepared | ItemReward:
        def reject(message: str) -> ItemReward:
            return ItemReward(id=item.id, reward=None, status="rejected", error=message)

        if item.rollout is None:
            return reject(item.error or "item rejected")
        rollout = item.rollout
        prefix = f"items[{index}]"
        texts = {
            "prompt": rollout.prompt,
            "completion": rollout.completion,
            "reference": rollout.reference,
        }
        for name, text in texts.items():
            if text is not None and len(text) > self.max_text_chars:
                return reject(
                    f"{prefix}.{name}: {len(text)} characters, more than the limit of "
                    f"{self.max_text_chars} (max_text_chars)"
                )
        if rubric.requires_reference and rollout.reference is None:
            return reject(f"{prefix}.reference: rubric {rubric.id!r} requires a reference")
        try:
            # Linear time, but a long text still takes milliseconds: off the event loop.
            if len(rollout.completion) + len(rollout.prompt) > THREAD_ABOVE_CHARS:
                found = await asyncio.to_thread(detect, rollout)
            else:
                found = detect(rollout)
            flags = sorted(set(found) | set(rollout.notes()))
        except Exception:
            # A detector bug must not sink the batch; the item is scored without flags.
            log.exception("detectors failed on %s", prefix)
            flags = []
        return _Prepared(index, item.id, rollout, flags)

    # ----------------------------------------------------------- scoring

    async def score(
        self,
        rubric: Rubric,
        items: Sequence[ItemIn],
        options: ScoreOptions | None = None,
        metrics_label: str | None = None,
        deadline: float | None = None,
    ) -> BatchResult:
        """Rewards for ``items`` in input order.

        ``deadline`` (``time.monotonic()`` seconds) bounds the judge and grader work: calls
        still running then are cancelled and count as failed (``error_kind`` ``deadline``),
        so the batch is answered in time with those items as ``judge_error`` or ``degraded``.

        ``metrics_label`` names the rubric in metrics (default its id); callers pass a
        fixed label for inline rubrics, whose ids are the client's to choose and would
        otherwise grow the metric series without bound.

        Raises :class:`RequestError` for a request-level problem (``options.judges`` names
        a judge the rubric does not list, ``options.min_judges`` above the judges selected,
        or a rubric judge missing from the pool); item-level problems never raise.
        """
        started = time.perf_counter()
        options = options or ScoreOptions()
        names = select_judges(rubric, self.judges, options.judges)
        min_judges = min_judges_for(rubric, options.min_judges, len(names))
        version = rubric.version()

        results: list[ItemReward | None] = [None] * len(items)
        prepared: list[_Prepared] = []
        pacer = Pacer()  # a large batch must not hold the loop from start to end
        for index, item in enumerate(items):
            await pacer.step()
            outcome = await self._prepare(rubric, index, item)
            if isinstance(outcome, _Prepared):
                prepared.append(outcome)
            else:
                results[index] = outcome

        calls = await self._plan(rubric, version, names, prepared, deadline, pacer)
        judged = self._run(calls, options.use_cache, deadline, pacer)
        if any(c.grader is not None for c in rubric.criteria):
            rollouts = [p.rollout for p in prepared]
            grading = grade_criteria(self.graders, rubric, rollouts, deadline)
            outcomes, graded = await asyncio.gather(judged, grading)
        else:  # nothing to grade: no tasks to run the judge calls beside nothing
            outcomes, graded = await judged, [{} for _ in prepared]

        usage = BatchUsage(grader_calls=sum(len(g) for g in graded))
        verdicts: list[dict[str, dict[str, tuple[Verdict, Source]]]] = [
            {name: {} for name in names} for _ in prepared
        ]
        batches: set[SharedCall] = set()
        for call, (verdict, source) in zip(calls, outcomes, strict=True):
            verdicts[call.item][call.judge][call.criterion] = (verdict, source)
            if source == "call" and call.batch is not None:
                if call.batch in batches:
                    continue  # every verdict of a batched call carries the call's cost
                batches.add(call.batch)
            if source == "call":
                usage.judge_calls += 1
                usage.prompt_tokens += verdict.prompt_tokens
                usage.completion_tokens += verdict.completion_tokens
            elif source == "hit":
                usage.cache_hits += 1
        for pos, grades in enumerate(graded):
            # Every judge gets the grader's score, so that it weighs in each judge score
            # exactly as a criterion the judge answered itself would.
            for name in names:
                verdicts[pos][name].update({c: (g.verdict(), "grader") for c, g in grades.items()})

        assembled = await self._assemble(
            rubric, version, options, names, min_judges, prepared, verdicts, pacer
        )
        for p, result, grades in zip(prepared, assembled, graded, strict=True):
            for by_judge in result.judges.values():
                for cid, grade in grades.items():
                    by_judge.criteria[cid].evidence = grade.evidence
            results[p.index] = result

        usage.latency_ms = (time.perf_counter() - started) * 1000
        batch = BatchResult(
            rubric_id=rubric.id,
            version=version,
            items=[r for r in results if r is not None],
            usage=usage,
            run=options.run,
        )
        self.observer.batch(metrics_label or rubric.id, batch)
        return batch

    async def _run(
        self, calls: list[_Call], use_cache: bool, deadline: float | None, pacer: Pacer
    ) -> list[tuple[Verdict, Source]]:
        outcomes: list[tuple[Verdict, Source]] = [_NO_VERDICT] * len(calls)
        # Memory hits are served here. The rest wait for the cache's task for their key,
        # shared with any request asking the same (joined: a dedup), or without the
        # cache for a call of this request's own.
        waits: dict[int, tuple[asyncio.Future[tuple[Verdict, Source]], bool]] = {}
        own: list[asyncio.Task[tuple[Verdict, Source]]] = []
        for n, c in enumerate(calls):
            await pacer.step()  # before the lookup: a key looked up is started at once
            if not use_cache:
                task = asyncio.ensure_future(self.cache.get_or_call(c.key, c.run, use_cache=False))
                own.append(task)
                waits[n] = (task, False)
            elif (hit := self.cache.lookup(c.key)) is not None:
                outcomes[n] = (hit, "hit")
            else:
                waits[n] = self.cache.start(c.key, c.run)
        while waits:
            await self._settle(waits, own, deadline, outcomes)
            # A joined call runs with the deadline of the request that started it: one that
            # ended on that deadline is asked again for this request, by its own deadline.
            again = [
                n
                for n, (future, joined) in waits.items()
                if joined and outcomes[n][1] == "dedup" and outcomes[n][0].error_kind == "deadline"
            ]
            if not again or self._past(deadline):
                break
            waits = {n: self.cache.start(calls[n].key, calls[n].run) for n in again}
        return outcomes

    def _past(self, deadline: float | None) -> bool:
        """Whether ``deadline`` has passed or the engine expired."""
        expired = self._expired is not None and self._expired.done()
        return expired or (deadline is not None and time.monotonic() >= deadline)

    async def _settle(
        self,
        waits: dict[int, tuple[asyncio.Future[tuple[Verdict, Source]], bool]],
        own: list[asyncio.Task[tuple[Verdict, Source]]],
        deadline: float | None,
        outcomes: list[tuple[Verdict, Source]],
    ) -> None:
        """Wait for ``waits`` until ``deadline`` and put each one's outcome in ``outcomes``."""
        futures = {future for future, _ in waits.values()}
        try:
            await self._until_done(futures, deadline)
            late = {f for f in futures if not f.done()}
        finally:
            # Cancelled by the caller (the client went away) or past the deadline: this
            # request's own calls stop; the cache's go on, for whoever else waits for them.
            unfinished = [t for t in own if not t.done()]
            for task in unfinished:
                task.cancel()
            if unfinished:
                await asyncio.wait(unfinished)
        for n, (future, joined) in waits.items():
            if future in late or future.cancelled():
                outcomes[n] = (_DEADLINE, "call")
            elif future.exception() is not None:
                error = future.exception()
                log.error("judge call failed outside its judge: %r", error)
                outcomes[n] = (Verdict.failed(f"internal: {error!r}"), "call")
            else:
                outcomes[n] = self.cache.settle(future.result(), joined)

    async def _until_done(
        self, futures: set[asyncio.Future[tuple[Verdict, Source]]], deadline: float | None
    ) -> None:
        """Wait until every one of ``futures`` is done, ``deadline`` passes or the engine
        expires, whichever comes first; the futures are left as they are."""
        # Gathering futures (not coroutines) starts no task, and nothing cancels the gather.
        everything = asyncio.gather(*futures, return_exceptions=True)
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        either: set[asyncio.Future[Any]] = {everything, self._expiry()}
        await asyncio.wait(either, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)

    def _expiry(self) -> asyncio.Future[None]:
        if self._expired is None:  # made in the loop the engine serves in
            self._expired = asyncio.get_running_loop().create_future()
        return self._expired

    async def _plan(
        self,
        rubric: Rubric,
        version: str,
        names: list[str],
        prepared: list[_Prepared],
        deadline: float | None,
        pacer: Pacer,
    ) -> list[_Call]:
        """One call per (item, judge, criterion), item-major so that the calls for one
        item reach a judge together and share its prefix cache; for a judge that batches
        criteria, one call per (item, judge, view) answering all its criteria. Step
        criteria keep one call per (step, criterion)."""
        identities = {name: self.judges[name].cache_identity() for name in names}
        calls: list[_Call] = []
        for pos, p in enumerate(prepared):
            await pacer.step()
            digest = p.rollout.digest()
            for name in names:
                judge = self.judges[name]
                if rubric.combine == "implicit":
                    run = functools.partial(
                        judge.score_holistic, rubric, p.rollout, deadline=deadline
                    )
                    key = cache_key(version, identities[name], aggregate.HOLISTIC, digest)
                    calls.append(_Call(pos, name, aggregate.HOLISTIC, key, run))
                    continue
                asked = [c for c in rubric.criteria if c.grader is None and c.scope != "step"]
                batching = batching_of(judge)
                if batching is not None:
                    for group in by_view(rubric, asked):
                        batch = SharedCall(
                            functools.partial(
                                batching.score_criteria, rubric, group, p.rollout, deadline=deadline
                            )
                        )
                        for criterion in group:
                            run = functools.partial(batch.verdict, criterion.id)
                            key = cache_key(version, identities[name], criterion.id, digest)
                            calls.append(_Call(pos, name, criterion.id, key, run, batch))
                    continue
                for criterion in asked:
                    run = functools.partial(
                        judge.score_criterion, rubric, criterion, p.rollout, deadline=deadline
                    )
                    key = cache_key(version, identities[name], criterion.id, digest)
                    calls.append(_Call(pos, name, criterion.id, key, run))
            # Process rewards: step-major, so that consecutive steps of one trajectory
            # reach a judge in order and reuse its prefix cache.
            for sc in steps.plan(rubric, p.rollout):
                step_digest = sc.rollout.digest()
                for name in names:
                    run = functools.partial(
                        self.judges[name].score_criterion,
                        rubric,
                        sc.criterion,
                        sc.rollout,
                        deadline=deadline,
                    )
                    key = cache_key(version, identities[name], sc.key, step_digest)
                    calls.append(_Call(pos, name, sc.key, key, run))
        return calls

    async def _calibrate(
        self, rubric: Rubric, version: str, names: list[str], rows: list[dict[str, JudgeOutcome]]
    ) -> None:
        """Per-judge calibration: this batch's raw scores join the judge's window first, so
        that a batch is calibrated against itself and its predecessors, and the result does
        not depend on the order of items within the batch."""
        agg = rubric.aggregation
        for name in names:
            # Keyed by version: an edited rubric (or an inline one reusing a library id)
            # must not be calibrated against another rubric's scores.
            reference = await self.windows.extend_and_stats(
                version,
                name,
                agg.calibration_window,
                [s for r in rows if (s := r[name].raw_score) is not None],
            )
            for row in rows:
                jr = row[name]
                if jr.raw_score is None:
                    continue
                jr.score, jr.variance = aggregate.calibrate(
                    agg.calibration, jr.raw_score, reference, variance=jr.variance
                )

    async def _assemble(
        self,
        rubric: Rubric,
        version: str,
        options: ScoreOptions,
        names: list[str],
        min_judges: int,
        prepared: list[_Prepared],
        verdicts: list[dict[str, dict[str, tuple[Verdict, Source]]]],
        pacer: Pacer,
    ) -> list[ItemReward]:
        episode = steps.episode_rubric(rubric)
        rows = []
        for per_judge in verdicts:
            await pacer.step()
            rows.append(
                {
                    name: judge_outcome(episode, episode_part(per_judge[name]))
                    if episode is not None
                    else JudgeOutcome(score=None, error="the rubric has only step criteria")
                    for name in names
                }
            )
        if episode is not None and rubric.aggregation.calibration != "none":
            await self._calibrate(rubric, version, names, rows)
        rule = options.rule or rubric.aggregation.rule
        rewards = []
        for p, row, per_judge in zip(prepared, rows, verdicts, strict=True):
            await pacer.step()
            rewards.append(
                item_reward(
                    rubric,
                    rule,
                    names,
                    min_judges,
                    f"items[{p.index}]",
                    p.id,
                    p.rollout,
                    p.flags,
                    row,
                    per_judge,
                    step_results(rubric, p.rollout, per_judge, rule, min_judges),
                )
            )
        return rewards

    def expire(self) -> None:
        """End the judge and grader work of every batch now, as if their deadlines had
        passed (on shutdown, so that they are answered, with judge_error where work was
        cut)."""
        expiry = self._expiry()
        if not expiry.done():
            expiry.set_result(None)
        if self.graders is not None:
            self.graders.expire()

    async def aclose(self) -> None:
        """Close the judges (their HTTP clients) and the verdict cache."""
        closing = await asyncio.gather(
            *(j.aclose() for j in self.judges.values()), return_exceptions=True
        )
        for outcome in closing:
            if isinstance(outcome, Exception):
                log.warning("closing a judge failed: %s", outcome)
        await self.cache.aclose()
