"""How a judge call retries: the backoff policy, the longest a call may take, and the retry
loop of a call whose first attempt failed.

:mod:`rewardsvc.judges.backends` applies them (and re-exports the policy and the deadline).
Retries are ours (tenacity), not the HTTP client's (it has none), so that one policy
applies everywhere: retry 429, 5xx, connection errors, timeouts and malformed 200s with
exponential backoff plus jitter, wait at least what a ``Retry-After`` header asks (a call
asked more than the judge's ``retry_after_max_s`` fails instead), never retry another 4xx,
never start a backoff that would end past the deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.judges.failures import BackendError

_T = TypeVar("_T")


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff of retried attempts; the number of retries is the judge's ``retries``, and
    the longest ``Retry-After`` waited for its ``retry_after_max_s`` (a longer ask fails
    the call)."""

    initial_s: float = 0.25
    max_s: float = 8.0
    jitter_s: float = 0.25


def call_deadline_s(config: JudgeConfig, retry: RetryPolicy) -> float:
    """The longest one call may take, slot wait and retries included.

    ``call_deadline_s`` of the judge config when it has one; else every attempt's
    ``timeout_s`` plus the longest backoff after each.
    """
    configured = getattr(config, "call_deadline_s", None)
    if configured is not None:
        return float(configured)
    return (config.timeout_s + retry.max_s) * (config.retries + 1)


class Retries:
    """The retry loop of one judge's calls, under its ``retries`` and ``retry_after_max_s``
    and the backoff of ``policy``."""

    def __init__(self, config: JudgeConfig, policy: RetryPolicy):
        self.config = config
        self._backoff = wait_exponential_jitter(
            multiplier=policy.initial_s, max=policy.max_s, jitter=policy.jitter_s
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
        return exc.retry_after is None or exc.retry_after <= self.config.retry_after_max_s

    async def rest(
        self,
        attempt: Callable[[], Awaitable[_T]],
        limit: float,
        failed: set[str],
        first: BackendError,
    ) -> _T:
        """The rest of a call whose first attempt failed with ``first``: more ``attempt``\\ s
        until one succeeds, the policy stops, or ``limit`` (a ``time.monotonic()`` instant)
        leaves no time for the next backoff. The loop replays ``first`` as its attempt 1, so
        the policy counts it as it counts every other; each failed attempt's URL joins
        ``failed`` (the backend sends the next one elsewhere)."""
        attempts = stop_after_attempt(self.config.retries + 1)

        def stop(state: RetryCallState) -> bool:
            # Out of attempts, or out of time before the next one.
            return attempts(state) or state.upcoming_sleep >= limit - time.monotonic()

        retrying = AsyncRetrying(
            stop=stop,
            wait=self._wait,
            retry=retry_if_exception(self._should_retry),
            reraise=True,
            sleep=asyncio.sleep,
        )
        last: BackendError | None = None
        refused: BackendError | None = None
        replay: BackendError | None = first
        async for turn in retrying:
            with turn:
                try:
                    if replay is not None:
                        raise replay
                    return await attempt()
                except BackendError as exc:
                    replay = None
                    if exc.url is not None:
                        failed.add(exc.url)
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
