"""Backends against the scripted fake judge: retries, timeouts, Retry-After, breakers, spreading."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from fakejudge import FakeJudge, RecordingObserver, Script, free_port

from rewardsvc.core.observe import NULL_OBSERVER, Observer
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.judges.backends import Backend, RetryPolicy
from rewardsvc.judges.breaker import BreakerPolicy, CircuitBreaker
from rewardsvc.judges.failures import BackendError, parse_retry_after

# Short backoffs keep the tests fast; the policy shape is what is tested.
FAST = RetryPolicy(initial_s=0.01, max_s=0.05, jitter_s=0.01)


def config(*urls: str, **overrides: Any) -> JudgeConfig:
    """A judge config over the given base URLs."""
    fields: dict[str, Any] = {"model": "fake", "base_urls": list(urls), "timeout_s": 5.0}
    fields.update(overrides)
    return JudgeConfig(**fields)


@pytest_asyncio.fixture(loop_scope="function")  # the test's own loop, where the clients live
async def backends() -> AsyncIterator[list[Backend]]:
    """Backends made by a test, closed afterwards."""
    made: list[Backend] = []
    yield made
    for b in made:
        await b.aclose()


def make(
    made: list[Backend],
    cfg: JudgeConfig,
    breaker: BreakerPolicy | None = None,
    name: str = "t",
    clock: Callable[[], float] = time.monotonic,
    observer: Observer = NULL_OBSERVER,
) -> Backend:
    backend = Backend(name, cfg, retry=FAST, breaker=breaker, clock=clock, observer=observer)
    made.append(backend)
    return backend


class Clock:
    """A clock that moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def ask(backend: Backend) -> Any:
    return await backend.chat(messages=[{"role": "user", "content": "hi"}], max_tokens=1)


async def test_ok_call_sends_the_model_in_one_request(
    fake: FakeJudge, backends: list[Backend]
) -> None:
    backend = make(backends, config(fake.url))
    response = await ask(backend)
    assert response["choices"][0]["message"]["content"] in ("yes", "no")
    assert fake.script.bodies[0]["model"] == "fake"
    assert fake.script.requests == 1


async def test_500_then_success_is_retried(fake: FakeJudge, backends: list[Backend]) -> None:
    fake.script.queue.extend(["500", "500"])
    backend = make(backends, config(fake.url, retries=3))
    response = await ask(backend)
    assert response["choices"][0]["message"]["content"]
    assert fake.script.requests == 3


async def test_429_is_retried(fake: FakeJudge, backends: list[Backend]) -> None:
    fake.script.retry_after = 0.0
    fake.script.queue.append("429")
    backend = make(backends, config(fake.url, retries=1))
    await ask(backend)
    assert fake.script.requests == 2


async def test_400_is_not_retried(fake: FakeJudge, backends: list[Backend]) -> None:
    fake.script.default = "400"
    backend = make(backends, config(fake.url, retries=3))
    with pytest.raises(BackendError) as info:
        await ask(backend)
    assert info.value.kind == "http_4xx" and info.value.status == 400
    assert str(info.value).startswith("client_error: HTTP 400")
    assert fake.script.requests == 1
    # A 4xx says nothing about the server's health: the breaker stays closed.
    assert backend.endpoints[0].breaker.state == "closed"


async def test_retries_run_out(fake: FakeJudge, backends: list[Backend]) -> None:
    fake.script.default = "500"
    backend = make(backends, config(fake.url, retries=2), BreakerPolicy(threshold=10))
    with pytest.raises(BackendError) as info:
        await ask(backend)
    assert info.value.kind == "http_5xx" and info.value.status == 500
    assert str(info.value).startswith("server_error: HTTP 500")
    assert fake.script.requests == 3


async def test_timeout(fake: FakeJudge, backends: list[Backend]) -> None:
    fake.script.default = "timeout"
    fake.script.delay_s = 2.0
    backend = make(backends, config(fake.url, timeout_s=0.3, retries=0))
    with pytest.raises(BackendError) as info:
        await ask(backend)
    # "timeout" (not a late success) proves the client gave up before the fake answered.
    assert info.value.kind == "timeout"
    assert fake.script.requests == 1


async def test_timeout_then_success_is_retried(fake: FakeJudge, backends: list[Backend]) -> None:
    fake.script.queue.append("timeout")
    fake.script.delay_s = 2.0
    backend = make(backends, config(fake.url, timeout_s=0.3, retries=1))
    await ask(backend)
    assert fake.script.requests == 2


async def test_retry_after_is_honoured(fake: FakeJudge, backends: list[Backend]) -> None:
    fake.script.queue.append("429")
    fake.script.retry_after = 1.0
    backend = make(backends, config(fake.url, retries=2))
    await ask(backend)
    assert fake.script.requests == 2
    gap = fake.script.request_times[1] - fake.script.request_times[0]
    # The backoff alone would be ~0.01-0.02 s; the header asked for 1 s.
    assert gap >= 1.0


async def test_retry_after_beyond_the_cap_fails_instead_of_waiting(
    fake: FakeJudge, backends: list[Backend]
) -> None:
    fake.script.default = "429"
    fake.script.retry_after = 3600
    backend = make(backends, config(fake.url, retries=3))
    with pytest.raises(BackendError) as info:
        await ask(backend)
    assert info.value.kind == "rate_limited" and info.value.retry_after == 3600
    assert fake.script.requests == 1


async def test_calls_spread_round_robin_over_base_urls(backends: list[Backend]) -> None:
    with FakeJudge() as a, FakeJudge() as b:
        backend = make(backends, config(a.url, b.url))
        for _ in range(10):
            await ask(backend)
        assert (a.script.requests, b.script.requests) == (5, 5)


async def test_concurrency_limit(fake: FakeJudge, backends: list[Backend]) -> None:
    fake.script.default = "timeout"  # answers after delay_s
    fake.script.delay_s = 0.2
    backend = make(backends, config(fake.url, max_concurrency=2, timeout_s=5))
    start = time.monotonic()
    await asyncio.gather(*(ask(backend) for _ in range(6)))
    # 6 calls of 0.2 s, 2 at a time: 3 waves.
    assert time.monotonic() - start >= 0.55
    assert fake.script.requests == 6


async def test_dead_base_url_opens_its_breaker_and_the_other_serves(
    fake: FakeJudge, backends: list[Backend]
) -> None:
    dead_url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    clock = Clock()
    seen = RecordingObserver()
    backend = make(
        backends,
        config(dead_url, fake.url, retries=2),
        BreakerPolicy(threshold=2, cooldown_s=1.0),
        name="breaker-test",
        clock=clock,
        observer=seen,
    )
    dead, live = backend.endpoints
    # Every URL's breaker is reported closed at start, so its metric exists from the start.
    assert seen.breakers == [("breaker-test", dead.url, False), ("breaker-test", live.url, False)]

    for _ in range(6):  # every call succeeds: a failed attempt on the dead URL is retried
        await ask(backend)
    assert fake.script.requests == 6
    assert dead.breaker.state == "open"
    assert dead.calls == 2  # the threshold, then never again while open
    assert seen.breakers[-1] == ("breaker-test", dead.url, True)

    start = time.monotonic()
    for _ in range(5):
        await ask(backend)
    assert dead.calls == 2 and live.calls == 11
    assert time.monotonic() - start < 1.0  # no connection attempts, no backoff

    clock.now += 1.0  # cooldown over: exactly one probe goes to the dead URL
    assert dead.breaker.state == "half_open"
    for _ in range(3):
        await ask(backend)
    assert dead.calls == 3
    assert dead.breaker.state == "open"
    assert fake.script.requests == 14
    assert [b for b in seen.breakers if b[1] == dead.url][-1] == ("breaker-test", dead.url, True)


async def test_every_base_url_down_fails_fast(backends: list[Backend]) -> None:
    dead_url = f"http://127.0.0.1:{free_port()}/v1"
    backend = make(backends, config(dead_url, retries=0), BreakerPolicy(threshold=2, cooldown_s=30))
    for _ in range(2):
        with pytest.raises(BackendError) as info:
            await ask(backend)
        assert info.value.kind == "connection"
    start = time.monotonic()
    with pytest.raises(BackendError) as info:
        await ask(backend)
    assert info.value.kind == "unavailable"
    assert "circuit open" in str(info.value)
    assert time.monotonic() - start < 0.05
    assert backend.endpoints[0].calls == 2


async def test_breaker_half_open_probe_closes_on_success(
    fake: FakeJudge, backends: list[Backend]
) -> None:
    fake.script.default = "500"
    clock = Clock()
    backend = make(
        backends,
        config(fake.url, retries=0),
        BreakerPolicy(threshold=2, cooldown_s=0.5),
        clock=clock,
    )
    for _ in range(2):
        with pytest.raises(BackendError):
            await ask(backend)
    with pytest.raises(BackendError) as info:
        await ask(backend)
    assert info.value.kind == "unavailable"
    assert fake.script.requests == 2  # the open breaker kept the call off the server

    clock.now += 0.6
    fake.script.default = "ok"
    await ask(backend)
    assert backend.endpoints[0].breaker.state == "closed"
    await ask(backend)
    assert fake.script.requests == 4


async def test_retries_that_open_the_breaker_report_the_real_error(
    fake: FakeJudge, backends: list[Backend]
) -> None:
    fake.script.default = "500"
    backend = make(backends, config(fake.url, retries=5), BreakerPolicy(threshold=2))
    with pytest.raises(BackendError) as info:
        await ask(backend)
    assert info.value.kind == "http_5xx" and info.value.label == "server_error"
    assert fake.script.requests == 2


def test_breaker_state_machine() -> None:
    now = [0.0]
    changes: list[str] = []
    b = CircuitBreaker(threshold=2, cooldown_s=10, clock=lambda: now[0], on_change=changes.append)
    assert b.allow()
    b.failure("x")
    assert b.state == "closed"
    b.success()  # a success resets the count of consecutive failures
    b.failure("x")
    assert b.state == "closed"
    b.failure("x")
    assert b.state == "open" and not b.allow()
    now[0] = 10.0
    assert b.state == "half_open"
    assert b.allow()  # the probe
    assert not b.allow()  # only one probe at a time
    b.failure("again")
    assert b.state == "open" and not b.allow()
    now[0] = 20.0
    assert b.allow()
    b.release()  # a cancelled probe frees the slot
    assert b.allow()
    b.success()
    assert b.state == "closed"
    assert changes == ["open", "half_open", "open", "half_open", "closed"]


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    value = parse_retry_after({"retry-after": later})
    assert value is not None and 25 <= value <= 31


def test_script_is_shared_state() -> None:
    # Guard for this file's assumptions about the fake: a fresh script answers ok.
    assert Script().next_behaviour() == "ok"
