"""OpenAI-compatible clients for one judge: base-URL pool, limits, timeouts, retries, breakers.

A :class:`Backend` owns one ``AsyncOpenAI`` client per base URL of a judge and
sends each call to the next base URL in round-robin order whose circuit
breaker lets it through. Calls are limited by one semaphore per judge
(``max_concurrency``) and each client's connection pool (the SDK's aiohttp
transport) is sized to the same number, so connections are reused and never
queue inside the HTTP layer.

Retries are ours (tenacity), not the openai client's (``max_retries=0``), so
that one policy applies everywhere: retry 429, 5xx, connection errors and
timeouts with exponential backoff plus jitter, wait at least what a
``Retry-After`` header asks, never retry another 4xx (the request itself is
wrong and would fail again). A retry goes to the next base URL, so one dead
replica costs one failed attempt, not a failed call.

Each base URL has a circuit breaker: after ``threshold`` consecutive failures
(5xx, connection, timeout) it opens and the URL is skipped; after
``cooldown_s`` one probe call is let through (half-open); its success closes
the breaker, its failure opens it again. When every URL is open a call fails
at once instead of waiting for timeouts.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp
import httpx2
import openai
from openai.types import Completion
from openai.types.chat import ChatCompletion
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.server.metrics import BREAKER_OPEN

ErrorKind = Literal[
    "timeout", "connection", "rate_limited", "server_error", "client_error", "unavailable", "other"
]

_RETRYABLE: frozenset[str] = frozenset({"timeout", "connection", "rate_limited", "server_error"})
# 429 means the server is alive but busy: it slows us down (Retry-After), it does not trip
# the breaker. A 4xx is our request's fault and says nothing about the server's health.
_BREAKER_FAILURES: frozenset[str] = frozenset({"timeout", "connection", "server_error"})


class BackendError(Exception):
    """A judge call that failed; ``kind`` names why (it labels the error metric)."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        url: str | None = None,
    ):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after
        self.url = url

    @property
    def retryable(self) -> bool:
        """True for 429, 5xx, connection errors and timeouts."""
        return self.kind in _RETRYABLE

    def __str__(self) -> str:
        return f"{self.kind}: {self.args[0]}"


def parse_retry_after(headers: Any) -> float | None:
    """Seconds asked by ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def classify(exc: BaseException, url: str) -> BackendError:
    """Map an openai/HTTP exception to a :class:`BackendError`."""
    if isinstance(exc, BackendError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        refused = _refused_connection(exc)
        if refused is not None:
            return BackendError("connection", f"{url}: {refused}", url=url)
        return BackendError("timeout", f"no answer from {url} in time", url=url)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return BackendError("connection", f"{url}: {cause}", url=url)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        message = f"HTTP {status} from {url}: {exc.message}"
        if status == 429:
            retry_after = parse_retry_after(exc.response.headers)
            return BackendError(
                "rate_limited", message, status=status, retry_after=retry_after, url=url
            )
        if status >= 500:
            retry_after = parse_retry_after(exc.response.headers)
            return BackendError(
                "server_error", message, status=status, retry_after=retry_after, url=url
            )
        return BackendError("client_error", message, status=status, url=url)
    return BackendError("other", f"{url}: {type(exc).__name__}: {exc}", url=url)


def _refused_connection(exc: BaseException) -> BaseException | None:
    """The connect failure behind a timeout error of the aiohttp transport, if any.

    openai's aiohttp transport reports a refused or unresolvable connection as a connect
    *timeout*; the aiohttp error it chains says what really happened.
    """
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, aiohttp.ClientConnectorError) and not isinstance(
            cause, asyncio.TimeoutError
        ):
            return cause
        cause = cause.__cause__
    return None


BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Closed -> open after ``threshold`` consecutive failures -> half-open after ``cooldown_s``.

    In half-open state exactly one probe call is let through at a time.
    """

    def __init__(
        self,
        threshold: int = 3,
        cooldown_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[BreakerState], None] | None = None,
    ):
        self.threshold = threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._on_change = on_change
        self._state: BreakerState = "closed"
        self._failures = 0
        self._opened_at = 0.0
        self._probing = False
        self.last_error: str | None = None

    @property
    def state(self) -> BreakerState:
        """The state now (an open breaker past its cooldown reads as half-open)."""
        if self._state == "open" and self._clock() - self._opened_at >= self.cooldown_s:
            return "half_open"
        return self._state

    def _set(self, state: BreakerState) -> None:
        if state != self._state:
            self._state = state
            if self._on_change is not None:
                self._on_change(state)

    def allow(self) -> bool:
        """May a call go out now? Reserves the probe slot when half-open."""
        state = self.state
        if state == "closed":
            return True
        if state == "open" or self._probing:
            return False
        self._set("half_open")
        self._probing = True
        return True

    def success(self) -> None:
        """The server answered (any answer but a 5xx): close."""
        self._failures = 0
        self._probing = False
        self._set("closed")

    def failure(self, error: str) -> None:
        """A 5xx, connection error or timeout: open at the threshold, or on a failed probe."""
        self.last_error = error
        self._failures += 1
        if self._probing or self._state == "half_open" or self._failures >= self.threshold:
            self._opened_at = self._clock()
            self._probing = False
            self._set("open")

    def release(self) -> None:
        """A call that ended without telling anything (cancelled): free the probe slot."""
        self._probing = False


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff of retried attempts; the number of retries is the judge's ``retries``."""

    initial_s: float = 0.25
    max_s: float = 8.0
    jitter_s: float = 0.25
    # A Retry-After longer than this is not waited for: the call fails instead.
    retry_after_max_s: float = 60.0


@dataclass(frozen=True)
class BreakerPolicy:
    """Circuit breaker settings, one breaker per base URL."""

    threshold: int = 3
    cooldown_s: float = 10.0


@dataclass
class Endpoint:
    """One base URL of a judge: its client, its breaker and a count of calls sent to it."""

    url: str
    client: openai.AsyncOpenAI
    breaker: CircuitBreaker
    calls: int = field(default=0)


class Backend:
    """The OpenAI-compatible endpoints of one judge: :meth:`chat` and :meth:`complete`."""

    def __init__(
        self,
        name: str,
        config: JudgeConfig,
        *,
        retry: RetryPolicy | None = None,
        breaker: BreakerPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.name = name
        self.config = config
        self.retry = retry or RetryPolicy()
        breaker = breaker or BreakerPolicy()
        api_key = config.api_key()
        timeout = httpx2.Timeout(config.timeout_s, connect=min(5.0, config.timeout_s))
        limits = httpx2.Limits(
            max_connections=config.max_concurrency,
            max_keepalive_connections=config.max_concurrency,
        )
        self.endpoints: list[Endpoint] = []
        for base in config.base_urls:
            url = str(base).rstrip("/")
            client = openai.AsyncOpenAI(
                api_key=api_key,
                base_url=url,
                max_retries=0,
                timeout=timeout,
                http_client=openai.DefaultAioHttpClient(timeout=timeout, limits=limits),
            )
            gauge = BREAKER_OPEN.labels(judge=name, url=url)
            gauge.set(0)
            self.endpoints.append(
                Endpoint(
                    url=url,
                    client=client,
                    breaker=CircuitBreaker(
                        breaker.threshold,
                        breaker.cooldown_s,
                        clock=clock,
                        on_change=lambda s, g=gauge: g.set(1 if s == "open" else 0),
                    ),
                )
            )
        self._next = 0
        self._sem = asyncio.Semaphore(config.max_concurrency)
        self._backoff = wait_exponential_jitter(
            multiplier=self.retry.initial_s, max=self.retry.max_s, jitter=self.retry.jitter_s
        )

    def _pick(self) -> Endpoint:
        """The next endpoint in round-robin order whose breaker allows a call."""
        n = len(self.endpoints)
        for i in range(n):
            endpoint = self.endpoints[(self._next + i) % n]
            if endpoint.breaker.allow():
                self._next = (self._next + i + 1) % n
                return endpoint
        last = "; ".join(f"{e.url}: {e.breaker.last_error}" for e in self.endpoints)
        raise BackendError(
            "unavailable",
            f"every base URL of judge {self.name!r} is failing (circuit open): {last}",
        )

    def _wait(self, state: RetryCallState) -> float:
        backoff = float(self._backoff(state))
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, BackendError) and exc.retry_after is not None:
            return max(backoff, exc.retry_after)
        return backoff

    def _should_retry(self, exc: BaseException) -> bool:
        if not isinstance(exc, BackendError) or not exc.retryable:
            return False
        return exc.retry_after is None or exc.retry_after <= self.retry.retry_after_max_s

    async def _attempt(self, op: Literal["chat", "completion"], body: dict[str, Any]) -> Any:
        async with self._sem:
            endpoint = self._pick()
            endpoint.calls += 1
            try:
                # The client's documented low-level post, not ``create()``: it sends the same
                # body but skips the SDK's typed transform of the parameters, which took
                # 1.8 of the 4.2 ms of service CPU per judge call (bench part 2, one request).
                if op == "chat":
                    response = await endpoint.client.post(
                        "/chat/completions", body=body, cast_to=ChatCompletion
                    )
                else:
                    response = await endpoint.client.post(
                        "/completions", body=body, cast_to=Completion
                    )
            except Exception as exc:
                error = classify(exc, endpoint.url)
                if error.kind in _BREAKER_FAILURES:
                    endpoint.breaker.failure(str(error))
                else:
                    endpoint.breaker.success()
                raise error from exc
            except BaseException:
                endpoint.breaker.release()
                raise
            endpoint.breaker.success()
            return response

    async def _call(self, op: Literal["chat", "completion"], body: dict[str, Any]) -> Any:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.retries + 1),
            wait=self._wait,
            retry=retry_if_exception(self._should_retry),
            reraise=True,
            sleep=asyncio.sleep,
        )
        last: BackendError | None = None
        refused: BackendError | None = None
        async for attempt in retrying:
            with attempt:
                try:
                    return await self._attempt(op, body)
                except BackendError as exc:
                    if exc.kind != "unavailable" or last is None:
                        last = exc
                        raise
                    refused = exc
            if refused is not None:
                break
        if refused is not None and last is not None:
            # Breakers that opened during this call's own retries: fail now (retrying
            # would only be refused again) with the failure that opened them.
            raise last from refused
        raise AssertionError("unreachable: tenacity reraises the last error")  # pragma: no cover

    async def chat(self, **body: Any) -> ChatCompletion:
        """``POST /chat/completions`` with ``body`` as the JSON fields (vLLM's own fields
        such as ``structured_outputs`` included) and retries; raises :class:`BackendError`."""
        return await self._call("chat", {"model": self.config.model, **body})

    async def complete(self, **body: Any) -> Completion:
        """``POST /completions``, otherwise as :meth:`chat`."""
        return await self._call("completion", {"model": self.config.model, **body})

    async def aclose(self) -> None:
        """Close every client's connection pool."""
        for endpoint in self.endpoints:
            await endpoint.client.close()
