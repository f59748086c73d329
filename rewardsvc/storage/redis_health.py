"""Whether a replica's Redis link is usable, and how it finds Redis again.

:class:`LinkHealth` holds the link's health: the first failed operation marks it
unhealthy and tells the observer; from then on a background probe pings Redis every
``retry_s`` and, once it answers and the writes queued meanwhile are replayed, marks it
healthy again. A link lost again soon after it came back waits twice as long before its
next probe (up to ``PROBE_BACKOFF_MAX`` times ``retry_s``), so that a Redis that answers
pings but not the real traffic costs a deadline now and then, not every second.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from redis.exceptions import RedisError

log = logging.getLogger(__name__)

PROBE_BACKOFF_MAX = 32
"""A flapping link's probe interval grows to at most this many times ``retry_s``; a link
that stays up that long is stable again (its next loss is probed after ``retry_s``)."""


class StateObserver(Protocol):
    """Told when shared state becomes unreachable (False) and reachable again (True)."""

    def shared_state(self, healthy: bool) -> None: ...


class _Quiet:
    def shared_state(self, healthy: bool) -> None:
        """Ignore."""


class LinkHealth:
    """The health of one Redis link: ``ping`` checks Redis, ``replay`` sends what was
    queued while it was away (both raise on failure); ``observer`` hears each change."""

    def __init__(
        self,
        retry_s: float,
        ping: Callable[[], Awaitable[object]],
        replay: Callable[[], Awaitable[None]],
        observer: StateObserver | None = None,
    ) -> None:
        self.retry_s = retry_s
        self.healthy = True
        self.closed = False
        self._ping = ping
        self._replay = replay
        self._observer: StateObserver = observer if observer is not None else _Quiet()
        self._probe: asyncio.Task[None] | None = None
        self._probe_wait_s = retry_s
        self._recovered_at: float | None = None

    def lost(self, exc: BaseException) -> None:
        """An operation failed with ``exc``: mark the link unhealthy (once, logged and
        told) and probe until Redis is back."""
        if self.healthy:
            log.warning(
                "shared state: Redis unreachable (%s: %s); scoring with local state",
                type(exc).__name__,
                exc,
            )
            self.healthy = False
            self._observer.shared_state(False)
            now = asyncio.get_running_loop().time()
            back = self._recovered_at
            if back is not None and now - back < PROBE_BACKOFF_MAX * self.retry_s:
                # Lost again soon after it came back: it answers probes, not the traffic.
                self._probe_wait_s = min(2 * self._probe_wait_s, PROBE_BACKOFF_MAX * self.retry_s)
            else:
                self._probe_wait_s = self.retry_s
        if not self.closed and (self._probe is None or self._probe.done()):
            self._probe = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        while not self.closed:
            await asyncio.sleep(self._probe_wait_s)
            try:
                await self._ping()
                await self._replay()
            except (RedisError, OSError, TimeoutError):
                continue
            self.healthy = True
            self._recovered_at = asyncio.get_running_loop().time()
            self._observer.shared_state(True)
            log.warning("shared state: Redis reachable again; resynchronized")
            return

    async def close(self) -> None:
        """Stop probing."""
        self.closed = True
        if self._probe is not None:
            self._probe.cancel()
            await asyncio.gather(self._probe, return_exceptions=True)
