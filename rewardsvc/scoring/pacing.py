"""Pacing long synchronous stretches on the event loop.

A large batch runs its detectors, planning, cache lookups and assembly item after item
without awaiting anything that suspends: 1024 items held the loop for 0.2 to 0.8 s, and
every probe and every other request waited that long. A :class:`Pacer` yields to the loop
whenever its slice has passed since the last yield, so no stretch holds the loop longer
than about one slice, and a short request (a few items) never yields at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

SLICE_S = 0.005


class Pacer:
    """Yields to the event loop once ``slice_s`` seconds have passed since the last yield."""

    def __init__(self, slice_s: float = SLICE_S):
        self.slice_s = slice_s
        self._since = time.perf_counter()

    async def step(self) -> None:
        """Let the loop run other work if this stretch has held it for a slice."""
        if time.perf_counter() - self._since >= self.slice_s:
            await asyncio.sleep(0)
            self._since = time.perf_counter()


async def cancel_unfinished(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel the tasks not done yet and wait until they have stopped."""
    unfinished = [t for t in tasks if not t.done()]
    for task in unfinished:
        task.cancel()
    if unfinished:
        await asyncio.wait(unfinished)
