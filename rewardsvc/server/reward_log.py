"""The reward log: one JSON line per returned item, written off the event loop."""

from __future__ import annotations

import json
import logging
import queue
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewardsvc.server.wire import RewardResponse

log = logging.getLogger(__name__)


class RewardLog:
    """Appends JSON lines to a file from a background thread, off the event loop."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._queue: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="reward-log", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            while True:
                lines = self._queue.get()
                if lines is None:
                    return
                try:
                    out.writelines(lines)
                    out.flush()
                except OSError:
                    # The log is an audit trail, not the reward: a full disk must not fail
                    # requests, so the lines are dropped and the failure logged.
                    log.exception("reward log: could not write to %s", self.path)

    def write(self, response: RewardResponse, items: list[Any]) -> None:
        """Queue one line per result of ``response`` (``items`` supply the metadata)."""
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        lines = []
        for raw, result in zip(items, response.results, strict=False):
            metadata = raw.get("metadata") if isinstance(raw, dict) else None
            record = {
                "time": now,
                "rubric": response.rubric.id,
                "version": response.rubric.version,
                "id": result.id,
                "reward": result.reward,
                "status": result.status,
                "uncertainty": result.uncertainty,
                "flags": result.flags,
                "metadata": metadata if isinstance(metadata, dict) else {},
            }
            lines.append(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._queue.put(lines)

    def close(self) -> None:
        """Write what is queued and stop the thread."""
        self._queue.put(None)
        self._thread.join(timeout=10)
