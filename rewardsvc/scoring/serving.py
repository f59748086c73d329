"""Serving a batch's planned judge calls: from the verdict cache, from an identical call
already in flight, or by calling, each bounded by the request's deadline and the engine's
expiry.

The engine plans the calls (``planning``) and hands them here; what comes back is one
(verdict, source) per call, in the calls' order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from rewardsvc.core.results import Usage
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.batching import SharedCall
from rewardsvc.scoring import agentic
from rewardsvc.scoring.pacing import Pacer, cancel_unfinished
from rewardsvc.scoring.planning import Call
from rewardsvc.storage.cache import Source, VerdictCache

log = logging.getLogger(__name__)

Outcome = tuple[Verdict, Source]
"""A call's verdict and where it came from."""

G = TypeVar("G")
"""What a request's graders give (per item, or per group and completion)."""

_Waits = dict[int, tuple[asyncio.Future[Outcome], bool]]

_NO_VERDICT: Outcome = (Verdict.failed("not scored"), "call")
_DEADLINE = Verdict.failed("deadline: the request's deadline passed first", kind="deadline")


class Expiry:
    """The engine's shutdown signal: once ``expire`` is called, every batch's judge work
    ends as if its deadline had passed."""

    def __init__(self) -> None:
        self._expired: asyncio.Future[None] | None = None  # done once ``expire`` is called

    def future(self) -> asyncio.Future[None]:
        """The future that is done once the engine expired."""
        if self._expired is None:  # made in the loop the engine serves in
            self._expired = asyncio.get_running_loop().create_future()
        return self._expired

    def expire(self) -> None:
        """Set the signal (idempotent)."""
        expiry = self.future()
        if not expiry.done():
            expiry.set_result(None)

    def past(self, deadline: float | None) -> bool:
        """Whether ``deadline`` has passed or the engine expired."""
        expired = self._expired is not None and self._expired.done()
        return expired or (deadline is not None and time.monotonic() >= deadline)


async def serve(
    cache: VerdictCache,
    expiry: Expiry,
    calls: list[Call],
    use_cache: bool,
    deadline: float | None,
    pacer: Pacer,
) -> list[Outcome]:
    """Each of ``calls``' outcome, in order: a cache hit, a call joined in flight (dedup),
    or a call of its own; one unfinished by ``deadline`` (or the expiry) fails as
    ``deadline``."""
    outcomes: list[Outcome] = [_NO_VERDICT] * len(calls)
    # Memory hits are served here. The rest wait for the cache's task for their key,
    # shared with any request asking the same (joined: a dedup), or without the
    # cache for a call of this request's own.
    waits: _Waits = {}
    own: list[asyncio.Task[Outcome]] = []
    for n, c in enumerate(calls):
        await pacer.step()  # before the lookup: a key looked up is started at once
        if not use_cache:
            task = asyncio.ensure_future(cache.get_or_call(c.key, c.run, use_cache=False))
            own.append(task)
            waits[n] = (task, False)
        elif (hit := cache.lookup(c.key)) is not None:
            outcomes[n] = (hit, "hit")
        else:
            waits[n] = cache.start(c.key, c.run)
    while waits:
        await _settle(cache, expiry, waits, own, deadline, outcomes)
        # A joined call runs with the deadline of the request that started it: one that
        # ended on that deadline is asked again for this request, by its own deadline.
        again = [
            n
            for n, (future, joined) in waits.items()
            if joined and outcomes[n][1] == "dedup" and outcomes[n][0].error_kind == "deadline"
        ]
        if not again or expiry.past(deadline):
            break
        waits = {n: cache.start(calls[n].key, calls[n].run) for n in again}
    return outcomes


Serving = Callable[[list[Call]], Awaitable[list[Outcome]]]
"""Serves some calls: each one's outcome, in order (:func:`serve` with a request's cache,
expiry, deadline and pacer)."""


async def serve_beside_graders(
    serving: Serving,
    calls: list[Call],
    grading: Awaitable[G] | None,
    ungraded: G,
    contexts: Callable[[G], None],
    plain: Serving | None = None,
) -> tuple[list[Outcome], G]:
    """Each of ``calls``' outcome, in order, and what ``grading`` gave (``ungraded`` when
    there is nothing to grade): the plain calls served beside the graders (by ``plain``
    when given, e.g. a cascade's stages, else by ``serving``), then, once ``contexts`` set
    the agentic calls' tool contexts from the graders' results (which their tools show),
    the agentic calls by ``serving``."""
    first = [c for c in calls if c.tools is None]
    judged = (plain or serving)(first)
    if grading is not None:
        outcomes, graded = await asyncio.gather(judged, grading)
    else:  # nothing to grade: no tasks to run the judge calls beside nothing
        outcomes, graded = await judged, ungraded
    if len(first) == len(calls):
        return outcomes, graded
    contexts(graded)
    looped = iter(await serving([c for c in calls if c.tools is not None]))
    served = iter(outcomes)
    return [next(served) if c.tools is None else next(looped) for c in calls], graded


async def _settle(
    cache: VerdictCache,
    expiry: Expiry,
    waits: _Waits,
    own: list[asyncio.Task[Outcome]],
    deadline: float | None,
    outcomes: list[Outcome],
) -> None:
    """Wait for ``waits`` until ``deadline`` and put each one's outcome in ``outcomes``."""
    futures = {future for future, _ in waits.values()}
    try:
        await _until_done(expiry, futures, deadline)
        late = {f for f in futures if not f.done()}
    finally:
        # Cancelled by the caller (the client went away) or past the deadline: this
        # request's own calls stop; the cache's go on, for whoever else waits for them.
        await cancel_unfinished(own)
    for n, (future, joined) in waits.items():
        if future in late or future.cancelled():
            outcomes[n] = (_DEADLINE, "call")
        elif future.exception() is not None:
            error = future.exception()
            log.error("judge call failed outside its judge: %r", error)
            outcomes[n] = (Verdict.failed(f"internal: {error!r}"), "call")
        else:
            outcomes[n] = cache.settle(future.result(), joined)


async def _until_done(
    expiry: Expiry, futures: set[asyncio.Future[Outcome]], deadline: float | None
) -> None:
    """Wait until every one of ``futures`` is done, ``deadline`` passes or the engine
    expires, whichever comes first; the futures are left as they are."""
    # Gathering futures (not coroutines) starts no task, and nothing cancels the gather.
    everything = asyncio.gather(*futures, return_exceptions=True)
    timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
    either: set[asyncio.Future[Any]] = {everything, expiry.future()}
    await asyncio.wait(either, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)


def tally(
    calls: list[Call], outcomes: list[Outcome], names: list[str], items: int, usage: Usage
) -> list[dict[str, dict[str, Outcome]]]:
    """Each item's verdicts (judge name -> criterion id -> outcome) from the calls'
    outcomes, counting the calls, tokens and cache hits into ``usage``."""
    verdicts: list[dict[str, dict[str, Outcome]]] = [
        {name: {} for name in names} for _ in range(items)
    ]
    batches: set[SharedCall] = set()
    for call, (verdict, source) in zip(calls, outcomes, strict=True):
        verdicts[call.item][call.judge][call.criterion] = (verdict, source)
        if source == "call" and call.batch is not None:
            if call.batch in batches:
                continue  # every verdict of a batched call carries the call's cost
            batches.add(call.batch)
        if source == "call":
            usage.called(verdict)
            if call.tools is not None:
                agentic.count_loop(usage, verdict)
        elif source == "hit":
            usage.cache_hits += 1
    return verdicts
