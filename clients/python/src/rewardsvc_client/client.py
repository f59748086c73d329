"""HTTP clients of rewardsvc: ``Client`` (blocking) and ``AsyncClient`` (asyncio).

Both speak POST /v1/rewards, /v1/groups and /v1/preferences. They split large batches into
chunks of ``max_batch`` entries and join the results in order, retry connection failures
(httpx transport retries) and answers that mean "try again later" (429, 502, 503, 504,
honouring Retry-After), a bounded number of times. What is sent and read back is written once,
without I/O, in ``_protocol.py``; the two classes differ only in how they carry it out.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from rewardsvc_client._protocol import (
    GROUPS,
    PREFERENCES,
    RETRY_STATUSES,
    REWARDS,
    Endpoint,
    R,
    Send,
    _retry_after_seconds,
    chunk_calls,
)
from rewardsvc_client._steps import run_async, run_sync
from rewardsvc_client.errors import RewardServiceError, TransportError
from rewardsvc_client.types import GroupResponse, PreferenceResponse, RewardResponse

DEFAULT_TIMEOUT = 300.0
"""Seconds. Long on purpose: one batch is many judge calls, queued behind other trainers'."""

DEFAULT_MAX_BATCH = 128


def _normalize_base_url(base_url: str) -> str:
    """Accept ``http://host:port``, with or without a trailing ``/`` or ``/v1``."""
    url = base_url.strip().rstrip("/")
    if not url:
        raise ValueError("base_url is empty")
    for suffix in ("/v1/rewards", "/v1"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
            break
    return url


def _unreachable(settings: _Settings, path: str, exc: httpx.TransportError) -> TransportError:
    return TransportError(f"cannot reach {settings.base_url}{path}: {exc!r}")


class _Settings:
    """Arguments shared by Client and AsyncClient."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float | httpx.Timeout,
        retries: int,
        max_batch: int,
        max_retry_wait: float,
        headers: Mapping[str, str] | None,
    ) -> None:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self.base_url = _normalize_base_url(base_url)
        self.retries = retries
        self.max_batch = max_batch
        self.max_retry_wait = max_retry_wait
        self.timeout = (
            timeout
            if isinstance(timeout, httpx.Timeout)
            else httpx.Timeout(timeout, connect=min(10.0, timeout))
        )
        self.headers = {"User-Agent": "rewardsvc-client/0.1", **(headers or {})}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def http(self) -> dict[str, Any]:
        """The arguments of the httpx client that carries the requests."""
        return {"base_url": self.base_url, "headers": self.headers, "timeout": self.timeout}

    def delay(self, response: httpx.Response, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt + 1``."""
        asked = _retry_after_seconds(response.headers.get("Retry-After"))
        if asked is not None:
            return min(asked, self.max_retry_wait)
        # Exponential backoff with jitter, so that many trainer workers do not retry in step.
        return min(self.max_retry_wait, 0.5 * 2.0**attempt) * random.uniform(0.5, 1.0)


def _single(
    prompt: str | Sequence[Mapping[str, Any]],
    completion: str | Sequence[Mapping[str, Any]],
    reference: str | None,
) -> list[dict[str, Any]]:
    item: dict[str, Any] = {"prompt": prompt, "completion": completion}
    if reference is not None:
        item["reference"] = reference
    return [item]


class _Base:
    _s: _Settings

    @property
    def base_url(self) -> str:
        """The service URL (without /v1)."""
        return self._s.base_url


class Client(_Base):
    """Blocking client of rewardsvc.

    Args:
        base_url: where the service listens, e.g. ``http://127.0.0.1:8000``.
        api_key: sent as ``Authorization: Bearer <key>`` when the service requires keys.
        timeout: seconds per HTTP request (connect timeout at most 10 s), or an httpx.Timeout.
        retries: retries of a connection failure and, separately, of 429/502/503/504 answers.
        max_batch: items per HTTP request; larger lists are split and the results joined.
        max_retry_wait: cap in seconds on one wait between retries (also caps Retry-After).
        headers: extra HTTP headers.
        transport: an httpx transport to use instead of the default (tests, custom TLS);
            connection retries are then the transport's business.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retries: int = 3,
        max_batch: int = DEFAULT_MAX_BATCH,
        *,
        max_retry_wait: float = 30.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._s = _Settings(base_url, api_key, timeout, retries, max_batch, max_retry_wait, headers)
        self._http = httpx.Client(
            **self._s.http(), transport=transport or httpx.HTTPTransport(retries=retries)
        )

    def _send(self, step: Send) -> httpx.Response:
        try:
            return self._http.post(step.path, json=step.body)
        except httpx.TransportError as exc:
            raise _unreachable(self._s, step.path, exc) from exc

    def _call(
        self,
        endpoint: Endpoint[R],
        rubric: str | Mapping[str, Any],
        entries: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None,
        run: str | None,
    ) -> R:
        calls = chunk_calls(self._s, endpoint, rubric, entries, options, run)
        return endpoint.join(rubric, [run_sync(call, self._send) for call in calls])

    def rewards(
        self,
        rubric: str | Mapping[str, Any],
        items: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        run: str | None = None,
    ) -> RewardResponse:
        """Score ``items`` against ``rubric`` (a library rubric id or an inline rubric dict).

        ``run`` names the training run the rewards belong to (the service keeps its
        statistics per rubric and run); None counts them under the service's default run.

        Items are dicts with ``prompt``, ``completion`` and optionally ``id``, ``reference``,
        ``metadata`` (see ``rewardsvc_client.types.Item``). Results come back in item order;
        items without an id get their index as id. Raises ``RefusedError`` on a 4xx/5xx
        answer and ``TransportError`` when the service stays unreachable (both
        ``RewardServiceError``: ``rewardsvc_client.errors``).
        """
        return self._call(REWARDS, rubric, items, options, run)

    def groups(
        self,
        rubric: str | Mapping[str, Any],
        groups: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        run: str | None = None,
    ) -> GroupResponse:
        """Score each group's completions relative to each other (POST /v1/groups).

        ``groups`` are dicts ``{"prompt", "completions": [...], "id"?, "reference"?}``;
        ``options`` e.g. ``{"method": "pairwise", "tournament": "all_pairs", "orders": 2}``.
        Each result's ``rewards`` are in completion order (None where a completion has none);
        groups without an id get their index. Raises RewardServiceError like ``rewards``.
        """
        return self._call(GROUPS, rubric, groups, options, run)

    def preferences(
        self,
        rubric: str | Mapping[str, Any],
        pairs: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        run: str | None = None,
    ) -> PreferenceResponse:
        """Which of two completions is better, asked in both orders (POST /v1/preferences).

        ``pairs`` are dicts ``{"prompt", "a", "b", "id"?, "reference"?}``; each result has
        ``p_a_better``, ``orders`` (``ab``, ``ba``), ``consistent`` and ``label``.
        """
        return self._call(PREFERENCES, rubric, pairs, options, run)

    def score(
        self,
        rubric: str | Mapping[str, Any],
        prompt: str | Sequence[Mapping[str, Any]],
        completion: str | Sequence[Mapping[str, Any]],
        reference: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> float | None:
        """The reward of one completion, or None when it has none (judge_error, rejected)."""
        return self.rewards(rubric, _single(prompt, completion, reference), options).rewards[0]

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Base):
    """asyncio client of rewardsvc; same arguments as ``Client``, plus:

    Args:
        max_concurrent_batches: chunks of one call in flight at once.

    Create and use it inside one event loop (httpx connection pools are bound to their loop).
    Its methods are those of ``Client``, awaited; chunks are sent concurrently and joined in
    order.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retries: int = 3,
        max_batch: int = DEFAULT_MAX_BATCH,
        *,
        max_concurrent_batches: int = 4,
        max_retry_wait: float = 30.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if max_concurrent_batches < 1:
            raise ValueError("max_concurrent_batches must be >= 1")
        self._s = _Settings(base_url, api_key, timeout, retries, max_batch, max_retry_wait, headers)
        self._max_concurrent = max_concurrent_batches
        self._http = httpx.AsyncClient(
            **self._s.http(), transport=transport or httpx.AsyncHTTPTransport(retries=retries)
        )

    async def _send(self, step: Send) -> httpx.Response:
        try:
            return await self._http.post(step.path, json=step.body)
        except httpx.TransportError as exc:
            raise _unreachable(self._s, step.path, exc) from exc

    async def _call(
        self,
        endpoint: Endpoint[R],
        rubric: str | Mapping[str, Any],
        entries: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None,
        run: str | None,
    ) -> R:
        limit = asyncio.Semaphore(self._max_concurrent)

        async def one(call: Any) -> R:
            async with limit:
                return await run_async(call, self._send)

        calls = chunk_calls(self._s, endpoint, rubric, entries, options, run)
        return endpoint.join(rubric, await asyncio.gather(*(one(call) for call in calls)))

    async def rewards(
        self,
        rubric: str | Mapping[str, Any],
        items: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        run: str | None = None,
    ) -> RewardResponse:
        """Score ``items`` against ``rubric``; see ``Client.rewards``."""
        return await self._call(REWARDS, rubric, items, options, run)

    async def groups(
        self,
        rubric: str | Mapping[str, Any],
        groups: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        run: str | None = None,
    ) -> GroupResponse:
        """Score each group's completions relative to each other; see ``Client.groups``."""
        return await self._call(GROUPS, rubric, groups, options, run)

    async def preferences(
        self,
        rubric: str | Mapping[str, Any],
        pairs: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        run: str | None = None,
    ) -> PreferenceResponse:
        """Pairwise verdicts in both orders; see ``Client.preferences``."""
        return await self._call(PREFERENCES, rubric, pairs, options, run)

    async def score(
        self,
        rubric: str | Mapping[str, Any],
        prompt: str | Sequence[Mapping[str, Any]],
        completion: str | Sequence[Mapping[str, Any]],
        reference: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> float | None:
        """The reward of one completion, or None when it has none (judge_error, rejected)."""
        items = _single(prompt, completion, reference)
        return (await self.rewards(rubric, items, options)).rewards[0]

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = [
    "DEFAULT_MAX_BATCH",
    "DEFAULT_TIMEOUT",
    "RETRY_STATUSES",
    "AsyncClient",
    "Client",
    "RewardServiceError",
]
