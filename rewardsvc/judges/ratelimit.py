"""A hosted judge's rate limits: token buckets for requests and tokens per minute, moved by
the provider's headers.

OpenAI-compatible providers limit each key to so many requests (RPM) and tokens (TPM) per
minute and answer ``429`` past them. A :class:`RateLimiter` keeps one token bucket per
configured limit (``JudgeConfig.rate_limit``): each holds at most a minute's worth and
refills at its rate, a call takes one request and its estimated tokens before it is sent,
and waits (in arrival order) while a bucket is short. The tokens a call takes are its
prompt's estimated tokens plus ``max_tokens`` times ``n`` (what OpenAI counts against TPM);
the estimate comes from the prompt's characters at a tokens-per-character ratio learned
from the replies' ``usage.prompt_tokens``, and each reply settles the difference.

What the provider says moves the buckets, so that its view wins when it knows more (other
replicas or clients using the same key):

- ``x-ratelimit-remaining-requests`` / ``-tokens`` lower a bucket to what remains (the
  bucket then refills at its rate: the next call waits as long as the provider's would);
  a limit not configured is learnt from ``x-ratelimit-limit-requests`` / ``-tokens``, and
  without that either, a remaining 0 pauses sending until ``x-ratelimit-reset-*`` (the
  time until the provider's limit is whole again, Go-style: ``1s``, ``6m0s``, ``20ms``);
- a ``429`` pauses every call of the judge until its ``Retry-After`` (or ``retry-after-ms``,
  else the reset of the exhausted limit), not only the call that got it.

The provider's word is bounded by the judge's ``retry_after_max_s`` (``max_wait_s`` here):
no pause is longer, and no bucket owes more than it refills in that time, so whatever the
headers (or a reply's usage) say, a call waits at most that much beyond its own refill. A
header that is not a finite number is ignored, a negative remaining is read as 0, and a
limit under one a minute is not learnt.

A judge without ``rate_limit`` (vLLM) has no limiter: its calls are sent as before and
only the retried call waits for a ``Retry-After``. ``rate_limit: {}`` (no limits of its
own) honours the provider's headers alone.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from rewardsvc.core.pool import RateLimit
from rewardsvc.judges.failures import BackendError, parse_retry_after
from rewardsvc.judges.imagery import part_texts

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
# Tokens per prompt character before any reply taught better: generous (English runs
# near 0.25), so that the first calls are not under-counted.
_START_RATIO = 0.35
# Weight of each reply in the learned ratio.
_LEARN = 0.2
# Characters a chat message adds beyond its content (role and template tokens).
_MESSAGE_CHARS = 16
# The most tokens per character a reply's usage can teach: a byte-level tokenizer makes at
# most one token per UTF-8 byte, four per character.
_MAX_RATIO = 4.0


def parse_duration(value: str | None) -> float | None:
    """Seconds of a provider's reset header: ``6m0s``, ``1s``, ``20ms``, ``1h2m3.5s`` or a
    plain number of seconds; None when absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def _number(headers: Mapping[str, str], name: str) -> float | None:
    """A header's finite number; None when absent, unreadable, NaN or infinite."""
    value = headers.get(name)
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def prompt_chars(body: Mapping[str, Any]) -> int:
    """The characters of a request's prompt (completion ``prompt`` or chat ``messages``)."""
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return len(prompt)
    total = 0
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        total += _MESSAGE_CHARS + sum(len(t) for t in part_texts(content))
    return total


def output_tokens(body: Mapping[str, Any]) -> int:
    """What a request may generate: ``max_tokens`` times ``n``."""
    return int(body.get("max_tokens") or 0) * int(body.get("n") or 1)


class Bucket:
    """A token bucket: at most ``capacity``, refilled at ``rate`` per second; it may owe
    (go below 0) when a reply settles more tokens than were taken or the provider says
    less remains, but never more than it refills in ``max_owed_s``."""

    def __init__(self, per_minute: float, now: float, max_owed_s: float):
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.level = per_minute
        self.floor = -self.rate * max_owed_s
        self._at = now

    def refill(self, now: float) -> None:
        """Add what accrued since the last refill, up to the capacity."""
        self.level = min(self.capacity, self.level + (now - self._at) * self.rate)
        self._at = now

    def take(self, amount: float) -> None:
        """Take ``amount`` (a negative one gives back), owing at most down to the floor."""
        self.level = min(self.capacity, max(self.floor, self.level - amount))

    def lower_to(self, level: float) -> None:
        """Hold at most ``level`` (not below the floor)."""
        self.level = max(self.floor, min(self.level, level))

    def wait_s(self, amount: float) -> float:
        """Seconds until ``amount`` (at most the capacity) is available, 0 when it is."""
        short = min(amount, self.capacity) - self.level
        return 0.0 if short <= 0 else short / self.rate


class RateLimiter:
    """One judge's RPM/TPM buckets and the provider's pause (see the module doc).

    :meth:`acquire` before each attempt and :meth:`done` after it, :meth:`observe` with
    each reply's headers, :meth:`settle` with each successful reply's usage.
    """

    def __init__(
        self,
        config: RateLimit,
        clock: Callable[[], float] = time.monotonic,
        max_wait_s: float = 60.0,
    ):
        self.clock = clock
        self.max_wait_s = max_wait_s
        """The longest the provider's word holds the calls (the judge's retry_after_max_s)."""
        now = clock()
        rpm, tpm = config.requests_per_minute, config.tokens_per_minute
        self.requests = None if rpm is None else Bucket(rpm, now, max_wait_s)
        self.tokens = None if tpm is None else Bucket(tpm, now, max_wait_s)
        self.paused_until = 0.0
        self.ratio = _START_RATIO
        self.waited_s = 0.0
        """Total time calls spent waiting here (for the bench and the log)."""
        self.in_flight = 0
        """Calls sent and not yet answered: a reply's remaining counts before them."""
        self._queue = asyncio.Lock()

    def estimate(self, body: Mapping[str, Any]) -> tuple[int, int]:
        """``(estimated prompt tokens, tokens to take)`` of a request ``body``."""
        prompt = math.ceil(prompt_chars(body) * self.ratio)
        return prompt, prompt + output_tokens(body)

    def _wait_s(self, tokens: int, now: float) -> float:
        wait = self.paused_until - now
        for bucket, amount in ((self.requests, 1), (self.tokens, tokens)):
            if bucket is not None:
                bucket.refill(now)
                wait = max(wait, bucket.wait_s(amount))
        return wait

    async def acquire(self, tokens: int, deadline: float, judge: str) -> None:
        """Take one request and ``tokens`` once the buckets hold them, calls served in
        arrival order; raises a ``deadline`` :class:`BackendError` when they would not
        before ``deadline`` (a ``time.monotonic()`` instant)."""
        try:
            async with asyncio.timeout(deadline - time.monotonic()):
                await self._queue.acquire()
        except TimeoutError:
            raise _late(judge) from None
        try:
            while (wait := self._wait_s(tokens, self.clock())) > 0:
                if time.monotonic() + wait > deadline:
                    raise _late(judge)
                self.waited_s += wait
                await asyncio.sleep(wait)
            for bucket, amount in ((self.requests, 1), (self.tokens, tokens)):
                if bucket is not None:
                    bucket.take(amount)
            self.in_flight += 1
        finally:
            self._queue.release()

    def done(self) -> None:
        """A call that :meth:`acquire` let through is over (answered or not)."""
        self.in_flight -= 1

    def settle(self, estimated_prompt: int, chars: int, prompt_tokens: int) -> None:
        """A reply counted ``prompt_tokens`` where ``estimated_prompt`` was taken: the
        token bucket takes (or gives back) the difference, and the ratio learns."""
        if prompt_tokens <= 0:
            return
        if self.tokens is not None:
            self.tokens.refill(self.clock())
            self.tokens.take(prompt_tokens - estimated_prompt)
        if chars > 0:
            self.ratio += _LEARN * (min(prompt_tokens / chars, _MAX_RATIO) - self.ratio)

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        """Move the buckets by a reply's rate-limit headers; pause after a 429. A header
        that is not a finite number is ignored, a negative remaining is 0, and no pause
        is longer than ``max_wait_s``."""
        now = self.clock()
        pause = 0.0
        for kind in ("requests", "tokens"):
            remaining = _number(headers, f"x-ratelimit-remaining-{kind}")
            if remaining is None:
                continue
            remaining = max(0.0, remaining)
            bucket = self._bucket(kind, _number(headers, f"x-ratelimit-limit-{kind}"), now)
            if bucket is not None:
                # What remained when the provider took this call, less what went out
                # since (the other calls in flight, one request each).
                ahead = max(0, self.in_flight - 1) if kind == "requests" else 0
                bucket.refill(now)
                bucket.lower_to(remaining - ahead)
            elif remaining < 1:
                # No rate known: wait until the provider's limit is whole again.
                pause = max(pause, parse_duration(headers.get(f"x-ratelimit-reset-{kind}")) or 0)
        if status == 429:
            asked = parse_retry_after(headers)
            pause = max(pause, asked if asked is not None else 1.0)
        if pause > 0:
            self.paused_until = max(self.paused_until, now + min(pause, self.max_wait_s))

    def _bucket(self, kind: str, limit: float | None, now: float) -> Bucket | None:
        """The bucket of ``kind``, made from the provider's ``x-ratelimit-limit-*`` when
        none is configured (``rate_limit: {}``)."""
        bucket = self.requests if kind == "requests" else self.tokens
        # A limit under one a minute is no provider's: it would hold the calls for ever.
        if bucket is None and limit is not None and limit >= 1:
            bucket = Bucket(limit, now, self.max_wait_s)
            if kind == "requests":
                self.requests = bucket
            else:
                self.tokens = bucket
        return bucket


def _late(judge: str) -> BackendError:
    return BackendError(
        "deadline",
        f"judge {judge!r}'s rate limit (requests or tokens per minute) would not let the "
        "call go before its deadline",
    )
