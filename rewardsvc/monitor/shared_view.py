"""The monitor's merged view of the runs the replicas share in Redis.

:class:`SharedView` reads the runs (their metadata, alerts and, when asked, history and
events) from Redis into :attr:`Monitor.merged`, the view the dashboard, ``GET
/v1/monitor`` and the Prometheus gauges show, ordered by when each run was last seen and
bounded by the monitor's ``max_runs``. :class:`~.shared.SharedMonitor`, the sink that
writes the runs, extends it.
"""

from __future__ import annotations

import json
from typing import Any

from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.monitor.monitor import Monitor, evict
from rewardsvc.monitor.shared_state import Keys, mirrored_state, text
from rewardsvc.storage.redis_link import RedisLink


class SharedView:
    """The merged runs of ``monitor``, read through ``link``."""

    def __init__(self, monitor: Monitor, link: RedisLink) -> None:
        self.monitor, self.link = monitor, link
        self.runs_key = f"{link.prefix}:monitor:runs".encode()

    def mirror(
        self,
        rubric: str,
        run: str,
        config: MonitorConfig,
        meta: dict[bytes, bytes],
        alerts: Any,
        history: list[bytes] | None = None,
        events: list[bytes] | None = None,
    ) -> None:
        """Put a run's merged state into the monitor's merged view."""
        key = (rubric, run)
        previous = self.monitor.merged.get(key)
        state = mirrored_state(key, config, meta, alerts, previous, history, events)
        merged = self.monitor.merged
        merged[key] = state
        merged.move_to_end(key)
        evict(merged, self.monitor.max_runs)

    async def refresh(
        self, rubric: str | None = None, run: str | None = None, history: bool = False
    ) -> bool:
        """Read the runs (filtered by rubric and run name) from Redis into the merged view,
        with their history when asked; False when Redis is unreachable."""
        found = await self.link.execute(
            lambda p: p.zrange(self.runs_key, 0, self.monitor.max_runs - 1, desc=True),
            transaction=False,
        )
        if found is None:
            return False
        listed = [tuple(json.loads(m)) for m in found[0]]
        pairs = [(r, n) for r, n in listed if rubric in (None, r) and run in (None, n)]
        if not pairs:
            return True

        def reads(p: Any) -> None:
            for r, n in reversed(pairs):
                keys = Keys(self.link.prefix, r, n)
                p.hgetall(keys.meta)
                p.hgetall(keys.alerts)
                if history:
                    p.lrange(keys.history, 0, -1)
                    p.lrange(keys.events, 0, -1)

        replies = await self.link.execute(reads, transaction=False)
        if replies is None:
            return False
        width = 4 if history else 2
        found_runs = []
        for i, (r, n) in enumerate(reversed(pairs)):
            part = replies[i * width : (i + 1) * width]
            if part[0]:  # else expired since it was listed
                found_runs.append((float(text(part[0], "last_seen", "0")), r, n, part))
        # The list is ranked for eviction; the view is ordered by when runs were last seen.
        for _, r, n, part in sorted(found_runs, key=lambda f: f[0]):
            hist, ev = (part[2], part[3]) if history else (None, None)
            config = self.monitor.config_for(r)
            self.mirror(r, n, config, part[0], part[1].values(), hist, ev)
        return True
