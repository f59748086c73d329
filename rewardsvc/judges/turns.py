"""A judge's turns.

A judge holds as many turns as it has backend slots (``max_concurrency``): a call renders
its prompt only once it holds one, so the prompts alive at once are bounded by the judge's
concurrency, not by the number of calls a request planned. Nearly every turn is free when
asked for, and is then taken at once (no timer, no suspension); a call that must wait for
one waits until its deadline at most.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.failures import failed_verdict


class Turns:
    """The ``limit`` turns of judge ``name``."""

    def __init__(self, name: str, limit: int):
        self.name = name
        self.limit = limit
        self._free = asyncio.Semaphore(limit)

    async def take(self, deadline: float | None) -> Verdict | None:
        """Hold one turn: None once held (then :meth:`release` it), or the failed
        ``deadline`` verdict when ``deadline`` (a ``time.monotonic()`` instant) passed
        first (then nothing is held)."""
        if not self._free.locked():
            # A free turn is taken without suspending: there is no wait to bound.
            await self._free.acquire()
            return None
        try:
            async with asyncio.timeout(None if deadline is None else deadline - time.monotonic()):
                await self._free.acquire()
        except TimeoutError:
            return failed_verdict(
                "deadline",
                f"no free slot of judge {self.name!r} before the call's deadline "
                f"({self.limit} calls in flight)",
                0.0,
            )
        return None

    def release(self) -> None:
        """Give back a turn that :meth:`take` gave."""
        self._free.release()

    @contextlib.asynccontextmanager
    async def held(self, deadline: float | None) -> AsyncIterator[Verdict | None]:
        """:meth:`take` and :meth:`release` around a block: yields None once a turn is
        held, or the failed ``deadline`` verdict (then nothing is held)."""
        late = await self.take(deadline)
        if late is not None:
            yield late
            return
        try:
            yield None
        finally:
            self._free.release()
