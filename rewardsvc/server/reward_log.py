"""The reward log: one JSON line per returned item, written off the event loop.

Lines go through the standard logging machinery: a queue handler on the event loop's side
and a listener thread that writes them to a size-rotated file. Every line is ASCII JSON
(``\\ud800`` for a lone surrogate, whatever a policy or client put in the metadata), so no
line can fail to encode; a write that fails anyway (a full disk) is counted in
``rewardsvc_reward_log_errors_total`` and the writer goes on with the next line.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import queue
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewardsvc.server import metrics
from rewardsvc.server.wire.rewards import RewardResponse

log = logging.getLogger(__name__)


class _CountingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating file handler that counts the lines it wrote and those it could not."""

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        metrics.REWARD_LOG_LINES.inc()

    def handleError(self, record: logging.LogRecord) -> None:
        metrics.REWARD_LOG_ERRORS.inc()
        log.warning("reward log: a line could not be written to %s", self.baseFilename)


class RewardLog:
    """Appends one JSON line per result to ``path``, rotated at ``max_bytes``."""

    def __init__(self, path: Path, max_bytes: int = 256 * 1024 * 1024, backups: int = 5):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = _CountingFileHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="ascii", delay=True
        )
        handler.setFormatter(logging.Formatter("%(message)s"))
        self._queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self._listener = logging.handlers.QueueListener(self._queue, handler)
        self._handler = handler
        self._listener.start()

    def _put(self, line: str) -> None:
        record = logging.LogRecord("rewardsvc.rewards", logging.INFO, "", 0, line, None, None)
        self._queue.put(record)

    def write(self, response: RewardResponse, items: Sequence[Any], run: str | None = None) -> None:
        """Queue one line per result of ``response`` (``items`` supply the metadata)."""
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
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
            if run is not None:
                record["run"] = run
            self._put(json.dumps(record, ensure_ascii=True, default=str))

    def event(self, kind: str, **fields: Any) -> None:
        """Queue one event line (an alert, a rubric version change) beside the rewards."""
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        self._put(
            json.dumps({"time": now, "event": kind, **fields}, ensure_ascii=True, default=str)
        )

    def close(self) -> None:
        """Write everything queued, then stop the writer thread."""
        self._listener.stop()
        self._handler.close()
