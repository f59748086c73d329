"""What the lean scoring path keeps once and reuses, and what it must still do exactly.

Rubric versions are hashed once per rubric object, rendezvous orders and metric children
are looked up once, the engine waits for the cache's shared calls without a task per
call and the monitor's statistics are computed in fewer passes (the backend's retries,
whose first attempt skips the retry loop, are pinned by ``test_backends.py``). Each test
pins the behaviour that the shortcut must not change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rewardsvc.core.rollout import ItemIn, Rollout, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import routing
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.monitor.runs import Sample, compute_signals
from rewardsvc.monitor.stats import ks_statistic
from rewardsvc.scoring.engine import Engine
from rewardsvc.server import metrics, reading
from rewardsvc.storage.cache import VerdictCache

# ------------------------------------------------------------------ rubric versions


def rubric(**overrides: Any) -> Rubric:
    data: dict[str, Any] = {
        "id": "hot",
        "instructions": "Grade the answer.",
        "criteria": [
            {"id": "correct", "text": "The answer is correct.", "category": "essential"},
            {"id": "clear", "text": "The answer is clear.", "category": "important"},
        ],
        "judges": ["primary"],
    }
    data.update(overrides)
    return Rubric.model_validate(data)


def content_hash(r: Rubric) -> str:
    """The version as defined: a hash of the normalized content, the monitor's settings and
    the objectives aside (neither changes a reward or a verdict)."""
    content = r.model_dump(mode="json", exclude={"monitor", "objectives"})
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def test_a_rubric_version_is_its_content_hash_asked_again_or_not() -> None:
    r = rubric()
    assert r.version() == content_hash(r)
    assert r.version() == r.version() == content_hash(r)
    assert r == rubric(), "the kept version takes no part in equality"
    assert "_content_version" not in r.model_dump()


def test_an_edited_copy_has_the_version_of_its_own_content() -> None:
    r = rubric()
    before = r.version()
    edited = r.model_copy(update={"instructions": "Grade the answer strictly."})
    assert edited.version() == content_hash(edited) != before
    assert r.version() == before
    assert r.model_copy().version() == before
    assert r.model_copy(deep=True).version() == before
    declared = {"quality": {"criteria": ["clear"]}}
    with_objectives = r.model_copy(update={"objectives": declared})
    assert with_objectives.version() == before, "objectives are a view of the same verdicts"


# ------------------------------------------------------------------ routing


def by_weight(key: str, urls: list[str]) -> list[int]:
    return sorted(range(len(urls)), key=lambda i: routing.weight(key, urls[i]), reverse=True)


def test_rendezvous_orders_are_by_weight_and_each_caller_gets_its_own_list() -> None:
    urls = [f"http://10.0.0.{i}:8000/v1" for i in range(4)]
    for key in ("a", "b", "c"):
        first = routing.rendezvous(key, urls)
        assert first == by_weight(key, urls)
        first.reverse()  # a caller's list is its own: the kept order is not touched
        assert routing.rendezvous(key, urls) == by_weight(key, urls)
        assert routing.rendezvous(key, urls[:2]) == by_weight(key, urls[:2])


# ------------------------------------------------------------------ metrics


def test_metric_children_are_the_metrics_own() -> None:
    children = metrics.Children(metrics.JUDGE_ERRORS)
    child = children("hot-path-judge", "timeout")
    assert child is children("hot-path-judge", "timeout")
    assert child is metrics.JUDGE_ERRORS.labels(judge="hot-path-judge", kind="timeout")
    before = child._value.get()
    metrics.PrometheusObserver().judge_call(
        "hot-path-judge", Verdict.failed("slow", kind="timeout", latency_ms=5.0)
    )
    assert child._value.get() - before == 1


def prometheus_own(verdicts: list[tuple[str, Verdict]]) -> CollectorRegistry:
    """What prometheus-client's own counters and histogram record of ``verdicts``."""
    registry = CollectorRegistry()
    calls = Counter(
        "rewardsvc_judge_calls_total", "Judge calls sent, by judge", ["judge"], registry=registry
    )
    latency = Histogram(
        "rewardsvc_judge_latency_seconds",
        "Judge call latency, by judge",
        ["judge"],
        buckets=metrics.LATENCY_BUCKETS,
        registry=registry,
    )
    tokens = Counter(
        "rewardsvc_judge_tokens_total",
        "Judge tokens, by judge and kind",
        ["judge", "kind"],
        registry=registry,
    )
    for judge, v in verdicts:
        calls.labels(judge).inc()
        latency.labels(judge).observe(v.latency_ms / 1000.0)
        tokens.labels(judge, "prompt").inc(v.prompt_tokens)
        tokens.labels(judge, "completion").inc(v.completion_tokens)
        if v.cached_tokens:
            tokens.labels(judge, "cached").inc(v.cached_tokens)
    return registry


def samples(registry: CollectorRegistry) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
    """Every sample of ``registry`` as scraped (a ``_created`` sample's time left out)."""
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items())), 0.0 if s.name.endswith("_created") else s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


verdict_calls = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.builds(
            Verdict,
            score=st.just(1.0),
            latency_ms=st.one_of(
                st.sampled_from([b * 1000 for b in metrics.LATENCY_BUCKETS]),
                st.floats(0, 100_000, allow_nan=False),
            ),
            prompt_tokens=st.integers(0, 10_000),
            completion_tokens=st.integers(0, 10_000),
            cached_tokens=st.sampled_from([0, 0, 5]),
        ),
    ),
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(verdict_calls)
def test_judge_series_scrape_as_prometheus_own_metrics(calls: list[tuple[str, Verdict]]) -> None:
    """The judge call metrics kept as plain numbers scrape as prometheus-client's own
    counters and histogram would: the same series, buckets (a latency on a bound counts in
    that bound's bucket), sums and ``_created`` samples, and a ``cached`` series only once
    a call counted cached tokens."""
    kept = metrics.JudgeCallMetrics()
    registry = CollectorRegistry()
    registry.register(kept)
    observer = metrics.PrometheusObserver(kept)
    for judge, verdict in calls:
        observer.judge_call(judge, verdict)
    assert samples(registry) == samples(prometheus_own(calls))


# ------------------------------------------------------------------ monitor statistics


def ks_by_definition(a: list[float], b: list[float]) -> float:
    """The largest gap between the two empirical distribution functions, at every sample."""
    return max(
        abs(sum(v <= x for v in a) / len(a) - sum(v <= x for v in b) / len(b)) for x in a + b
    )


values = st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1), min_size=1)


@settings(max_examples=300, deadline=None)
@given(values, values)
def test_ks_statistic_is_the_largest_gap_exactly(a: list[float], b: list[float]) -> None:
    assert ks_statistic(a, b) == ks_by_definition(a, b)
    assert ks_statistic(b, a) == ks_statistic(a, b)


def test_ks_statistic_of_nothing_is_none() -> None:
    assert ks_statistic([], [0.5]) is None and ks_statistic([0.5], []) is None


@given(
    score=st.none() | st.floats(0, 1),
    probs=st.none() | st.dictionaries(st.sampled_from("12345"), st.floats(0, 1), max_size=5),
    error=st.none() | st.text(max_size=5),
    tokens=st.integers(0, 10**6),
    latency=st.floats(0, 1e6),
)
def test_a_timed_verdict_is_the_replaced_one_and_the_original_is_untouched(
    score: float | None,
    probs: dict[str, float] | None,
    error: str | None,
    tokens: int,
    latency: float,
) -> None:
    original = Verdict(score, probs=probs, error=error, prompt_tokens=tokens, latency_ms=1.0)
    timed = original.timed(latency)
    assert timed == dataclasses.replace(original, latency_ms=latency)
    assert dataclasses.asdict(timed) == {**dataclasses.asdict(original), "latency_ms": latency}
    assert original.latency_ms == 1.0 and timed is not original
    with pytest.raises(dataclasses.FrozenInstanceError):
        timed.latency_ms = 0.0  # type: ignore[misc]


@given(
    score=st.floats(0, 1),
    variance=st.floats(0, 1),
    probs=st.none() | st.dictionaries(st.sampled_from("12345"), st.floats(0, 1), max_size=5),
    raw=st.text(max_size=5),
    tokens=st.tuples(st.integers(0, 10**6), st.integers(0, 10**3)),
)
def test_an_answered_verdict_is_the_constructed_one(
    score: float,
    variance: float,
    probs: dict[str, float] | None,
    raw: str,
    tokens: tuple[int, int],
) -> None:
    """Every field, the defaults included, as the dataclass's own ``__init__`` sets them,
    and still frozen."""
    answered = Verdict.answered(score, variance, probs, raw, *tokens)
    made = Verdict(
        score, variance, probs, raw, prompt_tokens=tokens[0], completion_tokens=tokens[1]
    )
    assert answered == made and vars(answered) == vars(made)
    with pytest.raises(dataclasses.FrozenInstanceError):
        answered.score = 0.0  # type: ignore[misc]


def test_criterion_pass_rates_count_each_criterion_over_the_window() -> None:
    def sample(*passes: tuple[str, bool]) -> Sample:
        return Sample(0.5, 10, "ok", (), passes, None, None)

    window = [
        sample(("a", True), ("b", False)),
        sample(("a", False)),
        sample(("a", True), ("b", True), ("c", True)),
        sample(),
    ]
    signals = compute_signals(window, [], ["a", "b", "c", "d"])
    assert signals["criterion_pass_rate:a"] == pytest.approx(2 / 3)
    assert signals["criterion_pass_rate:b"] == 0.5
    assert signals["criterion_pass_rate:c"] == 1.0
    assert signals["criterion_pass_rate:d"] is None


# ------------------------------------------------------------------ engine waits


class GatedJudge:
    """Answers once ``gate`` opens; records its calls and the ones cancelled."""

    name = "primary"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.calls = 0
        self.cancelled = 0

    def cache_identity(self) -> str:
        return "gated"

    async def ask(self, question: Any, *, deadline: Any = None) -> Verdict:
        assert isinstance(question, CriterionOnItem), "not asked"
        self.calls += 1
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return Verdict(score=0.75, probs={"yes": 0.75, "no": 0.25})

    async def aclose(self) -> None:
        pass


def items(n: int) -> list[ItemIn]:
    return [ItemIn(f"i{k}", Rollout(prompt="Q?", completion=f"answer {k}")) for k in range(n)]


async def test_calls_past_the_deadline_fail_the_batch_and_still_fill_the_cache() -> None:
    judge = GatedJudge()
    engine = Engine({"primary": judge}, VerdictCache(100))
    late = await engine.score(rubric(), items(2), deadline=time.monotonic() + 0.1)
    assert {i.status for i in late.items} == {"judge_error"}
    kinds = {c.error_kind for i in late.items for c in i.judges["primary"].criteria.values()}
    assert kinds == {"deadline"}
    assert judge.calls == 4 and judge.cancelled == 0, "shared calls go on past one request"
    judge.gate.set()
    await asyncio.sleep(0.05)
    again = await engine.score(rubric(), items(2))
    assert {i.status for i in again.items} == {"ok"}
    assert again.usage.cache_hits == 4 and again.usage.judge_calls == 0
    assert judge.calls == 4


async def test_a_second_batch_joins_the_calls_in_flight() -> None:
    judge = GatedJudge()
    engine = Engine({"primary": judge}, VerdictCache(100))
    first = asyncio.ensure_future(engine.score(rubric(), items(2)))
    second = asyncio.ensure_future(engine.score(rubric(), items(2)))
    await asyncio.sleep(0.05)
    judge.gate.set()
    one, two = await asyncio.gather(first, second)
    assert judge.calls == 4
    assert one.usage.judge_calls == 4 and two.usage.judge_calls == 0
    assert [i.reward for i in one.items] == [i.reward for i in two.items]


async def test_without_the_cache_a_late_batch_cancels_its_own_calls() -> None:
    judge = GatedJudge()
    engine = Engine({"primary": judge}, VerdictCache(100))
    late = await engine.score(
        rubric(), items(1), ScoreOptions(use_cache=False), deadline=time.monotonic() + 0.1
    )
    assert late.items[0].status == "judge_error"
    assert judge.calls == 2 and judge.cancelled == 2


async def test_expire_answers_a_waiting_batch_at_once_and_every_later_one() -> None:
    judge = GatedJudge()
    engine = Engine({"primary": judge}, VerdictCache(100))
    waiting = asyncio.ensure_future(engine.score(rubric(), items(1)))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    engine.expire()
    batch = await asyncio.wait_for(waiting, 1.0)
    assert batch.items[0].status == "judge_error"
    later = await asyncio.wait_for(engine.score(rubric(), items(3)), 1.0)
    assert {i.status for i in later.items} == {"judge_error"}


async def test_a_cancelled_request_leaves_the_shared_calls_running() -> None:
    judge = GatedJudge()
    engine = Engine({"primary": judge}, VerdictCache(100))
    request = asyncio.ensure_future(engine.score(rubric(), items(1)))
    await asyncio.sleep(0.05)
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    assert judge.cancelled == 0
    judge.gate.set()
    await asyncio.sleep(0.05)
    again = await engine.score(rubric(), items(1))
    assert again.usage.cache_hits == 2


def test_only_a_small_batch_without_item_criteria_is_read_on_the_loop() -> None:
    item = {"id": "a", "prompt": "Q?", "completion": "x" * 100}
    assert reading.reads_quickly([item] * 8)
    # Long text, item criteria (each set becomes a rubric), or many small values nested
    # anywhere: read in a worker thread.
    assert not reading.reads_quickly([{**item, "completion": "x" * 20_000}])
    assert not reading.reads_quickly([{**item, "criteria": [{"text": "Names Paris."}]}])
    turns = [{"role": "user", "content": "y"}] * 1000
    assert not reading.reads_quickly([{**item, "prompt": turns}])
    assert not reading.reads_quickly([{**item, "metadata": {"n": list(range(5000))}}])
