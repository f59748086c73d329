"""State shared by the replicas of a deployment through Redis (or Valkey): verdicts and
calibration windows, so that any replica gives the same reward for the same item and
calibration survives restarts; and, through :meth:`RedisLink.execute` and
:meth:`RedisLink.update_hash`, the reward monitor's run statistics (``rewardsvc.monitor.shared``).

Redis is a help, never a dependency of a reward. Every operation has a short deadline;
the first one that fails marks the link unhealthy, and from then on the callers skip Redis
at once and score with their local state (the in-memory verdict LRU, the local
calibration windows). What they write meanwhile is queued, bounded, and replayed when a
background probe finds Redis again (``redis_health``: the link's health, its probe and
its backoff); then the link is healthy again.

A slow Redis (one that answers, late) costs a request at most one deadline, not one per
verdict: the verdict reads asked in one turn of the event loop go out as one ``MGET``
(``get_verdict``), and verdict writes never hold up a verdict: they are queued and sent in
pipelined batches behind it (``put_verdict``; ``flush`` waits for them).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, WatchError

from rewardsvc.storage.redis_health import LinkHealth, StateObserver

_Write = tuple[str, bytes, bytes | None, int, tuple[float, ...]]
"""A queued write: kind ("verdict" or "window"), key, value, window size, window scores."""

READ_BATCH = 512
"""Most keys in one ``MGET``: a larger batch of reads goes as several in one round trip."""
WRITE_BATCH = 512
"""Most queued writes sent in one pipelined round trip."""


def _bytes_hash(raw: Mapping[bytes | str, bytes | str]) -> dict[bytes, bytes]:
    """A hash as this link reads it: its client never decodes responses, so every key and
    value is bytes (the client's types allow str for clients that decode)."""
    return {k: v for k, v in raw.items() if isinstance(k, bytes) and isinstance(v, bytes)}


class RedisLink:
    """One Redis connection pool with its health, shared by the verdict cache and the
    calibration windows of a process.

    ``password`` is sent with AUTH when ``url`` has none (credentials in the URL win);
    ``timeout_s`` bounds each operation (connect included); ``retry_s`` is how often an
    unhealthy link probes Redis; ``pending_max`` bounds the writes queued while Redis is
    away (the oldest are dropped first). Keys live under ``prefix``; verdicts expire after
    ``verdict_ttl_s`` and unused calibration windows after ``window_ttl_s``, so that a Redis
    without ``maxmemory`` does not grow without end. At most ``max_connections`` are open.
    """

    def __init__(
        self,
        url: str,
        *,
        password: str | None = None,
        timeout_s: float = 0.25,
        retry_s: float = 1.0,
        prefix: str = "rewardsvc",
        verdict_ttl_s: int = 7 * 86_400,
        window_ttl_s: int = 30 * 86_400,
        pending_max: int = 10_000,
        max_connections: int = 64,
        observer: StateObserver | None = None,
    ):
        self.timeout_s = timeout_s
        # Connect, send and read each have timeout_s; this bounds the whole operation.
        self._deadline_s = timeout_s * 3
        self.retry_s = retry_s
        self.prefix = prefix
        self.verdict_ttl_s = verdict_ttl_s
        self.window_ttl_s = window_ttl_s
        # One immediate retry on a broken connection only (a pooled connection that a
        # Redis restart closed), none on a timeout: a failed operation falls back to local
        # state at once, and the probe, not each caller, finds out when Redis is back.
        # At most max_connections to Redis however many judge calls are in flight; a call
        # waits for a free one within the operation's deadline.
        credentials = {} if password is None else {"password": password}
        pool = redis.BlockingConnectionPool.from_url(
            url,
            **credentials,
            max_connections=max_connections,
            timeout=self._deadline_s,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        )
        self._client = redis.Redis(connection_pool=pool)
        self._health = LinkHealth(retry_s, self._ping, self._replay, observer)
        self._pending: deque[_Write] = deque(maxlen=pending_max)
        self._writer: asyncio.Task[None] | None = None
        # Verdict reads not sent yet: all go in the reader's next MGET.
        self._reads: dict[bytes, asyncio.Future[bytes | None]] = {}
        self._reader: asyncio.Task[None] | None = None

    @property
    def healthy(self) -> bool:
        """False while Redis is unreachable and the service runs on its local state."""
        return self._health.healthy

    @property
    def pending(self) -> int:
        """Writes queued for Redis while it is unreachable."""
        return len(self._pending)

    async def start(self) -> bool:
        """Check Redis once (at start-up) and return whether it answered; when it did not,
        the link is unhealthy and probes in the background until it does."""
        try:
            await self._ping()
        except (RedisError, OSError, TimeoutError) as exc:
            self._health.lost(exc)
        return self._health.healthy

    async def _ping(self) -> None:
        async with asyncio.timeout(self._deadline_s):
            await self._client.ping()

    # ------------------------------------------------------------------ verdicts

    def _verdict_key(self, key: bytes) -> bytes:
        return self.prefix.encode() + b":verdict:" + key

    async def get_verdict(self, key: bytes) -> bytes | None:
        """The verdict bytes stored under ``key``, or None (a miss, or Redis unreachable).

        One ``MGET`` is in flight at a time: the reads asked meanwhile (or in the same turn
        of the event loop, as the verdicts of one batch are) go together in the next, so a
        slow Redis costs a batch a round trip or two, however many verdicts it has.
        """
        if not self._health.healthy:
            return None
        future = self._reads.get(key)
        if future is None:
            loop = asyncio.get_running_loop()
            future = self._reads[key] = loop.create_future()
            if self._reader is None or self._reader.done():
                self._reader = loop.create_task(self._read_all())
        return await asyncio.shield(future)

    async def _read_all(self) -> None:
        # Started by the first read; the others of its turn of the loop are in by the
        # time this runs, and the ones asked while an MGET flies go in the next.
        while self._reads:
            reads, self._reads = self._reads, {}
            await self._read(reads)

    async def _read(self, reads: dict[bytes, asyncio.Future[bytes | None]]) -> None:
        keys = list(reads)
        try:
            if not self._health.healthy:
                return
            async with asyncio.timeout(self._deadline_s):
                pipe = self._client.pipeline(transaction=False)
                for start in range(0, len(keys), READ_BATCH):
                    pipe.mget([self._verdict_key(k) for k in keys[start : start + READ_BATCH]])
                values = [v for chunk in await pipe.execute() for v in chunk]
            for key, value in zip(keys, values, strict=True):
                if not reads[key].done():
                    reads[key].set_result(bytes(value) if value is not None else None)
        except (RedisError, OSError, TimeoutError) as exc:
            self._health.lost(exc)
        finally:
            # Whatever happened, no reader waits on: what was not read is a miss.
            for future in reads.values():
                if not future.done():
                    future.set_result(None)

    async def put_verdict(self, key: bytes, value: bytes) -> None:
        """Store verdict bytes under ``key``: queued, and sent behind the caller in a
        pipelined batch (or when Redis is back, while it is unreachable)."""
        self._pending.append(("verdict", key, value, 0, ()))
        if (
            self._health.healthy
            and not self._health.closed
            and (self._writer is None or self._writer.done())
        ):
            self._writer = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        """Send the queued writes, a batch per round trip, until none is left (or Redis
        fails: they stay queued for the probe to replay)."""
        try:
            while self._health.healthy and self._pending:
                await self._send_batch()
        except (RedisError, OSError, TimeoutError) as exc:
            self._health.lost(exc)

    async def flush(self, timeout_s: float | None = None) -> None:
        """Wait until the queued writes are sent or Redis has failed them (at most
        ``timeout_s``, when given)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while self._writer is not None and not self._writer.done():
                    await asyncio.shield(self._writer)

    # ------------------------------------------------------------------ windows

    async def extend_window(
        self, name: str, size: int, scores: Sequence[float]
    ) -> list[float] | None:
        """Append ``scores`` to the shared window ``name``, keep its last ``size`` scores and
        return them, in one transaction so that concurrent replicas see consistent windows.

        None when Redis is unreachable (the append is queued and replayed on its return):
        the caller then uses its local window.
        """
        write: _Write = ("window", name.encode(), None, size, tuple(scores))
        if not self._health.healthy:
            if scores:
                self._pending.append(write)
            return None
        try:
            values = await self._apply(write)
        except (RedisError, OSError, TimeoutError) as exc:
            if scores:
                self._pending.append(write)
            self._health.lost(exc)
            return None
        return [float(v) for v in values or ()]

    def _window_key(self, name: bytes) -> bytes:
        return self.prefix.encode() + b":window:" + name

    # ------------------------------------------------------------------ other rooms' state

    async def execute(
        self, build: Callable[[Any], object], *, transaction: bool = True
    ) -> list[Any] | None:
        """Queue commands with ``build(pipeline)`` and send them in one round trip (a
        MULTI/EXEC transaction unless ``transaction`` is False); return their replies.

        None when Redis is unreachable: the link is then unhealthy, like for any other
        operation, and the caller keeps its local state (and queues what it must replay).
        """
        if not self._health.healthy:
            return None
        try:
            async with asyncio.timeout(self._deadline_s):
                pipe = self._client.pipeline(transaction=transaction)
                build(pipe)
                return list(await pipe.execute())
        except (RedisError, OSError, TimeoutError) as exc:
            self._health.lost(exc)
            return None

    async def update_hash(
        self,
        key: bytes,
        step: Callable[[dict[bytes, bytes]], Callable[[Any], object] | None],
        retries: int = 8,
    ) -> bool | None:
        """Read-modify-write of the hash ``key`` as an optimistic transaction: ``step`` gets
        its content (read under WATCH) and returns the commands to queue, or None for none.

        True when committed; False when ``step`` wrote nothing or other replicas changed the
        hash ``retries`` times in a row; None when Redis is unreachable. A commit happens at
        most once per change, so a transition decided in ``step`` is seen by one replica.
        """
        if not self._health.healthy:
            return None
        try:
            async with asyncio.timeout(self._deadline_s * 2), self._client.pipeline() as pipe:
                for _ in range(retries):
                    try:
                        await pipe.watch(key)
                        writes = step(_bytes_hash(await pipe.hgetall(key)))
                        if writes is None:
                            await pipe.unwatch()
                            return False
                        pipe.multi()
                        writes(pipe)
                        await pipe.execute()
                        return True
                    except WatchError:
                        continue
                return False
        except (RedisError, OSError, TimeoutError) as exc:
            self._health.lost(exc)
            return None

    # ------------------------------------------------------------------ plumbing

    async def _apply(self, write: _Write) -> list[bytes]:
        """One window append, in a transaction; the window's scores after it."""
        async with asyncio.timeout(self._deadline_s):
            pipe = self._client.pipeline(transaction=True)
            self._queue(pipe, write)
            replies = await pipe.execute()
        return list(replies[-2])

    def _queue(self, pipe: Any, write: _Write) -> None:
        kind, key, value, size, scores = write
        if kind == "verdict":
            pipe.set(self._verdict_key(key), value or b"", ex=self.verdict_ttl_s)
            return
        wkey = self._window_key(key)
        if scores:
            pipe.rpush(wkey, *(repr(s) for s in scores))
        pipe.ltrim(wkey, -size, -1)
        pipe.lrange(wkey, 0, -1)
        pipe.expire(wkey, self.window_ttl_s)

    async def _replay(self) -> None:
        # In order, a pipelined batch per round trip; a failure part-way keeps the rest.
        while self._pending:
            await self._send_batch()

    async def _send_batch(self) -> None:
        """Send the oldest queued writes in one round trip and remove them from the queue:
        by identity, as while they were sent a full queue may have dropped them, or the
        writer and the probe both sent them (a verdict written twice is the same)."""
        batch = [self._pending[n] for n in range(min(len(self._pending), WRITE_BATCH))]
        async with asyncio.timeout(self._deadline_s):
            pipe = self._client.pipeline(transaction=False)
            for write in batch:
                self._queue(pipe, write)
            await pipe.execute()
        for write in batch:
            if self._pending and self._pending[0] is write:
                self._pending.popleft()

    async def aclose(self) -> None:
        """Send the queued writes (while Redis answers), stop probing, close the connections."""
        await self.flush(timeout_s=4 * self._deadline_s)
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        await self._health.close()
        await self._client.aclose()
        await self._client.connection_pool.disconnect()
