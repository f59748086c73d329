"""State shared by the replicas of a deployment through Redis (or Valkey): verdicts and
calibration windows, so that any replica gives the same reward for the same item and
calibration survives restarts; and, through :meth:`RedisLink.execute` and
:meth:`RedisLink.update_hash`, the reward monitor's run statistics (``rewardsvc.monitor.shared``).

Redis is a help, never a dependency of a reward. Every operation has a short deadline;
the first one that fails marks the link unhealthy, reports it to the observer, and from
then on the callers skip Redis at once and score with their local state (the in-memory
verdict LRU, the local calibration windows). What they write meanwhile is queued, bounded,
and replayed when a background probe finds Redis again; then the link is healthy again.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, WatchError

log = logging.getLogger(__name__)


class StateObserver(Protocol):
    """Told when shared state becomes unreachable (False) and reachable again (True)."""

    def shared_state(self, healthy: bool) -> None: ...


class _Quiet:
    def shared_state(self, healthy: bool) -> None:
        """Ignore."""


_Write = tuple[str, bytes, bytes | None, int, tuple[float, ...]]
"""A queued write: kind ("verdict" or "window"), key, value, window size, window scores."""


class RedisLink:
    """One Redis connection pool with its health, shared by the verdict cache and the
    calibration windows of a process.

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
        self._observer: StateObserver = observer if observer is not None else _Quiet()
        # One immediate retry on a broken connection only (a pooled connection that a
        # Redis restart closed), none on a timeout: a failed operation falls back to local
        # state at once, and the probe, not each caller, finds out when Redis is back.
        # At most max_connections to Redis however many judge calls are in flight; a call
        # waits for a free one within the operation's deadline.
        pool = redis.BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=self._deadline_s,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        )
        self._client = redis.Redis(connection_pool=pool)
        self._healthy = True
        self._pending: deque[_Write] = deque(maxlen=pending_max)
        self._probe: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def healthy(self) -> bool:
        """False while Redis is unreachable and the service runs on its local state."""
        return self._healthy

    @property
    def pending(self) -> int:
        """Writes queued for Redis while it is unreachable."""
        return len(self._pending)

    async def start(self) -> bool:
        """Check Redis once (at start-up) and return whether it answered; when it did not,
        the link is unhealthy and probes in the background until it does."""
        try:
            async with asyncio.timeout(self._deadline_s):
                await self._client.ping()
        except (RedisError, OSError, TimeoutError) as exc:
            self._lost(exc)
        return self._healthy

    # ------------------------------------------------------------------ verdicts

    def _verdict_key(self, key: bytes) -> bytes:
        return self.prefix.encode() + b":verdict:" + key

    async def get_verdict(self, key: bytes) -> bytes | None:
        """The verdict bytes stored under ``key``, or None (a miss, or Redis unreachable)."""
        if not self._healthy:
            return None
        try:
            async with asyncio.timeout(self._deadline_s):
                value = await self._client.get(self._verdict_key(key))
        except (RedisError, OSError, TimeoutError) as exc:
            self._lost(exc)
            return None
        return bytes(value) if value is not None else None

    async def put_verdict(self, key: bytes, value: bytes) -> None:
        """Store verdict bytes under ``key`` (queued for later while Redis is unreachable)."""
        write: _Write = ("verdict", key, value, 0, ())
        if not self._healthy:
            self._pending.append(write)
            return
        try:
            await self._apply(write)
        except (RedisError, OSError, TimeoutError) as exc:
            self._pending.append(write)
            self._lost(exc)

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
        if not self._healthy:
            if scores:
                self._pending.append(write)
            return None
        try:
            values = await self._apply(write)
        except (RedisError, OSError, TimeoutError) as exc:
            if scores:
                self._pending.append(write)
            self._lost(exc)
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
        if not self._healthy:
            return None
        try:
            async with asyncio.timeout(self._deadline_s):
                pipe = self._client.pipeline(transaction=transaction)
                build(pipe)
                return list(await pipe.execute())
        except (RedisError, OSError, TimeoutError) as exc:
            self._lost(exc)
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
        if not self._healthy:
            return None
        try:
            async with asyncio.timeout(self._deadline_s * 2), self._client.pipeline() as pipe:
                for _ in range(retries):
                    try:
                        await pipe.watch(key)
                        writes = step(await pipe.hgetall(key))
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
            self._lost(exc)
            return None

    # ------------------------------------------------------------------ plumbing

    async def _apply(self, write: _Write) -> list[bytes] | None:
        kind, key, value, size, scores = write
        async with asyncio.timeout(self._deadline_s):
            if kind == "verdict":
                await self._client.set(self._verdict_key(key), value or b"", ex=self.verdict_ttl_s)
                return None
            wkey = self._window_key(key)
            pipe = self._client.pipeline(transaction=True)
            if scores:
                pipe.rpush(wkey, *(repr(s) for s in scores))
            pipe.ltrim(wkey, -size, -1)
            pipe.lrange(wkey, 0, -1)
            pipe.expire(wkey, self.window_ttl_s)
            replies = await pipe.execute()
            return list(replies[-2])

    def _lost(self, exc: BaseException) -> None:
        if self._healthy:
            log.warning(
                "shared state: Redis unreachable (%s: %s); scoring with local state",
                type(exc).__name__,
                exc,
            )
            self._healthy = False
            self._observer.shared_state(False)
        if not self._closed and (self._probe is None or self._probe.done()):
            self._probe = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.retry_s)
            try:
                async with asyncio.timeout(self._deadline_s):
                    await self._client.ping()
                await self._replay()
            except (RedisError, OSError, TimeoutError):
                continue
            self._healthy = True
            self._observer.shared_state(True)
            log.warning("shared state: Redis reachable again; resynchronized")
            return

    async def _replay(self) -> None:
        # In order, and each write removed only once applied: a failure part-way keeps the
        # rest for the next probe.
        while self._pending:
            await self._apply(self._pending[0])
            self._pending.popleft()

    async def aclose(self) -> None:
        """Stop probing and close the connections."""
        self._closed = True
        if self._probe is not None:
            self._probe.cancel()
            await asyncio.gather(self._probe, return_exceptions=True)
        await self._client.aclose()
        await self._client.connection_pool.disconnect()
