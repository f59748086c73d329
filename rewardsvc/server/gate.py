"""The gate of scoring requests: what one must pass before it is scored, and what it holds.

:class:`Gate` admits a request's in-flight work (items and judge calls, 429 when full, 413
when one request alone is too much), counts it active so that a drain waits for it, takes
the held work that outlives an exchange from the :class:`~.ledger.Ledger`, holds trainer
requests between their tries, and drains for shutdown. The :class:`~.service.Service` is a
gate with the application behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rewardsvc.server import metrics
from rewardsvc.server.admission import check_work
from rewardsvc.server.guards import InflightLimiter
from rewardsvc.server.holding import HeldTries, kept_back
from rewardsvc.server.ledger import Holding, Ledger, held_size
from rewardsvc.settings import Settings


@dataclass(kw_only=True)
class Gate(ABC):
    """Admission, held work and drain, shared by every route through the service."""

    settings: Settings
    limiter: InflightLimiter
    ledger: Ledger
    drain_begun: asyncio.Event = field(default_factory=asyncio.Event)
    active: int = 0
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.idle.set()

    @abstractmethod
    def expire_work(self) -> None:
        """Cut the work still running (called when a drain's time is up)."""

    @property
    def draining(self) -> bool:
        """The service refuses new scoring requests: it drains for shutdown."""
        return self.drain_begun.is_set()

    @contextlib.contextmanager
    def admitted(
        self,
        items: int,
        calls: int,
        prompt_bytes: int = 0,
        sandbox_s: float = 0.0,
        *,
        checked: bool = False,
    ) -> Iterator[None]:
        """Hold in-flight slots for ``items`` and ``calls`` (429 when full, 413 when the
        calls alone exceed max_inflight_calls, their ``prompt_bytes`` exceed
        max_prompt_bytes_per_request or the code graders' runs, ``sandbox_s``, exceed
        max_sandbox_seconds, unless the plan was ``checked`` so when it was made) and count
        the request as active, so that a drain waits for it."""
        if not checked:
            check_work(self.settings, calls, prompt_bytes, sandbox_s)
        with self.limiter.admit(items, calls), self._active():
            metrics.INFLIGHT.inc()
            metrics.INFLIGHT_CALLS.inc(calls)
            try:
                yield
            finally:
                metrics.INFLIGHT.dec()
                metrics.INFLIGHT_CALLS.dec(calls)

    @contextlib.contextmanager
    def _active(self) -> Iterator[None]:
        """Count a request as active for the whole block: a drain waits for it."""
        self.active += 1
        self.idle.clear()
        try:
            yield
        finally:
            self.active -= 1
            if self.active == 0:
                self.idle.set()

    def hold(self, value: Any, what: str) -> Holding:
        """Admit ``value`` (a request's text) as held work for the request's key (413 or
        429 from the :class:`~.ledger.Ledger`): give it to :meth:`held` or release it."""
        return self.ledger.hold(held_size(value), what)

    @contextlib.contextmanager
    def held(self, holding: Holding) -> Iterator[HeldTries]:
        """A request held across several scorings (the trainer routes' hold), admitted as
        ``holding`` (released when the block ends): active for the whole hold, so that a
        drain waits for it between its tries too (its in-flight slots are only held while
        it scores), and recorded once: the reward-log lines and monitor batches of its
        tries are kept back until it calls ``record()`` on what this yields, and dropped
        when it answers without them (see ``holding``)."""
        try:
            with self._active(), kept_back() as tries:
                yield tries
        finally:
            holding.release()

    async def pause(self, seconds: float) -> bool:
        """Wait ``seconds`` between a held request's tries; False as soon as a drain
        begins (the request then answers with what it has, before the drain ends)."""
        try:
            await asyncio.wait_for(self.drain_begun.wait(), seconds)
        except TimeoutError:
            return True
        return False

    async def drain(self, timeout_s: float, answer_s: float = 5.0) -> bool:
        """Refuse new scoring requests and wait up to ``timeout_s`` for those accepted to
        finish; True when they all did. Held requests stop holding and answer at once (see
        ``pause``). Past it, their judge work is cut (the engine's deadline passes at once)
        and they get ``answer_s`` more to answer with what they have, so that every
        accepted request is answered and logged."""
        self.drain_begun.set()
        try:
            await asyncio.wait_for(self.idle.wait(), timeout_s)
        except TimeoutError:
            self.expire_work()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.idle.wait(), answer_s)
            return False
        return True
