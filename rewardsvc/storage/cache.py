"""The verdict cache: content-addressed, bounded in memory, optionally persisted to a bounded
SQLite file and shared with other replicas through Redis, with in-flight deduplication of
identical judge calls.

A key is a 16-byte digest of (rubric version, judge cache identity, criterion id or
``_holistic``, rollout digest): the same rubric content, the same judge settings and the
same text always give the same verdict key, whatever the request and whichever replica.
Only successful verdicts are stored; errors are never cached, so a transient judge failure
is retried by the next request.

Verdicts are held in their encoded bytes (``codec``), a few dozen bytes each. The memory
tier is an approximate LRU in four to eight generations: reads and writes go to the newest,
a hit in an older one moves the verdict to the newest, and when the newest is full the
oldest generation (a quarter to an eighth of the bound, none of it used since it was
sealed) is dropped whole. That costs one dict slot per verdict, where an exact LRU's
linked order costs as much again: about 0.2 kB per cached verdict in all.

In-flight deduplication is per process: two replicas asked the same new item at the same
moment both call the judge (and store the same verdict); after that both hit.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, TypeVar

from rewardsvc.core.observe import NULL_OBSERVER, Observer
from rewardsvc.core.verdict import Verdict
from rewardsvc.storage import codec
from rewardsvc.storage.filestore import FileStore
from rewardsvc.storage.redis_link import RedisLink

log = logging.getLogger(__name__)
_T = TypeVar("_T")

Source = Literal["call", "hit", "dedup", "grader"]
"""How a verdict was obtained: a judge call sent, a cache hit, or a share of a call in flight."""

# A str as a JSON string literal, ASCII-escaped: what ``json.dumps`` writes for it.
_quoted: Callable[[str], str] = json.encoder.encode_basestring_ascii

MIN_GENERATIONS = 4
MAX_GENERATIONS = 8


def cache_key(
    rubric_version: str, judge_identity: str, criterion_id: str, rollout_digest: str
) -> bytes:
    """The content address of one verdict: a 16-byte digest of an unambiguous encoding of
    the parts (128 bits: collisions are out of reach at any cache size)."""
    # The bytes of ``json.dumps`` of the four strings as a list, without its general encoder
    # (one key per judge call): keys stored in files and Redis stay the same.
    parts = (
        f"[{_quoted(rubric_version)}, {_quoted(judge_identity)}, "
        f"{_quoted(criterion_id)}, {_quoted(rollout_digest)}]"
    )
    return hashlib.blake2b(parts.encode(), digest_size=16).digest()


def _dict_capacity(entries: int) -> int:
    """How many entries a dict grown by inserts to ``entries`` can hold before it grows
    again (CPython's tables are powers of two, two thirds usable)."""
    size = 8
    while size * 2 // 3 < entries:
        size *= 2
    return size * 2 // 3


def _generation_count(max_entries: int) -> int:
    """Between 4 and 8 generations, as many as fill each generation's dict best: a dict
    just past a power of two wastes up to half its table."""
    if max_entries < MIN_GENERATIONS:
        return max(1, max_entries)
    return max(
        range(MIN_GENERATIONS, MAX_GENERATIONS + 1),
        key=lambda g: (max_entries // g) / _dict_capacity(max_entries // g),
    )


class _Generations:
    """Encoded verdicts by key in memory, at most ``max_entries`` of them and at most
    ``max_bytes`` of encoded verdicts, evicted a generation at a time.

    Keys are held as ints: a 128-bit int takes 48 bytes where a 16-byte bytes object
    takes 64.
    """

    def __init__(self, max_entries: int, max_bytes: int):
        count = _generation_count(max_entries)
        self._entries_per = max_entries // count
        self._bytes_per = max_bytes // count
        self._count = count
        self._gens: list[dict[int, bytes]] = [{}]
        self._sizes = [0]

    def __len__(self) -> int:
        return sum(len(gen) for gen in self._gens)

    def get(self, key: bytes) -> bytes | None:
        number = int.from_bytes(key)
        value = self._gens[-1].get(number)
        if value is not None or len(self._gens) == 1:
            return value
        for n in range(len(self._gens) - 2, -1, -1):
            value = self._gens[n].pop(number, None)
            if value is not None:
                self._sizes[n] -= len(value)
                self._insert(number, value)
                return value
        return None

    def put(self, key: bytes, value: bytes) -> None:
        if self._entries_per == 0 or len(value) > self._bytes_per:
            return
        number = int.from_bytes(key)
        for n, gen in enumerate(self._gens):
            old = gen.pop(number, None)
            if old is not None:
                self._sizes[n] -= len(old)
        self._insert(number, value)

    def _insert(self, number: int, value: bytes) -> None:
        newest = self._gens[-1]
        if len(newest) >= self._entries_per or self._sizes[-1] + len(value) > self._bytes_per:
            self._gens.append({})
            self._sizes.append(0)
            if len(self._gens) > self._count:
                del self._gens[0], self._sizes[0]
            newest = self._gens[-1]
        newest[number] = value
        self._sizes[-1] += len(value)


class VerdictCache:
    """Verdicts by content key, in up to three tiers, each optional:

    - memory: at most ``max_entries`` verdicts and ``max_bytes`` of encoded verdicts
      (``max_entries=0`` stores nothing but still deduplicates calls in flight);
    - a SQLite file at ``path`` that survives restarts, bounded by ``file_max_entries``
      and ``file_max_bytes`` (least recently used rows evicted);
    - Redis through ``shared``, so that every replica serves what one has scored. Redis
      trouble never fails a verdict: the cache goes on with its local tiers.

    ``get_or_call`` is the entry point the engine uses, ``lookup`` its synchronous memory
    path; hits and dedups are reported to ``observer`` (``cache_hit``).
    """

    def __init__(
        self,
        max_entries: int = 100_000,
        path: str | Path | None = None,
        *,
        max_bytes: int = 64 * 1024 * 1024,
        file_max_entries: int = 2_000_000,
        file_max_bytes: int = 512 * 1024 * 1024,
        shared: RedisLink | None = None,
        observer: Observer = NULL_OBSERVER,
    ):
        if max_entries < 0 or max_bytes < 0:
            raise ValueError("max_entries and max_bytes must be >= 0")
        self.path = Path(path) if path is not None else None
        self.shared = shared
        self.observer = observer
        self._memory = _Generations(max_entries, max_bytes)
        self._file = (
            FileStore(self.path, file_max_entries, file_max_bytes)
            if self.path is not None
            else None
        )
        # The file's own thread (it is used under one lock anyway): the event loop's
        # default executor may be busy with other work, and a verdict must not wait for it.
        self._file_io = (
            ThreadPoolExecutor(1, thread_name_prefix="rewardsvc-cache-file")
            if self._file is not None
            else None
        )
        self._inflight: dict[bytes, asyncio.Task[tuple[Verdict, Source]]] = {}

    def __len__(self) -> int:
        """Verdicts held in memory (never more than ``max_entries``)."""
        return len(self._memory)

    def lookup(self, key: bytes) -> Verdict | None:
        """The verdict for ``key`` if it is in memory, reported as a hit; no I/O, no await.

        Lets the engine serve a fully cached batch without scheduling a task per verdict.
        """
        data = self._memory.get(key)
        verdict = codec.decode(data) if data is not None else None
        if verdict is not None:
            self.observer.cache_hit(dedup=False)
        return verdict

    async def get(self, key: bytes) -> Verdict | None:
        """The stored verdict for ``key`` (memory, then the file, then Redis), or None."""
        data = self._memory.get(key)
        if data is not None:
            return codec.decode(data)
        return await self._read_through(key)

    async def put(self, key: bytes, verdict: Verdict) -> None:
        """Store a successful verdict in every tier; a failed one is ignored (errors are
        never cached). A tier that cannot be written is logged, never raised."""
        if not verdict.ok:
            return
        data = codec.encode(verdict)
        self._memory.put(key, data)
        if self._file is not None:
            try:
                await self._in_file_thread(self._file.put, key, data)
            except sqlite3.Error:
                log.exception("verdict cache: could not write to %s", self.path)
        if self.shared is not None:
            await self.shared.put_verdict(key, data)

    async def get_or_call(
        self,
        key: bytes,
        call: Callable[[], Awaitable[Verdict]],
        *,
        use_cache: bool = True,
    ) -> tuple[Verdict, Source]:
        """The verdict for ``key`` and how it was obtained.

        A cached verdict is a ``hit``. Otherwise, if an identical call is already in
        flight in this process (in this batch or a concurrent one) its result is shared: a
        ``dedup``. Otherwise ``call()`` runs once, as a task that outlives a cancelled
        caller so the other waiters still get its verdict, and a successful result is
        stored. ``use_cache=False`` bypasses all of this: a fresh call, nothing read or
        written.
        """
        if not use_cache:
            return await _safe_call(call), "call"
        verdict = self.lookup(key)
        if verdict is not None:
            return verdict, "hit"
        task, joined = self.start(key, call)
        return self.settle(await asyncio.shield(task), joined)

    def start(
        self, key: bytes, call: Callable[[], Awaitable[Verdict]]
    ) -> tuple[asyncio.Task[tuple[Verdict, Source]], bool]:
        """The work for ``key`` when it is not in memory (``lookup`` said so), and whether
        it was joined rather than started: the identical call already in flight in this
        process, or a new task that reads the file and Redis, else runs ``call()`` and
        stores its verdict. The task is shared: a waiter that gives up must not cancel it.
        Its result goes through :meth:`settle`."""
        task = self._inflight.get(key)
        if task is not None and not task.done():
            return task, True
        # Registered before the first await, so every copy that arrives from now on
        # (including while the file or Redis is read) joins this one task.
        task = asyncio.get_running_loop().create_task(self._fill(key, call))
        self._inflight[key] = task
        task.add_done_callback(functools.partial(self._forget, key))
        return task, False

    def settle(self, outcome: tuple[Verdict, Source], joined: bool) -> tuple[Verdict, Source]:
        """The verdict of a task from :meth:`start` and how this waiter obtained it (a
        joined call is a ``dedup``), reported to the observer as a hit when it was one."""
        verdict, source = outcome
        if joined:
            self.observer.cache_hit(dedup=True)
            return verdict, "dedup"
        if source == "hit":
            self.observer.cache_hit(dedup=False)
        return verdict, source

    async def _read_through(self, key: bytes) -> Verdict | None:
        """The verdict from the file or Redis (then kept in memory), or None."""
        data: bytes | None = None
        if self._file is not None:
            try:
                data = await self._in_file_thread(self._file.get, key)
            except sqlite3.Error:
                log.exception("verdict cache: could not read %s", self.path)
        if data is None and self.shared is not None:
            data = await self.shared.get_verdict(key)
        if data is None:
            return None
        verdict = codec.decode(data)
        if verdict is None:
            # A damaged or unknown entry is a miss: asked again and overwritten.
            log.warning("verdict cache: unreadable entry for key %s", key.hex())
            return None
        self._memory.put(key, data)
        return verdict

    async def _in_file_thread(self, fn: Callable[..., _T], *args: object) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._file_io, fn, *args)

    async def _fill(
        self, key: bytes, call: Callable[[], Awaitable[Verdict]]
    ) -> tuple[Verdict, Source]:
        if self._file is not None or self.shared is not None:
            stored = await self._read_through(key)
            if stored is not None:
                return stored, "hit"
        # _safe_call's rule inline: one coroutine fewer to resume at each of the call's waits.
        try:
            verdict = await call()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            verdict = _raised(exc)
        await self.put(key, verdict)
        return verdict, "call"

    def _forget(self, key: bytes, task: asyncio.Task[tuple[Verdict, Source]]) -> None:
        # Only the task that finished: a newer call for the same key may be in flight.
        if self._inflight.get(key) is task:
            del self._inflight[key]
        if not task.cancelled():
            # Marked as retrieved: a waiter past its deadline never reads the task, and
            # the ones that do read its exception themselves.
            task.exception()

    async def aclose(self) -> None:
        """Wait for calls in flight, then close the file (the Redis link is its owner's
        to close: the calibration windows share it)."""
        if self._inflight:
            await asyncio.gather(*self._inflight.values(), return_exceptions=True)
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._file_io is not None:
            self._file_io.shutdown(wait=False)
            self._file_io = None


async def _safe_call(call: Callable[[], Awaitable[Verdict]]) -> Verdict:
    # Judges return failed verdicts rather than raise; a bug that raises anyway must
    # become a failed verdict too, or every item sharing the call would lose its result.
    try:
        return await call()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return _raised(exc)


def _raised(exc: Exception) -> Verdict:
    """The failed verdict of a judge call that raised (logged: it is a bug)."""
    log.exception("judge call raised")
    return Verdict.failed(f"internal error: {type(exc).__name__}: {exc}")
