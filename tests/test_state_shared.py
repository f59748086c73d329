"""Shared state through a real Redis: two independent replicas (each its own verdict cache,
calibration windows and Redis link) agree on verdicts and calibration, and keep scoring
with their local state while Redis is down, then resynchronize."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio
import redis.asyncio as redis_client
from redis_server import RedisServer, running

from rewardsvc.core import aggregate
from rewardsvc.core.verdict import Verdict
from rewardsvc.storage.cache import VerdictCache, cache_key
from rewardsvc.storage.calibration import CalibrationWindows
from rewardsvc.storage.redis_link import RedisLink

VERSION = "sha256:feed"


class Judge:
    """A judge call stand-in: a fixed verdict, counted, optionally held at a gate."""

    def __init__(self, score: float = 0.75, gate: asyncio.Event | None = None):
        self.calls = 0
        self.score = score
        self.gate = gate

    async def __call__(self) -> Verdict:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        return Verdict(
            score=self.score,
            variance=0.01,
            probs={"yes": self.score, "no": 1 - self.score},
            raw="yes",
            prompt_tokens=100,
            completion_tokens=1,
            latency_ms=2.5,
        )


@dataclass
class Health:
    """An observer of the link's health transitions."""

    changes: list[bool] = field(default_factory=list)

    def shared_state(self, healthy: bool) -> None:
        self.changes.append(healthy)


@dataclass
class Replica:
    """What one service process holds: its link, verdict cache and calibration windows."""

    link: RedisLink
    cache: VerdictCache
    windows: CalibrationWindows
    health: Health


def replica(url: str) -> Replica:
    health = Health()
    link = RedisLink(url, timeout_s=0.5, retry_s=0.05, prefix="test", observer=health)
    return Replica(link, VerdictCache(shared=link), CalibrationWindows(shared=link), health)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    with running(tmp_path / "redis") as started:
        yield started


@pytest_asyncio.fixture(loop_scope="function")  # the test's own loop, where the clients live
async def pair(server: RedisServer) -> AsyncIterator[tuple[Replica, Replica]]:
    a, b = replica(server.url), replica(server.url)
    yield a, b
    for r in (a, b):
        await r.cache.aclose()
        await r.link.aclose()


def key(n: int) -> bytes:
    return cache_key(VERSION, "judge@1", "c1", f"item-{n}")


async def until(condition, what: str) -> None:
    """Wait (up to a generous deadline, not a timing assertion) for ``condition()``."""
    for _ in range(600):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


async def test_an_item_cached_by_one_replica_is_a_hit_on_the_other(pair):
    a, b = pair
    first, second = Judge(0.75), Judge(0.1)
    verdict_a, source_a = await a.cache.get_or_call(key(1), first)
    await a.link.flush()  # verdicts are written behind the request that made them
    verdict_b, source_b = await b.cache.get_or_call(key(1), second)
    assert (source_a, source_b) == ("call", "hit")
    assert (first.calls, second.calls) == (1, 0)
    assert verdict_b == verdict_a and verdict_b.probs == {"yes": 0.75, "no": 0.25}

    # Failed verdicts are not shared either.
    async def fails() -> Verdict:
        return Verdict.failed("timeout", kind="timeout")

    await a.cache.get_or_call(key(2), fails)
    assert (await b.cache.get_or_call(key(2), second))[1] == "call"


async def test_calibration_is_the_same_on_both_replicas(pair):
    a, b = pair
    first = [0.2, 0.4, 0.6, 0.8, 0.5]
    second = [0.3, 0.9, 0.7]
    await a.windows.extend_and_stats(VERSION, "judge", 6, first)
    on_b = await b.windows.extend_and_stats(VERSION, "judge", 6, second)
    on_a = await a.windows.extend_and_stats(VERSION, "judge", 6, [])
    # One window for both, as if one process had seen both batches, trimmed to size.
    expected = aggregate.WindowStats.of((first + second)[-6:])
    assert on_a == on_b == expected
    for raw in (0.1, 0.55, 0.95):
        assert aggregate.calibrate("zscore", raw, on_a) == aggregate.calibrate("zscore", raw, on_b)
    # Without sharing, B would have calibrated against its own batch only.
    alone = await CalibrationWindows().extend_and_stats(VERSION, "judge", 6, second)
    assert alone != on_b
    # Other judges and rubric versions have windows of their own.
    other = await b.windows.extend_and_stats(VERSION, "other-judge", 6, [0.5])
    assert other.count == 1


async def test_calibration_survives_a_restart(server: RedisServer):
    before = replica(server.url)
    await before.windows.extend_and_stats(VERSION, "judge", 50, [0.1, 0.2, 0.3])
    await before.link.aclose()
    after = replica(server.url)
    stats = await after.windows.extend_and_stats(VERSION, "judge", 50, [0.4])
    assert stats == aggregate.WindowStats.of([0.1, 0.2, 0.3, 0.4])
    await after.link.aclose()


async def test_redis_killed_mid_run_scoring_goes_on_and_resynchronizes(pair, server):
    a, b = pair
    await a.cache.get_or_call(key(1), Judge())
    await a.windows.extend_and_stats(VERSION, "judge", 100, [0.2, 0.4])
    await a.link.flush()
    assert a.link.healthy and a.health.changes == [] and a.link.pending == 0

    server.kill()
    # Verdicts: a new item is scored locally, a known one still hits in memory.
    verdict, source = await a.cache.get_or_call(key(2), Judge(0.6))
    assert (source, verdict.score) == ("call", 0.6)
    assert (await a.cache.get_or_call(key(1), Judge()))[1] == "hit"
    assert not a.link.healthy and a.health.changes == [False]
    # Calibration: from the last shared window plus what came since, locally.
    stats = await a.windows.extend_and_stats(VERSION, "judge", 100, [0.9])
    assert stats == aggregate.WindowStats.of([0.2, 0.4, 0.9])
    assert a.link.pending == 2  # the verdict and the window append, queued for Redis

    server.start()  # empty: no persistence, as after a crash without AOF
    await until(lambda: a.link.healthy, "replica A sees Redis again")
    assert a.health.changes == [False, True] and a.link.pending == 0
    # What A scored during the outage was replayed: B hits it.
    again = Judge(0.1)
    verdict, source = await b.cache.get_or_call(key(2), again)
    assert (source, verdict.score, again.calls) == ("hit", 0.6, 0)
    stats = await b.windows.extend_and_stats(VERSION, "judge", 100, [])
    assert stats == aggregate.WindowStats.of([0.9])
    # And writes resume: a new verdict of B is a hit on A.
    await b.cache.get_or_call(key(3), Judge(0.3))
    await b.link.flush()
    assert (await a.cache.get_or_call(key(3), Judge(0.8)))[1] == "hit"


async def test_a_frozen_redis_costs_one_timeout_then_is_skipped(pair, server):
    a, _ = pair
    await a.cache.get_or_call(key(1), Judge())
    server.pause()
    try:
        verdict, source = await a.cache.get_or_call(key(2), Judge(0.2))
        assert (source, verdict.score) == ("call", 0.2)
        assert not a.link.healthy
        stats = await a.windows.extend_and_stats(VERSION, "judge", 10, [0.3])
        assert stats.count == 1
    finally:
        server.resume()
    await until(lambda: a.link.healthy, "the link sees Redis answer again")
    assert a.health.changes == [False, True]


async def test_unreachable_at_start_then_joins(tmp_path: Path):
    server = RedisServer(tmp_path / "redis")
    r = replica(server.url)
    assert await r.link.start() is False
    assert not r.link.healthy
    verdict, source = await r.cache.get_or_call(key(1), Judge(0.4))
    assert (source, verdict.score) == ("call", 0.4)
    stats = await r.windows.extend_and_stats(VERSION, "judge", 10, [0.4])
    assert stats.count == 1
    server.start()
    try:
        await until(lambda: r.link.healthy, "the link finds Redis")
        other = replica(server.url)
        assert (await other.cache.get_or_call(key(1), Judge()))[1] == "hit"
        stats = await other.windows.extend_and_stats(VERSION, "judge", 10, [])
        assert stats.count == 1
        await other.link.aclose()
    finally:
        await r.link.aclose()
        server.stop()


async def test_in_flight_dedup_is_per_process(pair):
    a, b = pair
    gate = asyncio.Event()
    judge_a, judge_b = Judge(0.5, gate), Judge(0.5, gate)
    calls = [
        asyncio.ensure_future(a.cache.get_or_call(key(7), judge_a)),
        asyncio.ensure_future(a.cache.get_or_call(key(7), judge_a)),
        asyncio.ensure_future(b.cache.get_or_call(key(7), judge_b)),
    ]
    await until(lambda: judge_a.calls and judge_b.calls, "both replicas call the judge")
    gate.set()
    sources = [s for _, s in await asyncio.gather(*calls)]
    # Within A the copy joins the call in flight; across replicas each calls once.
    assert sorted(sources) == ["call", "call", "dedup"]
    assert (judge_a.calls, judge_b.calls) == (1, 1)


async def test_damaged_shared_entry_is_a_miss_and_is_replaced(pair, server):
    a, b = pair
    raw = redis_client.Redis.from_url(server.url)
    await raw.set(b"test:verdict:" + key(5), b"\x09garbage")
    judge = Judge(0.65)
    verdict, source = await a.cache.get_or_call(key(5), judge)
    assert (source, verdict.score, judge.calls) == ("call", 0.65, 1)
    await a.link.flush()
    assert (await b.cache.get_or_call(key(5), Judge()))[1] == "hit"
    await raw.aclose()
