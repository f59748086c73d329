"""The hosted judges' rate limiter: durations, buckets, headers, and a judge against a fake
provider that enforces RPM and TPM (``tests/fakeprovider.py``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from fakejudge import FakeJudge
from fakeprovider import FakeProvider, Limits
from hypothesis import given
from hypothesis import strategies as st

from rewardsvc.core.pool import JudgeConfig, RateLimit
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.backends import Backend, RetryPolicy
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.ratelimit import RateLimiter, parse_duration

FAST = RetryPolicy(initial_s=0.01, max_s=0.05, jitter_s=0.01)


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("0.5", 0.5),
        ("7", 7.0),
        ("soon", None),
        ("1s junk", None),
        (None, None),
    ],
)
def test_reset_durations_read_as_providers_write_them(text: str | None, seconds: float) -> None:
    got = parse_duration(text)
    assert got == (None if seconds is None else pytest.approx(seconds))


def test_buckets_wait_for_their_refill_and_settle_the_prompt_estimate() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(requests_per_minute=60, tokens_per_minute=600), clock)
    assert limiter.requests is not None and limiter.tokens is not None
    limiter.requests.level, limiter.tokens.level = 0.0, 600.0
    # One request per second: empty now, one second to the next.
    assert limiter._wait_s(10, clock.now) == pytest.approx(1.0)
    clock.now += 1.0
    assert limiter._wait_s(10, clock.now) == 0.0
    # The reply counted 40 prompt tokens where 10 were taken: 30 more are owed.
    limiter.settle(10, 100, 40)
    assert limiter.tokens.level == pytest.approx(570.0)
    assert 0.25 < limiter.ratio < 0.4  # learning 0.4 tokens per character from 0.35


def test_headers_lower_the_buckets_and_a_429_pauses_every_call() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(requests_per_minute=600), clock)
    limiter.observe(
        200, {"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1m"}
    )
    assert limiter.requests is not None and limiter.requests.level == 3.0
    # A higher remaining (a stale or shared view) never raises the local bucket.
    limiter.observe(200, {"x-ratelimit-remaining-requests": "500"})
    assert limiter.requests.level == 3.0
    limiter.observe(429, {"retry-after": "2"})
    assert limiter._wait_s(1, clock.now) == pytest.approx(2.0)
    limiter.observe(429, {"retry-after-ms": "500"})  # a shorter ask does not shorten it
    assert limiter._wait_s(1, clock.now) == pytest.approx(2.0)


def test_limits_not_configured_are_learnt_from_the_provider_headers() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimit(), clock)
    assert limiter.requests is None and limiter.tokens is None
    limiter.observe(
        200,
        {
            "x-ratelimit-limit-tokens": "6000",
            "x-ratelimit-remaining-tokens": "0",
            "x-ratelimit-reset-tokens": "6m0s",
        },
    )
    assert limiter.tokens is not None and limiter.tokens.capacity == 6000
    # 100 tokens per second: 50 tokens wait half a second, not the six minutes to full.
    assert limiter._wait_s(50, clock.now) == pytest.approx(0.5)
    # No limit header: a remaining 0 pauses until the reset.
    limiter.observe(
        200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms"}
    )
    assert limiter.paused_until == pytest.approx(clock.now + 0.02)


async def test_a_wait_past_the_deadline_fails_at_once_as_deadline() -> None:
    limiter = RateLimiter(RateLimit(requests_per_minute=1))
    await limiter.acquire(0, time.monotonic() + 5, "hosted")
    with pytest.raises(Exception) as raised:
        await limiter.acquire(0, time.monotonic() + 5, "hosted")  # the next is a minute away
    assert getattr(raised.value, "kind", None) == "deadline"
    assert "rate limit" in str(raised.value)


def test_a_judge_without_rate_limit_has_no_limiter() -> None:
    config = JudgeConfig(model="m", base_urls=["http://127.0.0.1:9/v1"])
    assert Backend("plain", config).limiter is None


RUBRIC = Rubric.model_validate(
    {"id": "r", "criteria": [{"id": "c", "text": "Is it right?"}], "judges": ["hosted"]}
)


def hosted(url: str, **fields: Any) -> Judge:
    config = JudgeConfig(model="m", base_urls=[url], max_concurrency=32, **fields)
    return Judge("hosted", config, Backend("hosted", config, retry=FAST))


async def test_no_429_reaches_the_engine_when_the_provider_was_nearly_spent() -> None:
    """Someone else had nearly spent the key's minute: the first calls, sent at once, meet
    429s with headers; the limiter takes the provider's word (Retry-After, remaining), every
    call ends with a score, and no 429 comes after that first burst."""
    limits = Limits(rpm=1200, tpm=1_000_000, used=0.99)
    with FakeProvider(limits) as provider:
        judge = hosted(provider.url, rate_limit={"requests_per_minute": 1200})
        rollouts = [Rollout(f"question {i}", f"answer {i}") for i in range(150)]
        verdicts = await asyncio.gather(
            *(judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], r)) for r in rollouts)
        )
        await judge.aclose()
    assert all(v.ok for v in verdicts), {v.error for v in verdicts if not v.ok}
    statuses = [status for _, status, _ in limits.log]
    assert statuses.count(200) == 150
    assert 0 < statuses.count(429) <= 32  # only calls of the first burst were refused
    # Every refusal came before the 32nd success: none once the limiter had the headers.
    assert max(i for i, s in enumerate(statuses) if s == 429) < 32 + statuses.count(429)


async def test_a_429_retry_after_holds_the_other_calls_of_the_judge() -> None:
    with FakeJudge() as fake:
        fake.script.queue.extend(["429"])
        fake.script.retry_after = 0.3
        judge = hosted(fake.url, rate_limit={})
        first = await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], Rollout("q", "a")))
        assert first.ok
        assert judge.backend.limiter is not None
        paused_until = judge.backend.limiter.paused_until
        await judge.aclose()
    # Every call of the judge, not only the refused one, waits until the asked time.
    assert paused_until >= fake.script.request_times[0] + 0.3
    assert fake.script.requests == 2


# ------------------------------------------------------------------ hostile headers (issue 36)

HEADERS = [
    "x-ratelimit-remaining-requests",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-limit-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "retry-after",
    "retry-after-ms",
]
HOSTILE_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["1e9", "inf", "-inf", "nan", "1e-300", "-1e18", "1e400", "99999h", ""]),
    st.sampled_from(["Fri, 31 Dec 9999 23:59:59 GMT", "6m0s", "soon"]),
)
REPLIES = st.lists(
    st.tuples(
        st.sampled_from([200, 429, 503]),
        st.dictionaries(st.sampled_from(HEADERS), HOSTILE_VALUES, max_size=len(HEADERS)),
    ),
    min_size=1,
    max_size=4,
)


BOUND_S = 60.0
"""The judges' default ``retry_after_max_s``: the longest the provider's word holds them."""


@given(
    replies=REPLIES,
    settled=st.lists(st.integers(min_value=0, max_value=2**31 - 1), max_size=3),
    configured=st.booleans(),
)
def test_no_header_holds_the_judge_past_its_bound(
    replies: list[tuple[int, dict[str, str]]], settled: list[int], configured: bool
) -> None:
    """Whatever the provider's headers (and replies' usage) say, a call gets through once
    the bound and its own refill (a minute at most) have passed. Before: a
    ``Retry-After: 1e9``, ``inf``, or ``x-ratelimit-remaining-requests: -1e18`` held every
    call of the judge for the life of the process."""
    clock = Clock()
    configured_limits = RateLimit(requests_per_minute=600, tokens_per_minute=60_000)
    limiter = RateLimiter(configured_limits if configured else RateLimit(), clock)
    for status, headers in replies:
        limiter.observe(status, headers)
        assert limiter.paused_until <= clock.now + BOUND_S
    for prompt_tokens in settled:
        limiter.settle(10, 40, prompt_tokens)
    assert limiter.ratio <= 4.0  # no more tokens per character than UTF-8 has bytes
    clock.now += BOUND_S + 60.0
    assert limiter._wait_s(limiter.estimate({"prompt": "a probe"})[1], clock.now) <= 0.0


@pytest.mark.parametrize(
    ("first", "headers"),
    [
        ("429", {}),  # with Retry-After: 1e9
        ("ok", {"x-ratelimit-remaining-requests": "-1e18", "x-ratelimit-reset-requests": "inf"}),
        (
            "ok",
            {
                "x-ratelimit-limit-requests": "1e-300",
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "1e9",
            },
        ),
    ],
)
async def test_a_hostile_header_holds_a_hosted_judge_at_most_retry_after_max_s(
    first: str, headers: dict[str, str]
) -> None:
    """The calls after a hostile header wait out the judge's ``retry_after_max_s`` and are
    sent; they do not fail at once as ``deadline`` for the life of the process."""
    with FakeJudge() as fake:
        fake.script.queue.extend([first])
        fake.script.retry_after = "1e9"
        judge = hosted(fake.url, rate_limit={"requests_per_minute": 600}, retry_after_max_s=0.3)
        fake.script.reply_headers.append(headers)  # on the first reply only
        verdicts = [
            await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], Rollout(f"q{i}", "a")))
            for i in range(3)
        ]
        await judge.aclose()
    if first == "429":
        # Asked to wait past the bound, the refused call fails rather than waits.
        assert verdicts[0].error_kind == "rate_limited"
        verdicts = verdicts[1:]
    assert all(v.ok for v in verdicts), [v.error for v in verdicts]
    assert fake.script.requests == 3
