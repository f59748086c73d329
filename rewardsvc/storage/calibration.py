"""Calibration windows: per (rubric version, judge), the recent raw scores that per-judge
calibration maps new scores against, kept in this process or shared through Redis.

The engine sees one call, :meth:`CalibrationWindows.extend_and_stats`: a batch's raw scores
join the window and the statistics of the window come back. With a :class:`RedisLink` the
window is a Redis list (appended and trimmed in one transaction), so every replica
calibrates against the same window and a restart keeps it; the local window mirrors the
shared one, so that when Redis is unreachable scoring goes on from the last shared state.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable

from rewardsvc.core.aggregate import WindowStats
from rewardsvc.storage.redis_link import RedisLink


class CalibrationWindows:
    """Rolling windows of recent raw scores, one per (rubric version, judge).

    Locally, the least recently used windows are dropped beyond ``max_keys`` (inline
    rubrics could otherwise grow them without end); in Redis, unused windows expire.
    """

    def __init__(self, max_keys: int = 4096, shared: RedisLink | None = None):
        self.max_keys = max_keys
        self.shared = shared
        self._windows: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()

    async def extend_and_stats(
        self, rubric_version: str, judge: str, size: int, scores: Iterable[float]
    ) -> WindowStats:
        """Append ``scores`` to the window of (rubric version, judge), keep its last
        ``size`` scores and return their statistics (never fails for want of Redis)."""
        values = list(scores)
        window = self._local(rubric_version, judge, size)
        if self.shared is not None:
            shared = await self.shared.extend_window(f"{rubric_version}:{judge}", size, values)
            if shared is not None:
                window.clear()
                window.extend(shared)
                return WindowStats.of(window)
        window.extend(values)
        return WindowStats.of(window)

    def _local(self, rubric_version: str, judge: str, size: int) -> deque[float]:
        key = (rubric_version, judge)
        window = self._windows.get(key)
        if window is None or window.maxlen != size:
            window = deque(window or (), maxlen=size)
            self._windows[key] = window
        self._windows.move_to_end(key)
        while len(self._windows) > self.max_keys:
            self._windows.popitem(last=False)
        return window
