"""Request guards: body-size and batch-size limits, and bounded in-flight work (API-key
auth is :mod:`.api_keys`).

The body limit is pure ASGI middleware, so that an oversized request is refused before
its body is read or parsed. The batch and in-flight limits need the parsed request and
are applied by the routes.
Every refusal is an ``ErrorDetail`` body, like all other errors of the API.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardsvc.core.errors import ErrorKind, TooLarge, Unavailable
from rewardsvc.server.errors import FormOf, HttpRefusal, form_at

log = logging.getLogger(__name__)

# ------------------------------------------------------------------ body size


def body_too_large(limit: int) -> TooLarge:
    """The refusal of a body larger than ``limit`` bytes."""
    message = f"request body is larger than max_body_bytes={limit}"
    return TooLarge(message, kind=ErrorKind.PAYLOAD_TOO_LARGE, field="max_body_bytes")


class BodyTooLarge(HttpRefusal):
    """Raised from ``receive`` when a body grows past the limit while being read (an
    HTTPException: FastAPI answers any other exception from reading a body 400)."""

    def __init__(self, limit: int):
        super().__init__(body_too_large(limit))


class BodyLimitMiddleware:
    """Refuse request bodies larger than ``max_bytes`` with 413.

    A declared ``Content-Length`` over the limit is refused before anything is read;
    a chunked or understated body is cut off as soon as the bytes read pass the limit.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, forms: FormOf = form_at):
        self.app = app
        self.max_bytes = max_bytes
        self.forms = forms

    def _too_large(self, scope: Scope) -> JSONResponse:
        return self.forms(scope).response(body_too_large(self.max_bytes))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await self._too_large(scope)(scope, receive, send)
                    return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            # Normally the app's exception handlers turn it into a 413; this covers
            # a body read outside them.
            if not started:
                await self._too_large(scope)(scope, receive, send)


# ------------------------------------------------------------------ batch size and in-flight work


def check_batch(count: int, max_items: int, field: str = "items") -> None:
    """413 when a request carries more than ``max_items`` items."""
    if count > max_items:
        message = f"{field} has {count} entries, more than max_items={max_items}; split the batch"
        raise TooLarge(message, kind=ErrorKind.TOO_MANY_ITEMS, field=field)


class RetryAfter:
    """The ``Retry-After`` of a refusal that asks the client to come back: whole seconds
    within ``bounds`` (the setting ``retry_after_s``), drawn anew for each refusal so that
    refused clients do not all come back at the same moment."""

    def __init__(self, bounds: tuple[int, int] = (1, 4), seed: int | None = None):
        self.low, self.high = bounds
        self._random = random.Random(seed)

    def __call__(self) -> int:
        """Seconds the next refused client should wait."""
        return self._random.randint(self.low, self.high)


class InflightLimiter:
    """Counts the items and the planned judge calls of the requests being scored, and
    refuses work beyond ``limit`` items or ``call_limit`` calls.

    A refused request gets 429 with a jittered ``Retry-After`` (``retry_after``) at once,
    so overload shows up at the client (which retries or backs off, not all at the same
    moment) instead of as an unbounded queue inside the service. The counters live on one
    event loop, so they need no lock.
    """

    def __init__(
        self, limit: int, call_limit: int | None = None, retry_after: RetryAfter | None = None
    ):
        self.limit = limit
        self.call_limit = call_limit
        self.current = 0
        self.calls = 0
        self.retry_after = retry_after if retry_after is not None else RetryAfter()

    def saturated(self) -> bool:
        """True when no further request could be admitted now."""
        full_calls = self.call_limit is not None and self.calls >= self.call_limit
        return self.current >= self.limit or full_calls

    def try_acquire(self, count: int, calls: int = 0) -> bool:
        """Take ``count`` item slots and ``calls`` call slots if they are free; a request
        larger than a whole limit is still admitted when nothing else is in flight, so it
        cannot starve."""
        if self.current > 0 and (
            self.current + count > self.limit
            or (self.call_limit is not None and self.calls + calls > self.call_limit)
        ):
            return False
        self.current += count
        self.calls += calls
        return True

    def release(self, count: int, calls: int = 0) -> None:
        """Give back slots taken by ``try_acquire``."""
        self.current -= count
        self.calls -= calls

    def refusal(self, count: int, calls: int) -> Unavailable:
        """The 429 for a request of ``count`` items and ``calls`` calls that does not fit."""
        wait = self.retry_after()
        if self.current + count > self.limit:
            field = "max_inflight"
            message = (
                f"{self.current} items are being scored and {count} more would exceed "
                f"max_inflight={self.limit}; retry after {wait} s"
            )
        else:
            field = "max_inflight_calls"
            message = (
                f"{self.calls} judge calls are planned and {calls} more would exceed "
                f"max_inflight_calls={self.call_limit}; retry after {wait} s"
            )
        return Unavailable(message, kind=ErrorKind.OVERLOADED, field=field, retry_after=wait)

    @contextmanager
    def admit(self, count: int, calls: int = 0) -> Iterator[None]:
        """Hold the slots for the duration of the block, or raise the 429's refusal."""
        if not self.try_acquire(count, calls):
            raise self.refusal(count, calls)
        try:
            yield
        finally:
            self.release(count, calls)


class Admission(Protocol):
    """What the admission middleware asks of the running service."""

    draining: bool
    limiter: InflightLimiter


class Turns:
    """Lets at most ``per_tick`` requests start per turn of the event loop; the others wait
    their turn, first come first served.

    A request that is all cache hits parses, scores and answers without suspending once, so
    a burst of them would otherwise run back to back in one turn of the loop, and a probe
    (``/healthz``) waits for the whole burst. Paced, each turn runs a few of them and the
    probe's own step.
    """

    def __init__(self, per_tick: int):
        if per_tick < 1:
            raise ValueError("per_tick must be at least 1")
        self.per_tick = per_tick
        self._passed = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._ticking = False

    async def wait(self) -> None:
        """Return when it is this request's turn (at once while the loop is not busy)."""
        if not self._waiting and self._passed < self.per_tick:
            self._passed += 1
            self._tick_soon()
            return
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        self._tick_soon()
        await turn  # cancelled while waiting: the tick skips it

    def _tick_soon(self) -> None:
        if not self._ticking:
            self._ticking = True
            asyncio.get_running_loop().call_soon(self._tick)

    def _tick(self) -> None:
        # Runs in the next turn of the loop: the requests let through in this one have run
        # their first step by now.
        self._ticking = False
        self._passed = 0
        while self._waiting and self._passed < self.per_tick:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                self._passed += 1
        if self._passed:
            self._tick_soon()


# A request that is all cache hits costs a few ms of CPU: a turn of the loop that starts four
# of them stays well under the probes' budget while a burst is served at the loop's full pace.
STARTS_PER_TICK = 4


class AdmissionMiddleware:
    """Refuses scoring requests before their body is read: 503 while the service drains
    for shutdown, 429 while the in-flight bounds are full (both with Retry-After); lets the
    others start a few per turn of the event loop (:class:`Turns`), so that probes are
    answered during a burst.

    ``service`` returns the running service (None before start-up and after shutdown).
    """

    def __init__(
        self,
        app: ASGIApp,
        service: Callable[[], Admission | None],
        starts_per_tick: int = STARTS_PER_TICK,
        forms: FormOf = form_at,
    ):
        self.app = app
        self.service = service
        self.forms = forms
        self.turns = Turns(starts_per_tick)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        service = self.service()
        if service is not None and service.draining:
            wait = service.limiter.retry_after()
            message = (
                f"the service is shutting down; retry after {wait} s (another replica may answer)"
            )
            draining = Unavailable(message, kind=ErrorKind.SHUTTING_DOWN, retry_after=wait)
            await self.forms(scope).response(draining)(scope, receive, send)
            return
        if service is not None and service.limiter.saturated():
            refusal = service.limiter.refusal(1, 1)
            await self.forms(scope).response(refusal)(scope, receive, send)
            return
        await self.turns.wait()
        await self.app(scope, receive, send)


class CancelOnDisconnect:
    """Cancels a request's handler when its client disconnects after sending the request,
    so judge work nobody will read stops (work shared with other requests goes on)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body_read = asyncio.Event()
        gone = asyncio.Event()

        async def app_receive() -> Message:
            if body_read.is_set():
                # The watcher owns the connection's receive from here on.
                await gone.wait()
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.disconnect":
                gone.set()
            elif not message.get("more_body", False):
                body_read.set()
            return message

        answered = False

        async def app_send(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered = True
            await send(message)

        handler = asyncio.ensure_future(self.app(scope, app_receive, app_send))

        async def watch() -> None:
            await body_read.wait()
            message = await receive()
            if message["type"] == "http.disconnect" and not answered:
                gone.set()
                handler.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            await handler
        except asyncio.CancelledError:
            if not gone.is_set():
                raise
            log.info("client went away before its answer; its judge work was cancelled")
        finally:
            watcher.cancel()
