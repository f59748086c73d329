"""The verdict cache's SQLite file, bounded by entries and bytes with least-recently-used eviction.

The file is only a cache, so it must never fill the disk it lives on (in Kubernetes a 1 GiB
emptyDir whose overflow evicts the pod mid-training). The bytes counted are the file's
pages in use, as SQLite reports them (rows, indexes, headers and slack included), so the
bound holds whatever the size of the verdicts. When the rows exceed ``max_entries`` or the
pages ``max_bytes``, the least recently written or read rows are deleted down to 90 % of
both bounds (a tenth at a time keeps eviction off the per-write path). Freed pages are
reused by later writes, so the file stops growing at the bound; the write-ahead log adds
at most a sixteenth of it.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

_LOW_WATER = 0.9
# A rowid table, not WITHOUT ROWID: the latter keeps under a quarter page per row in the
# b-tree and spills longer verdicts (structured reasoning) to overflow pages, doubling the
# file for them.
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS verdict_cache ("
    " key BLOB NOT NULL UNIQUE, value BLOB NOT NULL, used INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS verdict_cache_used ON verdict_cache (used)",
)


class FileStore:
    """Key -> value bytes in one SQLite file, used from worker threads under a lock.

    Several processes may open the same file; each keeps its own running totals and
    recounts the file before evicting, so the bound holds for all of them together.
    """

    def __init__(self, path: Path, max_entries: int, max_bytes: int):
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("a verdict cache file needs max_entries >= 1 and max_bytes >= 1")
        self.path = path
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        # WAL + synchronous=NORMAL: commits do not fsync, a crash loses at most the last
        # few verdicts, which are only a cache. The WAL is checkpointed and cut back at a
        # sixteenth of the bound (at most SQLite's default 1000 pages), so that it does not
        # take the disk the bound leaves free.
        wal_pages = max(16, min(1000, max_bytes // 16 // 4096))
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(f"PRAGMA wal_autocheckpoint={wal_pages}")
        self._db.execute(f"PRAGMA journal_size_limit={wal_pages * 4096}")
        # Files written before the bound held an unbounded table; its rows are not
        # readable by this format, so it goes, and its space with it.
        legacy = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'verdicts'"
        ).fetchone()
        if legacy:
            self._db.execute("DROP TABLE verdicts")
            self._db.execute("VACUUM")
        for statement in _SCHEMA:
            self._db.execute(statement)
        self._page_size = int(self._db.execute("PRAGMA page_size").fetchone()[0])
        self._entries = self._count()

    def _count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM verdict_cache").fetchone()[0])

    def _bytes_used(self) -> int:
        pages = int(self._db.execute("PRAGMA page_count").fetchone()[0])
        free = int(self._db.execute("PRAGMA freelist_count").fetchone()[0])
        return (pages - free) * self._page_size

    def get(self, key: bytes) -> bytes | None:
        """The value stored for ``key`` (marked as just used), or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM verdict_cache WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            self._db.execute(
                "UPDATE verdict_cache SET used = ? WHERE key = ?", (time.time_ns(), key)
            )
        return bytes(row[0])

    def put(self, key: bytes, value: bytes) -> None:
        """Store ``value`` for ``key``, evicting the least recently used rows past a bound."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO verdict_cache (key, value, used) VALUES (?, ?, ?)",
                (key, value, time.time_ns()),
            )
            # An overwrite counts too: the count is exact again after the recount below.
            self._entries += 1
            if self._entries > self.max_entries or self._bytes_used() > self.max_bytes:
                self._evict()

    def _evict(self) -> None:
        # Recounted first: overwrites and other processes sharing the file change the count.
        self._entries = self._count()
        low_entries = int(self.max_entries * _LOW_WATER)
        low_bytes = int(self.max_bytes * _LOW_WATER)
        evicted = 0
        while self._entries > 0 and (self._entries > low_entries or self._bytes_used() > low_bytes):
            chunk = max(self._entries - low_entries, self._entries // 10, 1)
            cursor = self._db.execute(
                "DELETE FROM verdict_cache WHERE rowid IN"
                " (SELECT rowid FROM verdict_cache ORDER BY used LIMIT ?)",
                (chunk,),
            )
            self._entries -= cursor.rowcount
            evicted += cursor.rowcount
        log.info("verdict cache file: evicted %d least recently used verdicts", evicted)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()
