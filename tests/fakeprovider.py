"""A fake hosted OpenAI-compatible provider that enforces RPM and TPM, for the rate limiter's
tests and bench.

It answers ``/v1/chat/completions`` like ``tests/fakejudge.py`` (logprobs over the allowed
choices) and keeps two token buckets, as providers do: requests per minute and tokens per
minute, each holding a minute's worth and refilling continuously. A request is charged one
request and its prompt tokens plus ``max_tokens`` times ``n`` (OpenAI's rule); its prompt
tokens are its messages' characters over ``chars_per_token``. Past either limit it answers
``429`` (and charges nothing). Every answer carries OpenAI's headers:
``x-ratelimit-limit-*``, ``x-ratelimit-remaining-*`` and ``x-ratelimit-reset-*`` (time until
the bucket is full, Go-style: ``1s``, ``6m0s``, ``20ms``) for requests and tokens, and a 429
also ``Retry-After`` (whole seconds) unless ``retry_after`` is off. Replies report
``usage.prompt_tokens_details.cached_tokens`` (``cached_tokens``, at most the prompt's).

``prompt_tokens`` fixes the count replies report (cost tests). ``used`` (0..1) starts both
buckets that much spent, as when someone else used the key just before. ``log`` keeps
``(time, status, tokens charged)`` of every request.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fakejudge import _choices, _distribution, _reply, free_port
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response


def go_duration(seconds: float) -> str:
    """Seconds as a Go duration string, as OpenAI writes its reset headers."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    if minutes >= 1:
        return f"{int(minutes)}m{rest:.3g}s"
    return f"{rest:.3g}s"


@dataclass
class Limits:
    """What the fake provider allows and answers."""

    rpm: float
    tpm: float
    chars_per_token: float = 4.0
    cached_tokens: int = 0
    prompt_tokens: int | None = None
    """Report this many prompt tokens in every reply (fixed counts for cost tests)."""
    used: float = 0.0
    retry_after: bool = True
    log: list[tuple[float, int, int]] = field(default_factory=list)


class _Bucket:
    def __init__(self, per_minute: float, used: float) -> None:
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.level = per_minute * (1.0 - used)
        self.at = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now

    def headers(self, kind: str) -> dict[str, str]:
        full_in = (self.capacity - self.level) / self.rate
        return {
            f"x-ratelimit-limit-{kind}": str(int(self.capacity)),
            f"x-ratelimit-remaining-{kind}": str(max(0, math.floor(self.level))),
            f"x-ratelimit-reset-{kind}": go_duration(full_in),
        }


def prompt_tokens(body: dict[str, Any], chars_per_token: float) -> int:
    """The fake's own token count of a chat request's messages."""
    chars = sum(len(m.get("content") or "") for m in body.get("messages") or ())
    return max(1, math.ceil(chars / chars_per_token))


def make_app(limits: Limits) -> FastAPI:
    """The provider's app, enforcing ``limits``."""
    app = FastAPI()
    requests = _Bucket(limits.rpm, limits.used)
    tokens = _Bucket(limits.tpm, limits.used)
    lock = threading.Lock()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        body = await request.json()
        prompt = prompt_tokens(body, limits.chars_per_token)
        charge = prompt + int(body.get("max_tokens") or 0) * int(body.get("n") or 1)
        with lock:
            now = time.monotonic()
            requests.refill(now)
            tokens.refill(now)
            allowed = requests.level >= 1 and tokens.level >= charge
            if allowed:
                requests.level -= 1
                tokens.level -= charge
            headers = {**requests.headers("requests"), **tokens.headers("tokens")}
            limits.log.append((now, 200 if allowed else 429, charge if allowed else 0))
        if not allowed:
            wait = max((1 - requests.level) / requests.rate, (charge - tokens.level) / tokens.rate)
            if limits.retry_after:
                headers["retry-after"] = str(max(1, math.ceil(wait)))
            error = {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}
            return JSONResponse({"error": error}, status_code=429, headers=headers)
        dist = _distribution(_choices(body), 0.8)
        top = max(dist, key=lambda t: dist[t])
        reply = _reply(body, True, [top], dist if body.get("logprobs") else None)
        prompt = limits.prompt_tokens or prompt
        cached = min(limits.cached_tokens, prompt)
        reply["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": 1,
            "total_tokens": prompt + 1,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        return JSONResponse(reply, headers=headers)

    return app


class FakeProvider:
    """The provider in a background thread: ``with FakeProvider(limits) as p: p.url``."""

    def __init__(self, limits: Limits, port: int | None = None) -> None:
        self.limits = limits
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        config = uvicorn.Config(
            make_app(limits), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> FakeProvider:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake provider did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
