"""The verdict cache: keys, encoding, memory bound, bounded SQLite file, in-flight dedup."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsvc.core.verdict import Verdict
from rewardsvc.storage import codec
from rewardsvc.storage.cache import VerdictCache, cache_key


class Hits:
    """An observer that counts what the cache reports."""

    def __init__(self) -> None:
        self.hits = 0
        self.dedups = 0

    def cache_hit(self, dedup: bool) -> None:
        if dedup:
            self.dedups += 1
        else:
            self.hits += 1

    def judge_call(self, *args: object) -> None: ...

    def breaker(self, *args: object) -> None: ...

    def batch(self, *args: object) -> None: ...

    def rubric_file(self, *args: object) -> None: ...


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
    assert isinstance(k, bytes) and len(k) == 16
    others = [
        cache_key("sha256:b", "judge-1", "c1", "d" * 64),
        cache_key("sha256:a", "judge-2", "c1", "d" * 64),
        cache_key("sha256:a", "judge-1", "_holistic", "d" * 64),
        cache_key("sha256:a", "judge-1", "c1", "e" * 64),
        # The encoding is unambiguous: moving a separator does not collide.
        cache_key("sha256:a", "judge-1c", "1", "d" * 64),
    ]
    assert len({k, *others}) == len(others) + 1


def test_key_bytes_are_stable_across_versions():
    # Keys live on in cache files and in Redis: the same parts must give the same key
    # after any change to how it is computed (digests as main computed them, escapes too).
    assert cache_key("sha256:a", "judge-1", "c1", "d" * 64).hex() == (
        "f6b9f8ed970cb5fd7d5a417b266ff36f"
    )
    assert cache_key("v1", 'ju"dge\\\u00e9', "crit\u2028", "").hex() == (
        "4f3e20cff706c16cad84b2f39a138c4a"
    )


async def test_hit_after_call_and_errors_never_cached():
    seen = Hits()
    cache = VerdictCache(observer=seen)
    call = Counter()
    v, source = await cache.get_or_call(b"k", call)
    assert (v.score, source) == (0.75, "call")
    v, source = await cache.get_or_call(b"k", call)
    assert (v.score, source, call.calls) == (0.75, "hit", 1)
    assert (seen.hits, seen.dedups) == (1, 0)

    failing = Counter(Verdict.failed("server_error: 500"))
    for _ in range(2):
        v, source = await cache.get_or_call(b"bad", failing)
        assert (v.ok, source) == (False, "call")
    assert failing.calls == 2  # retried by the next request, not served from the cache
    assert await cache.get(b"bad") is None
    await cache.put(b"bad", Verdict.failed("x"))
    assert await cache.get(b"bad") is None


async def test_use_cache_false_bypasses_everything():
    cache = VerdictCache()
    call = Counter()
    await cache.get_or_call(b"k", call, use_cache=False)
    await cache.get_or_call(b"k", call, use_cache=False)
    assert call.calls == 2
    assert len(cache) == 0


async def test_a_call_that_raises_becomes_a_failed_verdict():
    async def boom() -> Verdict:
        raise RuntimeError("bug")

    cache = VerdictCache()
    v, source = await cache.get_or_call(b"k", boom)
    assert source == "call" and not v.ok and "RuntimeError: bug" in (v.error or "")
    assert len(cache) == 0


async def test_concurrent_identical_calls_share_one_future():
    gate = asyncio.Event()
    call = Counter(gate=gate)
    seen = Hits()
    cache = VerdictCache(observer=seen)
    tasks = [asyncio.ensure_future(cache.get_or_call(b"k", call)) for _ in range(10)]
    await asyncio.sleep(0.01)
    gate.set()
    outcomes = await asyncio.gather(*tasks)
    assert call.calls == 1
    assert sorted(s for _, s in outcomes) == ["call"] + ["dedup"] * 9
    assert (seen.dedups, seen.hits) == (9, 0)
    assert all(v.score == 0.75 for v, _ in outcomes)


async def test_cancelled_waiter_does_not_cancel_the_shared_call():
    gate = asyncio.Event()
    call = Counter(gate=gate)
    cache = VerdictCache()
    first = asyncio.ensure_future(cache.get_or_call(b"k", call))
    second = asyncio.ensure_future(cache.get_or_call(b"k", call))
    await asyncio.sleep(0.01)
    first.cancel()  # the caller that started the call goes away
    gate.set()
    v, source = await second
    assert (v.score, source, call.calls) == (0.75, "dedup", 1)
    assert (await cache.get_or_call(b"k", call))[1] == "hit"


async def test_no_storage_still_dedups():
    gate = asyncio.Event()
    call = Counter(gate=gate)
    cache = VerdictCache(max_entries=0)
    tasks = [asyncio.ensure_future(cache.get_or_call(b"k", call)) for _ in range(3)]
    await asyncio.sleep(0.01)
    gate.set()
    await asyncio.gather(*tasks)
    assert call.calls == 1 and len(cache) == 0
    await cache.get_or_call(b"k", call)
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
            await cache.get_or_call(str(k).encode(), Counter())
            assert len(cache) <= size
        # The most recently used key is always still there.
        assert await cache.get(str(keys[-1]).encode()) is not None

    asyncio.run(run())


async def test_lru_evicts_least_recently_used():
    cache = VerdictCache(max_entries=2)
    for k in (b"a", b"b"):
        await cache.put(k, Verdict(score=0.5))
    assert await cache.get(b"a") is not None  # a is now more recent than b
    await cache.put(b"c", Verdict(score=0.5))
    assert len(cache) == 2
    assert await cache.get(b"b") is None
    assert await cache.get(b"a") is not None and await cache.get(b"c") is not None


def file_rows(path: Path) -> tuple[int, set[bytes]]:
    """Rows in a cache file and their keys, read with sqlite3 from outside the cache."""
    with sqlite3.connect(path) as db:
        keys = {bytes(k) for (k,) in db.execute("SELECT key FROM verdict_cache")}
    return len(keys), keys


async def test_sqlite_persists_across_caches(tmp_path: Path):
    path = tmp_path / "sub" / "verdicts.sqlite"
    first = VerdictCache(path=path)
    call = Counter(Verdict(score=0.4, variance=0.02, probs={"1": 0.5, "2": 0.5}, raw="1"))
    await first.get_or_call(b"k", call)
    await first.get_or_call(b"bad", Counter(Verdict.failed("timeout")))
    await first.aclose()
    assert file_rows(path) == (1, {b"k"})  # errors were never written

    second = VerdictCache(max_entries=1, path=path)
    again = Counter()
    v, source = await second.get_or_call(b"k", again)
    assert source == "hit" and again.calls == 0
    assert v == Verdict(score=0.4, variance=0.02, probs={"1": 0.5, "2": 0.5}, raw="1")
    # Now promoted to memory: served without touching the file.
    assert (await second.get_or_call(b"k", again))[1] == "hit"
    assert (await second.get_or_call(b"bad", again))[1] == "call"
    await second.aclose()


def test_negative_size_is_refused():
    with pytest.raises(ValueError):
        VerdictCache(max_entries=-1)
    with pytest.raises(ValueError):
        VerdictCache(path="unused.sqlite", file_max_entries=0)


async def test_damaged_sqlite_row_is_a_miss(tmp_path: Path):
    path = tmp_path / "verdicts.sqlite"
    first = VerdictCache(path=path)
    await first.get_or_call(b"k", Counter())
    await first.aclose()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE verdict_cache SET value = x'ff00' WHERE key = x'6b'")
    second = VerdictCache(path=path)
    call = Counter()
    verdict, source = await second.get_or_call(b"k", call)
    assert source == "call" and call.calls == 1 and verdict.ok
    await second.aclose()
    third = VerdictCache(path=path)
    assert (await third.get_or_call(b"k", call))[1] == "hit"  # the damaged row was replaced
    await third.aclose()


async def test_file_keeps_to_its_entry_bound_and_evicts_least_recently_used(tmp_path: Path):
    path = tmp_path / "verdicts.sqlite"
    cache = VerdictCache(max_entries=0, path=path, file_max_entries=100)
    await cache.put(b"keep", Verdict(score=0.9))
    for n in range(500):
        await cache.put(b"k%d" % n, Verdict(score=0.5))
        if n % 50 == 0:
            assert await cache.get(b"keep") is not None  # read: recently used again
        rows, _ = file_rows(path)
        assert rows <= 100
    rows, keys = file_rows(path)
    assert rows >= 90 and b"keep" in keys and b"k499" in keys
    assert b"k0" not in keys and b"k300" not in keys
    await cache.aclose()


async def test_file_keeps_to_its_byte_bound(tmp_path: Path):
    """Verdicts with long raw outputs (as the structured method writes): the file on disk,
    WAL included, stays near the byte bound however much is written."""
    path = tmp_path / "verdicts.sqlite"
    bound = 1024 * 1024
    cache = VerdictCache(max_entries=0, path=path, file_max_bytes=bound)
    raw = "reasoning " * 200
    for n in range(5000):
        await cache.put(b"%d" % n, Verdict(score=n / 5000, raw=raw))
    await cache.aclose()
    on_disk = sum(p.stat().st_size for p in tmp_path.iterdir() if p.name.startswith(path.name))
    rows, keys = file_rows(path)
    assert 0 < rows < 5000 and b"4999" in keys
    assert on_disk <= 1.5 * bound


async def test_unbounded_legacy_table_is_dropped(tmp_path: Path):
    path = tmp_path / "verdicts.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE verdicts (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO verdicts VALUES ('k', '{}')")
    cache = VerdictCache(path=path)
    await cache.put(b"k", Verdict(score=0.5))
    await cache.aclose()
    with sqlite3.connect(path) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert "verdicts" not in tables and "verdict_cache" in tables


async def test_memory_byte_bound_drops_oversized_and_old_verdicts():
    cache = VerdictCache(max_entries=1000, max_bytes=4000)
    await cache.put(b"huge", Verdict(score=0.5, raw="x" * 2000))  # over a generation's share
    assert await cache.get(b"huge") is None
    for n in range(100):
        await cache.put(b"%d" % n, Verdict(score=0.5, raw="y" * 100))
    assert len(cache) < 40
    assert await cache.get(b"99") is not None and await cache.get(b"0") is None


finite = st.floats(allow_nan=False, allow_infinity=False)
texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


@settings(max_examples=200, deadline=None)
@given(
    score=finite,
    variance=finite,
    probs=st.none() | st.dictionaries(texts, finite, max_size=6),
    raw=texts | st.text(max_size=400),
    tokens=st.tuples(st.integers(0, 2**40), st.integers(0, 2**20)),
    latency=finite,
)
def test_codec_round_trips(score, variance, probs, raw, tokens, latency):
    verdict = Verdict(
        score=score,
        variance=variance,
        probs=probs,
        raw=raw,
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        latency_ms=latency,
    )
    assert codec.decode(codec.encode(verdict)) == verdict


def test_codec_binary_form_leaves_out_the_spend_of_the_call():
    # A hit is no call: the cost, cached tokens and requests of the call that made the
    # verdict are not kept in format 1, and a reader that counted them would bill a hit.
    spent = Verdict(0.5, probs={"yes": 0.5, "no": 0.5}, cached_tokens=40, cost=2e-4, calls=3)
    data = codec.encode(spent)
    assert data[0] == 1
    assert codec.decode(data) == Verdict(0.5, probs={"yes": 0.5, "no": 0.5})
    reasoned = replace(spent, reasoning="because")  # format 2 keeps every field
    assert codec.decode(codec.encode(reasoned)) == reasoned


def test_codec_is_compact_and_rejects_damage():
    verdict = Verdict(
        score=0.731,
        variance=0.197,
        probs={"yes": 0.731, "no": 0.269},
        raw="yes",
        prompt_tokens=412,
        completion_tokens=1,
        latency_ms=3.4,
    )
    data = codec.encode(verdict)
    assert len(data) <= 64
    for damaged in (b"", b"\x07" + data[1:], data[:10], data[:40]):
        assert codec.decode(damaged) is None
    failed = Verdict.failed("timeout", kind="timeout")
    assert codec.decode(codec.encode(failed)) == failed
