"""OpenAI-compatible clients for one judge: base-URL pool, limits, deadlines, retries, breakers.

A :class:`Backend` owns one HTTP client per base URL of a judge and
sends each call to a base URL whose circuit breaker (``rewardsvc.judges.breaker``)
lets it through, chosen by ``rewardsvc.judges.routing``: a call with an affinity (digests
of the item's and its task's shared prompt prefixes) goes to the URL its task hashes to,
so the calls of one item, and the items of one task, meet one replica's prefix cache,
unless that URL has too many calls in flight (then an item's first call goes elsewhere
and its other calls follow it); a call without one goes round robin. Calls are limited by one
semaphore per judge (``max_concurrency``) and each client's connection pool is sized
to the same number, so connections are reused and never queue inside the HTTP layer.
The client is ``rewardsvc.judges.transport``: the request bodies the shapes build, as
JSON POSTs on keep-alive aiohttp connections, the replies parsed into plain dicts (no
SDK models: the ``openai`` client cost four times its CPU per call on this hot path).

Time is bounded twice. Each attempt has ``timeout_s`` in total (not per read: a
judge that trickles bytes is cut off like one that stalls). Each call has a
deadline covering the wait for a free slot, every attempt and every backoff:
``call_deadline_s`` of the judge config when it has one, else enough for every
attempt and the longest backoffs, or sooner when the caller passes its own ``deadline`` (a
``time.monotonic()`` instant, e.g. the end of a trainer's request).

Retries follow one policy (``rewardsvc.judges.retrying``: 429, 5xx, connection errors,
timeouts and malformed 200s with backoff, never another 4xx, never past the deadline). A
retry goes to another base URL than the ones that failed in this call (when there is
one), so one dead replica costs one failed attempt, not a failed call. Thousands of calls
a second go through here, nearly all answered at their first attempt, so the first
attempt goes straight out and the retry loop is built only for a call whose first
attempt failed. When every URL's breaker is open a call fails at once.

A judge with ``rate_limit`` (a hosted API) also waits, holding its slot, in its
:class:`~rewardsvc.judges.ratelimit.RateLimiter` before each attempt (retries included:
the provider counts them too); every reply's headers move the limiter, every 2xx reply
settles its tokens there and is metered for its cost (``rewardsvc.judges.pricing``).

Failures are :class:`~rewardsvc.judges.failures.BackendError` with a typed kind and a
message without URLs (it reaches clients); each failed attempt is logged with its URL and
cause (``FailureLog``, throttled). Breaker changes are reported to the
:class:`~rewardsvc.core.observe.Observer`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection
from typing import Any

from rewardsvc.core.observe import NULL_OBSERVER, Observer
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.judges import pricing, routing
from rewardsvc.judges.breaker import BreakerPolicy
from rewardsvc.judges.endpoints import Endpoint, Pins, open_endpoint
from rewardsvc.judges.failures import BackendError, FailureLog, classify
from rewardsvc.judges.keys import KeySource
from rewardsvc.judges.ratelimit import RateLimiter, prompt_chars
from rewardsvc.judges.retrying import Retries, RetryPolicy, call_deadline_s

__all__ = ["Backend", "RetryPolicy", "call_deadline_s"]
from rewardsvc.judges.routing import Affinity
from rewardsvc.judges.shapes import CHAT, COMPLETION, Reply, Route
from rewardsvc.judges.transport import TRANSPORT_ERRORS

# How much of a malformed 200's body is quoted in the error.
_SNIPPET_CHARS = 120
# A probe fails on a key that cannot be read (KeyError) as on a transport error.
_PROBE_ERRORS: tuple[type[BaseException], ...] = (KeyError, *TRANSPORT_ERRORS)


class Backend:
    """The OpenAI-compatible endpoints of one judge: :meth:`send` (and its :meth:`chat`,
    :meth:`complete` forms), :meth:`reachable`."""

    def __init__(
        self,
        name: str,
        config: JudgeConfig,
        *,
        retry: RetryPolicy | None = None,
        breaker: BreakerPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        observer: Observer = NULL_OBSERVER,
    ):
        self.name = name
        self.config = config
        self.retry = retry or RetryPolicy()
        self.observer = observer
        self.failures = FailureLog()
        self.keys = KeySource(config)
        self.deadline_s = call_deadline_s(config, self.retry)
        breaker = breaker or BreakerPolicy()
        self.endpoints = [
            open_endpoint(name, str(base).rstrip("/"), config, breaker, clock, observer)
            for base in config.base_urls
        ]
        self._urls = [e.url for e in self.endpoints]
        # Where the latest call of each recent item (its affinity's item key) went (routing's
        # ``pinned``).
        self._pins = Pins()
        self._next = 0
        self._sem = asyncio.Semaphore(config.max_concurrency)
        limits = getattr(config, "rate_limit", None)
        held = config.retry_after_max_s  # the longest a header may hold the judge's calls
        self.limiter = None if limits is None else RateLimiter(limits, max_wait_s=held)
        # Where each reply's status and headers go: the rate limiter, when there is one.
        self._headers = None if self.limiter is None else self.limiter.observe
        self._retries = Retries(config, self.retry)

    def _pick(self, affinity: Affinity | None = None, avoid: Collection[str] = ()) -> Endpoint:
        """The endpoint for a call with this affinity (None: round robin) whose breaker
        allows it, URLs in ``avoid`` (failed earlier in the call) last."""
        if len(self.endpoints) == 1:
            # One URL: there is nothing to route, only its breaker to ask.
            only = self.endpoints[0]
            if only.breaker.allow():
                return only
        else:
            urls = self._urls
            routed = affinity if self.config.routing == "affine" else None
            order = routing.preference(
                None if routed is None else routed.group,
                urls,
                [e.in_flight for e in self.endpoints],
                load_factor=self.config.load_factor,
                cursor=self._next,
                avoid={i for i, u in enumerate(urls) if u in avoid},
                pinned=None if routed is None else self._pins.get(routed.item),
            )
            chosen = routing.pick(order, lambda i: self.endpoints[i].breaker.allow())
            if chosen is not None:
                self._next = (chosen + 1) % len(urls)
                if routed is not None:
                    self._pins.pin(routed.item, chosen)
                return self.endpoints[chosen]
        last = "; ".join(f"{e.url}: {e.breaker.last_error}" for e in self.endpoints)
        error = BackendError(
            "unavailable",
            f"every base URL of judge {self.name!r} is failing (circuit open)",
            detail=last,
        )
        self.failures.note(self.name, error)
        raise error

    def _auth(self) -> str:
        # Per request, so that a rotated key file takes effect on the next call.
        return f"Bearer {self.keys.current()}"

    async def _attempt(
        self,
        shape: Route,
        body: dict[str, Any],
        deadline: float,
        affinity: Affinity | None = None,
        avoid: Collection[str] = (),
    ) -> Reply:
        if self._sem.locked():
            try:
                async with asyncio.timeout(deadline - time.monotonic()):
                    await self._sem.acquire()
            except TimeoutError:
                raise BackendError(
                    "deadline",
                    f"no free slot of judge {self.name!r} before the call's deadline "
                    f"({self.config.max_concurrency} calls in flight)",
                ) from None
        else:
            # A free slot is taken without suspending: there is no wait to bound.
            await self._sem.acquire()
        try:
            budget = min(self.config.timeout_s, deadline - time.monotonic())
            if budget <= 0:
                raise BackendError("deadline", "the call's deadline passed before an attempt")
            if self.limiter is not None:
                return await self._limited(shape, body, deadline, affinity, avoid)
            return await self._send_to(shape, body, budget, affinity, avoid)
        finally:
            self._sem.release()

    async def _send_to(
        self, shape: Route, body: dict[str, Any], budget: float, *routed: Any
    ) -> Reply:
        """One POST to the endpoint picked for the call, within ``budget`` seconds; its
        breaker and the failure counts learn how it went. (One coroutine with the POST:
        each wait of a judge call resumes every coroutine of its chain.)"""
        endpoint = self._pick(*routed)
        endpoint.calls += 1
        endpoint.in_flight += 1
        try:
            try:
                async with asyncio.timeout(budget) as limit:
                    response = await endpoint.client.post(
                        shape.path, body, self._auth(), self._headers, from_root=shape.from_root
                    )
            except TimeoutError:
                if not limit.expired():
                    raise
                raise self._timed_out(budget, endpoint.url) from None
            if not shape.well_formed(response):
                raise BackendError(
                    "unparseable",
                    f"answered 200 without a {shape.path} JSON body: {_snippet(response)}",
                    url=endpoint.url,
                )
        except Exception as exc:
            error = classify(exc, endpoint.url)
            self.failures.note(self.name, error)
            if error.breaker_failure:
                endpoint.breaker.failure(str(error))
            else:
                endpoint.breaker.success()
            raise error from exc
        except BaseException:
            endpoint.breaker.release()
            raise
        finally:
            endpoint.in_flight -= 1
        endpoint.breaker.success()
        pricing.record(pricing.reply_tokens(response))
        return response

    def _timed_out(self, budget: float, url: str) -> BackendError:
        """The error of an attempt whose ``budget`` ran out: the call's deadline when that
        was shorter than the judge's timeout, else the timeout."""
        if budget < self.config.timeout_s:
            return BackendError(
                "deadline", "the judge had not answered when the call's deadline came", url=url
            )
        return BackendError(
            "timeout", f"no complete answer in {self.config.timeout_s:g} s", url=url
        )

    async def _limited(
        self, shape: Route, body: dict[str, Any], deadline: float, *routed: Any
    ) -> Reply:
        """One attempt through the rate limiter: wait for its request and tokens, send,
        settle the reply's prompt tokens against the estimate."""
        assert self.limiter is not None
        estimate, taken = self.limiter.estimate(body)
        await self.limiter.acquire(taken, deadline, self.name)
        try:
            budget = min(self.config.timeout_s, deadline - time.monotonic())
            if budget <= 0:
                raise BackendError("deadline", "the call's deadline passed before an attempt")
            reply = await self._send_to(shape, body, budget, *routed)
        finally:
            self.limiter.done()
        self.limiter.settle(estimate, prompt_chars(body), pricing.reply_tokens(reply)[0])
        return reply

    def deadline_for(self, deadline: float | None) -> float:
        """The absolute deadline of a call starting now, capped by the caller's ``deadline``."""
        own = time.monotonic() + self.deadline_s
        return own if deadline is None else min(own, deadline)

    async def send(
        self,
        shape: Route,
        body: dict[str, Any],
        deadline: float | None = None,
        *,
        affinity: Affinity | None = None,
    ) -> Reply:
        """POST ``body`` (the model is added) to ``shape``'s endpoint, with retries.

        ``deadline`` is a ``time.monotonic()`` instant by which the call must be over
        (slot wait, attempts and backoff included); ``affinity`` routes the call
        (``Prompt.affinity``: the calls of one item go to the same base URL while it is
        healthy, and the items of one task to the same one while it is not overloaded).
        Raises :class:`BackendError`.
        """
        limit = self.deadline_for(deadline)
        body = {"model": self.config.model, **body}
        failed: set[str] = set()
        try:
            return await self._attempt(shape, body, limit, affinity, failed)
        except BackendError as exc:
            if exc.url is not None:
                failed.add(exc.url)
            first = exc
        return await self._retries.rest(
            lambda: self._attempt(shape, body, limit, affinity, failed), limit, failed, first
        )

    async def chat(self, *, deadline: float | None = None, **body: Any) -> Reply:
        """``POST /chat/completions`` with ``body`` as the JSON fields (vLLM's own fields
        such as ``structured_outputs`` included); as :meth:`send`."""
        return await self.send(CHAT, body, deadline)

    async def complete(self, *, deadline: float | None = None, **body: Any) -> Reply:
        """``POST /completions``, otherwise as :meth:`chat`."""
        return await self.send(COMPLETION, body, deadline)

    async def reachable(self, timeout: float = 2.0) -> bool:
        """Whether any base URL answers ``GET {base_url}/models`` with the judge's key.

        A URL whose breaker is open counts as unreachable without a request. Probes do
        not move breakers: a model list says little about whether completions work.
        """
        candidates = [e for e in self.endpoints if e.breaker.state != "open"]
        if not candidates:
            return False
        answers = await asyncio.gather(*(self._lists_models(e, timeout) for e in candidates))
        return any(answers)

    async def _lists_models(self, endpoint: Endpoint, timeout: float) -> bool:
        return await self._models(endpoint, timeout) is not None

    async def models(self, timeout: float = 2.0) -> dict[str, Any] | None:
        """The ``GET /models`` reply of the first base URL (breaker not open) that answers
        one, as a JSON object with a ``data`` list; None when none does."""
        for endpoint in self.endpoints:
            if endpoint.breaker.state == "open":
                continue
            reply = await self._models(endpoint, timeout)
            if reply is not None:
                return reply
        return None

    async def _models(self, endpoint: Endpoint, timeout: float) -> dict[str, Any] | None:
        try:
            async with asyncio.timeout(timeout):
                reply = await endpoint.client.get("/models", self._auth())
        except _PROBE_ERRORS:
            return None
        if isinstance(reply, dict) and isinstance(reply.get("data"), list):
            return reply
        return None

    async def aclose(self) -> None:
        """Close every client's connection pool."""
        for endpoint in self.endpoints:
            await endpoint.client.aclose()


def _snippet(response: Any) -> str:
    text = response if isinstance(response, str) else repr(response)
    text = " ".join(text.split())
    return repr(text[:_SNIPPET_CHARS] + ("..." if len(text) > _SNIPPET_CHARS else ""))
