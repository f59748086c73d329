"""Circuit breakers: one per base URL of a judge, so a dead replica is skipped at once.

After ``threshold`` consecutive failures (5xx, connection, timeout, a 200 that is not
the endpoint's JSON) a breaker opens and its URL is skipped; after ``cooldown_s`` one
probe call is let through (half-open); its success closes the breaker, its failure
opens it again. Time comes from an injected clock, so tests drive it without sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

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
class BreakerPolicy:
    """Circuit breaker settings, one breaker per base URL."""

    threshold: int = 3
    cooldown_s: float = 10.0
