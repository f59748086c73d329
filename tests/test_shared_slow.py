"""A slow Redis, not a down one, behind a delaying TCP proxy on loopback: it costs a batch of
verdicts one round trip (one ``MGET``, writes sent behind the verdicts), the link does not
flap, a Redis that answers pings but not the traffic is probed less and less often; and a
Redis with a password is reached through a URL with credentials."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio
import redis.asyncio as redis_client
from redis_server import RedisServer, spare_port

from rewardsvc.core.verdict import Verdict
from rewardsvc.scoring.cache import VerdictCache, cache_key
from rewardsvc.scoring.shared import RedisLink
from rewardsvc.settings import Settings

TIMEOUT_S = 0.25  # the default redis_timeout_s; an operation's deadline is three times it


@dataclass
class Health:
    changes: list[bool] = field(default_factory=list)

    def shared_state(self, healthy: bool) -> None:
        self.changes.append(healthy)


# The verdict reads, as redis-py sends them (RESP bulk strings).
READS = (b"\r\nGET\r\n", b"\r\nMGET\r\n")


class DelayProxy:
    """A TCP proxy to ``upstream`` on loopback that holds every reply chunk ``delay_s``
    before passing it on (in order); with ``only``, just the replies to requests holding
    one of those commands (not PING, a connection's handshake or a write)."""

    def __init__(self, upstream_port: int, delay_s: float, only: tuple[bytes, ...] | None = None):
        self.upstream_port = upstream_port
        self.delay_s = delay_s
        self.only = only
        self.port = spare_port()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def __aenter__(self) -> DelayProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        # Whether the request being answered on this connection is answered at once.
        fast = [False]

        async def requests() -> None:
            while chunk := await client_r.read(65536):
                fast[0] = self.only is not None and not any(c in chunk for c in self.only)
                up_w.write(chunk)
                await up_w.drain()
            up_w.close()

        async def replies() -> None:
            while chunk := await up_r.read(65536):
                if not fast[0]:
                    await asyncio.sleep(self.delay_s)
                client_w.write(chunk)
                await client_w.drain()
            client_w.close()

        for pump in (requests(), replies()):
            task = asyncio.ensure_future(pump)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    srv = RedisServer(tmp_path / "redis")
    srv.start()
    yield srv
    srv.stop()


@pytest_asyncio.fixture(loop_scope="function")
async def raw(server: RedisServer) -> AsyncIterator[redis_client.Redis]:
    client = redis_client.Redis.from_url(server.url)
    yield client
    await client.aclose()


async def commands(raw: redis_client.Redis) -> dict[str, int]:
    """How many times the server ran each command since its stats were reset."""
    stats = await raw.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


async def judge() -> Verdict:
    return Verdict(score=0.5, probs={"yes": 0.5, "no": 0.5}, raw="yes")


def key(n: int) -> bytes:
    return cache_key("sha256:slow", "judge@1", "c", f"item-{n}")


async def test_a_slow_redis_costs_a_batch_one_round_trip_and_stays_healthy(
    server: RedisServer, raw: redis_client.Redis
) -> None:
    # Every reply 0.15 s late: under the 0.25 s timeout, so each operation succeeds, but a
    # read and a write per verdict through 64 connections would queue for seconds.
    async with DelayProxy(server.port, delay_s=0.15) as proxy:
        health = Health()
        link = RedisLink(proxy.url, timeout_s=TIMEOUT_S, retry_s=0.05, observer=health)
        cache = VerdictCache(shared=link)
        try:
            assert await link.start()
            await raw.config_resetstat()
            started = time.monotonic()
            batch = [cache.get_or_call(key(n), judge) for n in range(400)]
            outcomes = await asyncio.gather(*batch)
            took = time.monotonic() - started
            await link.flush()
            again = await VerdictCache(shared=link).get_or_call(key(7), judge)
        finally:
            await cache.aclose()
            await link.aclose()
    assert all(source == "call" and v.ok for v, source in outcomes)
    seen = await commands(raw)
    # One MGET for the 400 reads; the writes went in pipelined batches, not one per verdict.
    assert seen.get("get", 0) == 0 and seen.get("mget") == 1 + 1  # the batch, then `again`
    assert seen.get("set") == 400
    assert health.changes == [] and again[1] == "hit"
    # The promise is itself a bound: the batch waited for Redis once, within its deadline.
    assert took < 3 * TIMEOUT_S, took


async def test_with_a_cache_file_too_reads_still_go_in_few_round_trips(
    server: RedisServer, raw: redis_client.Redis, tmp_path: Path
) -> None:
    # The file is read first, key by key in worker threads: the misses reach Redis one by
    # one, and the ones that come while an MGET flies wait for the next one.
    async with DelayProxy(server.port, delay_s=0.15) as proxy:
        health = Health()
        link = RedisLink(proxy.url, timeout_s=TIMEOUT_S, retry_s=0.05, observer=health)
        cache = VerdictCache(path=tmp_path / "verdicts.sqlite", shared=link)
        try:
            assert await link.start()
            await raw.config_resetstat()
            outcomes = await asyncio.gather(*(cache.get_or_call(key(n), judge) for n in range(400)))
        finally:
            await cache.aclose()
            await link.aclose()
    assert all(source == "call" and v.ok for v, source in outcomes)
    seen = await commands(raw)
    assert seen.get("get", 0) == 0 and 1 <= seen.get("mget", 0) <= 10, seen
    assert health.changes == []


async def test_a_redis_slower_than_its_deadline_costs_a_batch_one_deadline(
    server: RedisServer,
) -> None:
    async with DelayProxy(server.port, delay_s=2.0) as proxy:
        health = Health()
        link = RedisLink(proxy.url, timeout_s=TIMEOUT_S, retry_s=10.0, observer=health)
        cache = VerdictCache(shared=link)
        try:
            started = time.monotonic()
            first = await asyncio.gather(*(cache.get_or_call(key(n), judge) for n in range(50)))
            took = time.monotonic() - started
            # Once lost, the next batch skips Redis at once (and queues its writes).
            second = await asyncio.gather(
                *(cache.get_or_call(key(n), judge) for n in range(50, 100))
            )
        finally:
            await cache.aclose()
            await link.aclose()
    assert all(v.ok for v, _ in first + second)
    assert health.changes == [False]
    assert took < 2 * 3 * TIMEOUT_S, took
    assert link.pending == 100


async def test_a_redis_answering_pings_but_not_traffic_is_probed_less_and_less(
    server: RedisServer,
) -> None:
    # Verdict reads answer after 1 s (past the 0.25 s timeout), the rest at once: every
    # probe (a PING, then the queued writes) succeeds and the next read fails again.
    async with DelayProxy(server.port, delay_s=1.0, only=READS) as proxy:
        health = Health()
        link = RedisLink(proxy.url, timeout_s=TIMEOUT_S, retry_s=0.05, observer=health)
        cache = VerdictCache(shared=link)
        try:
            for n in range(40):
                await cache.get_or_call(key(n), judge)
                await asyncio.sleep(0.05)
        finally:
            await cache.aclose()
            with contextlib.suppress(Exception):
                await link.aclose()
    losses = health.changes.count(False)
    # Probing every 0.05 s, each of the 40 reads after a recovery would pay a timeout; with
    # the interval doubling on each quick relapse, a handful do.
    assert 1 <= losses <= 8, health.changes


async def test_redis_with_a_password_is_reached_with_credentials_in_the_url(
    tmp_path: Path,
) -> None:
    secured = RedisServer(tmp_path / "redis", password="s3cret-pass")
    secured.start()
    try:
        good = RedisLink(secured.url, timeout_s=TIMEOUT_S, retry_s=10.0)
        bare_url = f"redis://127.0.0.1:{secured.port}/0"
        bare = RedisLink(bare_url, timeout_s=TIMEOUT_S, retry_s=10.0)
        wrong = RedisLink(
            f"redis://:nope@127.0.0.1:{secured.port}/0", timeout_s=TIMEOUT_S, retry_s=10.0
        )
        # REWARDSVC_REDIS_PASSWORD_FILE: the password beside a URL without one.
        secret = tmp_path / "password"
        secret.write_text("s3cret-pass\n")
        settings = Settings(redis_url=bare_url, redis_password_file=secret)
        from_file = RedisLink(bare_url, password=settings.redis_password(), retry_s=10.0)
        try:
            assert await from_file.start() is True
            assert await good.start() is True
            assert await bare.start() is False  # NOAUTH: the link says unreachable
            assert await wrong.start() is False
            await good.put_verdict(key(1), b"x")
            await good.flush()
            assert await good.get_verdict(key(1)) == b"x"
        finally:
            for link in (good, bare, wrong, from_file):
                await link.aclose()
    finally:
        secured.stop()
