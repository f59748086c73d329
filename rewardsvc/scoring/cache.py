"""The verdict cache: content-addressed, LRU-bounded in memory, optionally persisted to SQLite,
with in-flight deduplication of identical judge calls.

A key is the sha256 of (rubric version, judge cache identity, criterion id or ``_holistic``,
rollout digest): the same rubric content, the same judge settings and the same text always
give the same verdict key, whatever the request. Only successful verdicts are stored;
errors are never cached, so a transient judge failure is retried by the next request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

from rewardsvc.core.verdict import Verdict
from rewardsvc.server.metrics import CACHE_HITS, DEDUP_HITS

log = logging.getLogger(__name__)

Source = Literal["call", "hit", "dedup"]
"""How a verdict was obtained: a judge call sent, a cache hit, or a share of a call in flight."""


def cache_key(
    rubric_version: str, judge_identity: str, criterion_id: str, rollout_digest: str
) -> str:
    """The content address of one verdict: sha256 over an unambiguous encoding of the parts."""
    parts = json.dumps([rubric_version, judge_identity, criterion_id, rollout_digest])
    return hashlib.sha256(parts.encode()).hexdigest()


def _encode(verdict: Verdict) -> str:
    return json.dumps(dataclasses.asdict(verdict), separators=(",", ":"))


def _decode(text: str) -> Verdict:
    data = json.loads(text)
    fields = {f.name for f in dataclasses.fields(Verdict)}
    return Verdict(**{k: v for k, v in data.items() if k in fields})


class _SqliteStore:
    """A key -> verdict table in one SQLite file, used from worker threads under a lock."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        # WAL + synchronous=NORMAL: commits do not fsync, a crash loses at most the last
        # few verdicts, which are only a cache.
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM verdicts WHERE key = ?", (key,)).fetchone()
        if not row:
            return None
        try:
            return _decode(row[0])
        except (ValueError, TypeError):
            # A damaged row is a miss: the verdict is asked again and the row replaced.
            log.warning("verdict cache: unreadable row for key %s", key)
            return None

    def put(self, key: str, verdict: Verdict) -> None:
        text = _encode(verdict)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO verdicts (key, value) VALUES (?, ?)", (key, text)
            )

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class VerdictCache:
    """Verdicts by content key: an in-memory LRU of at most ``max_entries`` verdicts
    (0 stores nothing but still deduplicates calls in flight), optionally backed by a
    SQLite file at ``path`` that survives restarts and is shared by caches opened on it.

    ``get_or_call`` is the one entry point the engine uses; ``hits`` and ``dedups`` count
    what it saved (also recorded in the CACHE_HITS and DEDUP_HITS metrics).
    """

    def __init__(self, max_entries: int = 100_000, path: str | Path | None = None):
        if max_entries < 0:
            raise ValueError("max_entries must be >= 0")
        self.max_entries = max_entries
        self.path = Path(path) if path is not None else None
        self._memory: OrderedDict[str, Verdict] = OrderedDict()
        self._store = _SqliteStore(self.path) if self.path is not None else None
        self._inflight: dict[str, asyncio.Task[tuple[Verdict, Source]]] = {}
        self.hits = 0
        self.dedups = 0

    key = staticmethod(cache_key)

    def __len__(self) -> int:
        """Verdicts held in memory (never more than ``max_entries``)."""
        return len(self._memory)

    def _remember(self, key: str, verdict: Verdict) -> None:
        if self.max_entries == 0:
            return
        self._memory[key] = verdict
        self._memory.move_to_end(key)
        while len(self._memory) > self.max_entries:
            self._memory.popitem(last=False)

    def lookup(self, key: str) -> Verdict | None:
        """The verdict for ``key`` if it is in memory, counted as a hit; no I/O, no await.

        Lets the engine serve a fully cached batch without scheduling a task per verdict.
        """
        verdict = self._memory.get(key)
        if verdict is not None:
            self._memory.move_to_end(key)
            self._count_hit()
        return verdict

    async def get(self, key: str) -> Verdict | None:
        """The stored verdict for ``key`` (memory, then the SQLite file), or None."""
        verdict = self._memory.get(key)
        if verdict is not None:
            self._memory.move_to_end(key)
            return verdict
        if self._store is not None:
            verdict = await asyncio.to_thread(self._store.get, key)
            if verdict is not None:
                self._remember(key, verdict)
        return verdict

    async def put(self, key: str, verdict: Verdict) -> None:
        """Store a successful verdict; a failed one is ignored (errors are never cached)."""
        if not verdict.ok:
            return
        self._remember(key, verdict)
        if self._store is not None:
            try:
                await asyncio.to_thread(self._store.put, key, verdict)
            except sqlite3.Error:
                # The file is only a cache: a write failure must not fail a reward.
                log.exception("verdict cache: could not write to %s", self.path)

    async def get_or_call(
        self,
        key: str,
        call: Callable[[], Awaitable[Verdict]],
        *,
        use_cache: bool = True,
    ) -> tuple[Verdict, Source]:
        """The verdict for ``key`` and how it was obtained.

        A cached verdict is a ``hit``. Otherwise, if an identical call is already in
        flight (in this batch or a concurrent one) its result is shared: a ``dedup``.
        Otherwise ``call()`` runs once, as a task that outlives a cancelled caller so the
        other waiters still get its verdict, and a successful result is stored.
        ``use_cache=False`` bypasses all of this: a fresh call, nothing read or written.
        """
        if not use_cache:
            return await _safe_call(call), "call"
        verdict = self.lookup(key)
        if verdict is not None:
            return verdict, "hit"
        task = self._inflight.get(key)
        if task is not None and not task.done():
            verdict, _ = await asyncio.shield(task)
            self.dedups += 1
            DEDUP_HITS.inc()
            return verdict, "dedup"
        # Registered before the first await, so every copy that arrives from now on
        # (including while the SQLite file is read) joins this one task.
        task = asyncio.ensure_future(self._fill(key, call))
        self._inflight[key] = task
        task.add_done_callback(lambda done: self._forget(key, done))
        verdict, source = await asyncio.shield(task)
        if source == "hit":
            self._count_hit()
        return verdict, source

    async def _fill(
        self, key: str, call: Callable[[], Awaitable[Verdict]]
    ) -> tuple[Verdict, Source]:
        if self._store is not None:
            try:
                stored = await asyncio.to_thread(self._store.get, key)
            except sqlite3.Error:
                log.exception("verdict cache: could not read %s", self.path)
                stored = None
            if stored is not None:
                self._remember(key, stored)
                return stored, "hit"
        verdict = await _safe_call(call)
        await self.put(key, verdict)
        return verdict, "call"

    def _forget(self, key: str, task: asyncio.Task[tuple[Verdict, Source]]) -> None:
        # Only the task that finished: a newer call for the same key may be in flight.
        if self._inflight.get(key) is task:
            del self._inflight[key]

    def _count_hit(self) -> None:
        self.hits += 1
        CACHE_HITS.inc()

    def persisted_count(self) -> int:
        """Verdicts in the SQLite file (0 without one)."""
        return self._store.count() if self._store is not None else 0

    async def aclose(self) -> None:
        """Wait for calls in flight, then close the SQLite file."""
        if self._inflight:
            await asyncio.gather(*self._inflight.values(), return_exceptions=True)
        if self._store is not None:
            self._store.close()
            self._store = None


async def _safe_call(call: Callable[[], Awaitable[Verdict]]) -> Verdict:
    # Judges return failed verdicts rather than raise; a bug that raises anyway must
    # become a failed verdict too, or every item sharing the call would lose its result.
    try:
        return await call()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("judge call raised")
        return Verdict.failed(f"internal error: {type(exc).__name__}: {exc}")
