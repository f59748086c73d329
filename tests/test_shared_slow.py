"""A slow Redis, not a down one, behind a delaying TCP proxy on loopback: it costs a batch of
verdicts one round trip (one ``MGET``, writes sent behind the verdicts), the link does not
flap, a Redis that answers pings but not the traffic is probed less and less often; and a
Redis with a password is reached through a URL with credentials."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import redis.asyncio as redis_client
from redis_server import RedisServer, running, spare_port
from test_state_shared import Health

from rewardsvc.core.verdict import Verdict
from rewardsvc.settings import Settings
from rewardsvc.storage.cache import VerdictCache, cache_key
from rewardsvc.storage.redis_link import RedisLink

TIMEOUT_S = 0.25  # the default redis_timeout_s; an operation's deadline is three times it
# For a slow link that must stay up: every reply comes 0.3 s late, and the test's own
# loop, settling hundreds of verdicts on a loaded host, is late reading it (a CI run once
# saw a read pass 1 s). A timeout ten times the delay still tells a slow link from a
# down one.
SLOW_TIMEOUT_S = 3.0


# The verdict reads, as redis-py sends them (RESP bulk strings).
READS = (b"\r\nGET\r\n", b"\r\nMGET\r\n")


class DelayProxy:
    """A TCP proxy to ``upstream`` on loopback that passes every reply chunk on ``delay_s``
    after it came from Redis (in order); with ``only``, just the replies to requests holding
    one of those commands (not PING, a connection's handshake or a write).

    It models a slow link, so it runs as one does: on its own thread and event loop, and
    each chunk is due ``delay_s`` after it arrived, not after the previous one was passed
    on. Run on the service's loop, a busy moment of the service (hundreds of verdicts
    settling at once) stretched every delay; and held chunk after chunk, a reply that Redis
    wrote in several pieces (a handshake's pipelined replies, a pipeline of SETs) came
    ``delay_s`` per piece late. Either way a reply 0.1 s late on the wire reached the
    client past its 0.25 s read timeout now and then, which no real link would do.
    """

    def __init__(self, upstream_port: int, delay_s: float, only: tuple[bytes, ...] | None = None):
        self.upstream_port = upstream_port
        self.delay_s = delay_s
        self.only = only
        self.port = spare_port()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def __aenter__(self) -> DelayProxy:
        self._thread.start()
        await self._in_proxy_loop(self._start())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._in_proxy_loop(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        await asyncio.to_thread(self._thread.join)
        self._loop.close()

    async def _in_proxy_loop(self, work: Coroutine[Any, Any, None]) -> None:
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        loop = asyncio.get_running_loop()
        # Whether the request being answered on this connection is answered at once.
        fast = [False]
        # Reply chunks (b"" at the end) with the time each is due at the client.
        held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def requests() -> None:
            while chunk := await client_r.read(65536):
                fast[0] = self.only is not None and not any(c in chunk for c in self.only)
                up_w.write(chunk)
                await up_w.drain()
            up_w.close()

        async def replies() -> None:
            while chunk := await up_r.read(65536):
                held.put_nowait((loop.time() + (0.0 if fast[0] else self.delay_s), chunk))
            held.put_nowait((loop.time(), b""))

        async def deliver() -> None:
            while True:
                due, chunk = await held.get()
                await asyncio.sleep(max(0.0, due - loop.time()))
                if not chunk:
                    break
                client_w.write(chunk)
                await client_w.drain()
            client_w.close()

        for pump in (requests(), replies(), deliver()):
            task = asyncio.ensure_future(pump)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


@dataclass
class Slow:
    """A verdict cache whose Redis link goes through a :class:`DelayProxy`."""

    link: RedisLink
    cache: VerdictCache
    health: Health


@contextlib.asynccontextmanager
async def slow(
    server: RedisServer,
    delay_s: float,
    retry_s: float,
    timeout_s: float = TIMEOUT_S,
    **options: Any,
) -> AsyncIterator[Slow]:
    """A cache and link (of ``timeout_s``) to ``server`` through a proxy delaying replies
    ``delay_s``; ``only`` goes to the proxy, the rest (``path``) to the cache."""
    async with DelayProxy(server.port, delay_s, only=options.pop("only", None)) as proxy:
        health = Health()
        link = RedisLink(proxy.url, timeout_s=timeout_s, retry_s=retry_s, observer=health)
        cache = VerdictCache(shared=link, **options)
        try:
            yield Slow(link, cache, health)
        finally:
            await cache.aclose()
            await link.aclose()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    with running(tmp_path / "redis") as started:
        yield started


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


PONG = b"+PONG\r\n"


@contextlib.asynccontextmanager
async def pinging(
    proxy: DelayProxy,
) -> AsyncIterator[tuple[asyncio.StreamWriter, Callable[[float], Awaitable[bytes]]]]:
    """A raw connection through ``proxy`` with a PING sent on it; the writer, to send more,
    and a function reading the next reply within a timeout."""
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(b"PING\r\n")
    await writer.drain()

    async def reply(timeout_s: float) -> bytes:
        return await asyncio.wait_for(reader.readexactly(len(PONG)), timeout=timeout_s)

    try:
        yield writer, reply
    finally:
        writer.close()


async def test_the_proxy_delays_replies_that_come_apart_each_by_the_delay(
    server: RedisServer,
) -> None:
    # Two replies that leave Redis 0.05 s apart reach the client about 0.05 s apart, late
    # by the same delay: delays on a link overlap, they do not add up.
    async with DelayProxy(server.port, delay_s=0.5) as proxy, pinging(proxy) as (writer, reply):
        await asyncio.sleep(0.05)
        writer.write(b"PING\r\n")
        first = await reply(5.0)
        # Held behind the first for another delay, it would come 0.5 s after it.
        second = await reply(0.25)
    assert first == second == PONG


async def test_the_proxy_passes_replies_on_while_the_services_loop_is_busy(
    server: RedisServer,
) -> None:
    # Like a link, the proxy does not wait for the client's event loop: a reply due while
    # the loop is blocked is there when it runs again.
    async with DelayProxy(server.port, delay_s=0.2) as proxy, pinging(proxy) as (_, reply):
        time.sleep(0.5)  # the loop blocked, as by a burst of work, past the reply's delay
        # On the client's loop, the proxy would only now read the reply, then hold it 0.2 s.
        assert await reply(0.1) == PONG


async def test_a_slow_redis_costs_a_batch_one_round_trip_and_stays_healthy(
    server: RedisServer, raw: redis_client.Redis
) -> None:
    # Every reply 0.3 s late, under a 3 s timeout: each operation succeeds, but a read and a
    # write per verdict through 64 connections would queue for seconds. The margin is wide
    # because the test's own loop, busy settling 400 verdicts on a loaded machine, delays
    # reading a reply that has arrived, and redis-py's read timeout counts that too.
    async with slow(server, delay_s=0.3, retry_s=0.05, timeout_s=SLOW_TIMEOUT_S) as s:
        assert await s.link.start()
        await raw.config_resetstat()
        outcomes = await asyncio.gather(*(s.cache.get_or_call(key(n), judge) for n in range(400)))
        await s.link.flush()
        again = await VerdictCache(shared=s.link).get_or_call(key(7), judge)
    assert all(source == "call" and v.ok for v, source in outcomes)
    seen = await commands(raw)
    # One MGET for the 400 reads; the writes went in pipelined batches, not one per verdict.
    assert seen.get("get", 0) == 0 and seen.get("mget") == 1 + 1  # the batch, then `again`
    assert seen.get("set") == 400
    assert s.health.changes == [] and again[1] == "hit"


async def test_with_a_cache_file_too_reads_still_go_in_few_round_trips(
    server: RedisServer, raw: redis_client.Redis, tmp_path: Path
) -> None:
    # The file is read first, key by key in worker threads: the misses reach Redis one by
    # one, and the ones that come while an MGET flies wait for the next one.
    async with slow(
        server, delay_s=0.3, retry_s=0.05, timeout_s=SLOW_TIMEOUT_S, path=tmp_path / "v.sqlite"
    ) as s:
        assert await s.link.start()
        await raw.config_resetstat()
        outcomes = await asyncio.gather(*(s.cache.get_or_call(key(n), judge) for n in range(400)))
    assert all(source == "call" and v.ok for v, source in outcomes)
    seen = await commands(raw)
    assert seen.get("get", 0) == 0 and 1 <= seen.get("mget", 0) <= 10, seen
    assert s.health.changes == []


async def test_a_redis_slower_than_its_deadline_costs_a_batch_one_deadline(
    server: RedisServer,
) -> None:
    async with slow(server, delay_s=2.0, retry_s=10.0) as s:
        started = time.monotonic()
        first = await asyncio.gather(*(s.cache.get_or_call(key(n), judge) for n in range(50)))
        took = time.monotonic() - started
        # Once lost, the next batch skips Redis at once (and queues its writes).
        more = range(50, 100)
        second = await asyncio.gather(*(s.cache.get_or_call(key(n), judge) for n in more))
        pending = s.link.pending
    assert all(v.ok for v, _ in first + second)
    assert s.health.changes == [False]
    assert took < 2 * 3 * TIMEOUT_S, took
    assert pending == 100


async def test_a_redis_answering_pings_but_not_traffic_is_probed_less_and_less(
    server: RedisServer,
) -> None:
    # Verdict reads answer after 1 s (past the 0.25 s timeout), the rest at once: every
    # probe (a PING, then the queued writes) succeeds and the next read fails again.
    async with slow(server, delay_s=1.0, retry_s=0.05, only=READS) as s:
        for n in range(40):
            await s.cache.get_or_call(key(n), judge)
            await asyncio.sleep(0.05)
    losses = s.health.changes.count(False)
    # Probing every 0.05 s, each of the 40 reads after a recovery would pay a timeout; with
    # the interval doubling on each quick relapse, a handful do.
    assert 1 <= losses <= 8, s.health.changes


async def test_redis_with_a_password_is_reached_with_credentials(tmp_path: Path) -> None:
    with running(tmp_path / "redis", password="s3cret-pass") as secured:
        bare_url = f"redis://127.0.0.1:{secured.port}/0"
        # REWARDSVC_REDIS_PASSWORD_FILE: the password beside a URL without one.
        secret = tmp_path / "password"
        secret.write_text("s3cret-pass\n")
        from_file = Settings(redis_url=bare_url, redis_password_file=secret).redis_password()
        links = {
            "in the URL": RedisLink(secured.url, retry_s=10.0),
            "from the file": RedisLink(bare_url, password=from_file, retry_s=10.0),
            "none": RedisLink(bare_url, retry_s=10.0),
            "wrong": RedisLink(f"redis://:nope@127.0.0.1:{secured.port}/0", retry_s=10.0),
        }
        try:
            answered = {name: await link.start() for name, link in links.items()}
            good = links["in the URL"]
            await good.put_verdict(key(1), b"x")
            await good.flush()
            assert await links["from the file"].get_verdict(key(1)) == b"x"
        finally:
            for link in links.values():
                await link.aclose()
    # NOAUTH and a wrong password: the link says unreachable, and scoring goes on locally.
    assert answered == {"in the URL": True, "from the file": True, "none": False, "wrong": False}
