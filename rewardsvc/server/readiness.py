"""Readiness: which judges answer, asked through their own backends at most every few
seconds (same endpoints, keys and breakers as the judge calls)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Protocol

READY_TTL_S = 5.0  # how long a /readyz answer is reused before judges are asked again


class Reachable(Protocol):
    """What readiness needs of a judge (``rewardsvc.judges.judge.Judge`` provides it)."""

    async def reachable(self) -> bool: ...


class ReadinessProbe:
    """Answers /readyz from a few-second cache of the judges' reachability."""

    def __init__(self, judges: Mapping[str, Reachable]):
        self.judges = judges
        self._lock = asyncio.Lock()
        self._checked_at = -1e9
        self._reachable: dict[str, bool] = {}

    async def _ask(self, judge: Reachable) -> bool:
        try:
            return await judge.reachable()
        except Exception:
            return False

    async def reachable(self) -> dict[str, bool]:
        """Which judges answered, asking again when the last answer is older than READY_TTL_S."""
        async with self._lock:
            if time.monotonic() - self._checked_at > READY_TTL_S:
                names = list(self.judges)
                answers = await asyncio.gather(*(self._ask(self.judges[n]) for n in names))
                self._reachable = dict(zip(names, answers, strict=True))
                self._checked_at = time.monotonic()
            return dict(self._reachable)
