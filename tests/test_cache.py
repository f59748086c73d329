"""The verdict cache: keys, LRU bound, SQLite persistence, in-flight deduplication."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsvc.core.verdict import Verdict
from rewardsvc.scoring.cache import VerdictCache, cache_key


class Counter:
    """A judge call stand-in that counts invocations and can be held at a gate."""

    def __init__(self, verdict: Verdict | None = None, gate: asyncio.Event | None = None):
        self.calls = 0
        self.verdict = verdict or Verdict(
            score=0.75, variance=0.01, probs={"yes": 0.75, "no": 0.25}
        )
        self.gate = gate

    async def __call__(self) -> Verdict:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        return self.verdict


def test_key_is_content_addressed():
    k = cache_key("sha256:a", "judge-1", "c1", "d" * 64)
    assert k == cache_key("sha256:a", "judge-1", "c1", "d" * 64)
    assert len(k) == 64 and int(k, 16) >= 0
    others = [
        cache_key("sha256:b", "judge-1", "c1", "d" * 64),
        cache_key("sha256:a", "judge-2", "c1", "d" * 64),
        cache_key("sha256:a", "judge-1", "_holistic", "d" * 64),
        cache_key("sha256:a", "judge-1", "c1", "e" * 64),
        # The encoding is unambiguous: moving a separator does not collide.
        cache_key("sha256:a", "judge-1c", "1", "d" * 64),
    ]
    assert len({k, *others}) == len(others) + 1
    assert VerdictCache.key("a", "b", "c", "d") == cache_key("a", "b", "c", "d")


async def test_hit_after_call_and_errors_never_cached():
    cache = VerdictCache()
    call = Counter()
    v, source = await cache.get_or_call("k", call)
    assert (v.score, source) == (0.75, "call")
    v, source = await cache.get_or_call("k", call)
    assert (v.score, source, call.calls) == (0.75, "hit", 1)
    assert cache.hits == 1

    failing = Counter(Verdict.failed("server_error: 500"))
    for _ in range(2):
        v, source = await cache.get_or_call("bad", failing)
        assert (v.ok, source) == (False, "call")
    assert failing.calls == 2  # retried by the next request, not served from the cache
    assert await cache.get("bad") is None
    await cache.put("bad", Verdict.failed("x"))
    assert await cache.get("bad") is None


async def test_use_cache_false_bypasses_everything():
    cache = VerdictCache()
    call = Counter()
    await cache.get_or_call("k", call, use_cache=False)
    await cache.get_or_call("k", call, use_cache=False)
    assert call.calls == 2
    assert len(cache) == 0


async def test_a_call_that_raises_becomes_a_failed_verdict():
    async def boom() -> Verdict:
        raise RuntimeError("bug")

    cache = VerdictCache()
    v, source = await cache.get_or_call("k", boom)
    assert source == "call" and not v.ok and "RuntimeError: bug" in (v.error or "")
    assert len(cache) == 0


async def test_concurrent_identical_calls_share_one_future():
    gate = asyncio.Event()
    call = Counter(gate=gate)
    cache = VerdictCache()
    tasks = [asyncio.ensure_future(cache.get_or_call("k", call)) for _ in range(10)]
    await asyncio.sleep(0.01)
    gate.set()
    outcomes = await asyncio.gather(*tasks)
    assert call.calls == 1
    assert sorted(s for _, s in outcomes) == ["call"] + ["dedup"] * 9
    assert cache.dedups == 9
    assert all(v.score == 0.75 for v, _ in outcomes)


async def test_cancelled_waiter_does_not_cancel_the_shared_call():
    gate = asyncio.Event()
    call = Counter(gate=gate)
    cache = VerdictCache()
    first = asyncio.ensure_future(cache.get_or_call("k", call))
    second = asyncio.ensure_future(cache.get_or_call("k", call))
    await asyncio.sleep(0.01)
    first.cancel()  # the caller that started the call goes away
    gate.set()
    v, source = await second
    assert (v.score, source, call.calls) == (0.75, "dedup", 1)
    assert (await cache.get_or_call("k", call))[1] == "hit"


async def test_no_storage_still_dedups():
    gate = asyncio.Event()
    call = Counter(gate=gate)
    cache = VerdictCache(max_entries=0)
    tasks = [asyncio.ensure_future(cache.get_or_call("k", call)) for _ in range(3)]
    await asyncio.sleep(0.01)
    gate.set()
    await asyncio.gather(*tasks)
    assert call.calls == 1 and len(cache) == 0
    await cache.get_or_call("k", call)
    assert call.calls == 2


@settings(max_examples=30, deadline=None)
@given(
    st.integers(min_value=1, max_value=20),
    st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=200),
)
def test_lru_never_exceeds_its_size(size, keys):
    async def run() -> None:
        cache = VerdictCache(max_entries=size)
        for k in keys:
            await cache.get_or_call(str(k), Counter())
            assert len(cache) <= size
        # The most recently used key is always still there.
        assert await cache.get(str(keys[-1])) is not None

    asyncio.run(run())


async def test_lru_evicts_least_recently_used():
    cache = VerdictCache(max_entries=2)
    for k in ("a", "b"):
        await cache.put(k, Verdict(score=0.5))
    assert await cache.get("a") is not None  # a is now more recent than b
    await cache.put("c", Verdict(score=0.5))
    assert len(cache) == 2
    assert await cache.get("b") is None
    assert await cache.get("a") is not None and await cache.get("c") is not None


async def test_sqlite_persists_across_caches(tmp_path: Path):
    path = tmp_path / "sub" / "verdicts.sqlite"
    first = VerdictCache(path=path)
    call = Counter(Verdict(score=0.4, variance=0.02, probs={"1": 0.5, "2": 0.5}, raw="1"))
    await first.get_or_call("k", call)
    await first.get_or_call("bad", Counter(Verdict.failed("timeout")))
    assert first.persisted_count() == 1
    await first.aclose()

    second = VerdictCache(max_entries=1, path=path)
    again = Counter()
    v, source = await second.get_or_call("k", again)
    assert source == "hit" and again.calls == 0
    assert v == Verdict(score=0.4, variance=0.02, probs={"1": 0.5, "2": 0.5}, raw="1")
    # Now promoted to memory: served without touching the file.
    assert (await second.get_or_call("k", again))[1] == "hit"
    # Errors were never written.
    assert (await second.get_or_call("bad", again))[1] == "call"
    await second.aclose()


def test_negative_size_is_refused():
    with pytest.raises(ValueError):
        VerdictCache(max_entries=-1)


async def test_damaged_sqlite_row_is_a_miss(tmp_path: Path):
    path = tmp_path / "verdicts.sqlite"
    first = VerdictCache(path=path)
    await first.get_or_call("k", Counter())
    await first.aclose()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE verdicts SET value = 'not json' WHERE key = 'k'")
    second = VerdictCache(path=path)
    call = Counter()
    verdict, source = await second.get_or_call("k", call)
    assert source == "call" and call.calls == 1 and verdict.ok
    await second.aclose()
