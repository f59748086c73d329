"""HTTP clients of rewardsvc: ``Client`` (blocking) and ``AsyncClient`` (asyncio).

Both speak POST /v1/rewards (and /v1/groups, /v1/preferences: ``_compare.py``). They split
large batches into chunks of ``max_batch`` items and join the results in order, retry
connection failures (httpx transport retries) and answers that mean "try again later" (429,
502, 503, 504, honouring Retry-After), a bounded number of times.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from rewardsvc_client._compare import AsyncComparative, SyncComparative
from rewardsvc_client.types import RewardResponse, RewardResult, RubricRef, Usage

RETRY_STATUSES = frozenset({429, 502, 503, 504})
"""Answers after which the same request is sent again: the service (or a proxy in front of it)
is overloaded or restarting. A request is idempotent: the verdict cache makes a repeat cheap."""

DEFAULT_TIMEOUT = 300.0
"""Seconds. Long on purpose: one batch is many judge calls, queued behind other trainers'."""

DEFAULT_MAX_BATCH = 128

logger = logging.getLogger("rewardsvc_client")


class RewardServiceError(Exception):
    """The service refused the request, or could not be reached after all retries.

    ``status_code`` is None when no HTTP answer came back (connection refused, timeout).
    ``error`` is the service's machine-readable kind (e.g. ``unknown_rubric``,
    ``invalid_request``, ``unauthorized``) and ``field`` the offending field when it says.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        error: str | None = None,
        field: str | None = None,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.error = error
        self.field = field
        self.body = body
        self.retry_after = retry_after


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


def _retry_after_seconds(value: str | None) -> float | None:
    """Parse a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _error_from_response(response: httpx.Response) -> RewardServiceError:
    """Turn a non-2xx answer into an exception carrying the service's error detail."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    error = field = None
    message = ""
    if isinstance(body, Mapping):
        # rewardsvc's ErrorDetail: {error, message, field}
        if "message" in body or "error" in body:
            error = body.get("error") if isinstance(body.get("error"), str) else None
            message = str(body.get("message") or body.get("error") or "")
            field = body.get("field") if isinstance(body.get("field"), str) else None
        elif "detail" in body:  # plain FastAPI/Starlette errors (e.g. 404 for an unknown route)
            message = str(body["detail"])
    else:
        message = str(body)[:500]
    text = f"HTTP {response.status_code} from {response.request.url}"
    if error:
        text += f" ({error})"
    if message:
        text += f": {message}"
    if field:
        text += f" [field: {field}]"
    return RewardServiceError(
        text,
        status_code=response.status_code,
        error=error,
        field=field,
        body=body,
        retry_after=_retry_after_seconds(response.headers.get("Retry-After")),
    )


def _prepare_items(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copy the items and give each one without an id its index in the whole batch.

    The service defaults a missing id to the index within the request; after chunking that
    would restart at 0 in every chunk, so the client numbers items before splitting.
    """
    if isinstance(items, Mapping | str):
        raise TypeError("items must be a sequence of item dicts")
    prepared = []
    for index, item in enumerate(items):
        entry = dict(item)
        if entry.get("id") is None:
            entry["id"] = str(index)
        prepared.append(entry)
    return prepared


def _chunks(items: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _body(
    rubric: str | Mapping[str, Any],
    items: list[dict[str, Any]],
    options: Mapping[str, Any] | None,
    run: str | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"rubric": rubric if isinstance(rubric, str) else dict(rubric)}
    body["items"] = items
    if options:
        body["options"] = dict(options)
    if run:
        body["run"] = run
    return body


def _run_refused(exc: RewardServiceError, body: Mapping[str, Any]) -> bool:
    """A service older than runs refuses the ``run`` field: send without it (the rewards
    then count under its default run), saying so once."""
    if exc.status_code != 422 or exc.field != "run" or "run" not in body:
        return False
    global _warned_run
    if not _warned_run:
        _warned_run = True
        logger.warning("rewardsvc: the service does not take 'run'; sending without it")
    return True


_warned_run = False


def _parse_chunk(response: httpx.Response, expected: int) -> RewardResponse:
    try:
        parsed = RewardResponse.from_json(response.json())
    except (ValueError, AttributeError, TypeError) as exc:
        raise RewardServiceError(
            f"unreadable response from {response.request.url}: {exc}",
            status_code=response.status_code,
        ) from exc
    if len(parsed.results) != expected:
        raise RewardServiceError(
            f"the service returned {len(parsed.results)} results for {expected} items",
            status_code=response.status_code,
        )
    return parsed


def _join(parts: list[RewardResponse]) -> RewardResponse:
    """Concatenate chunk responses in order; usage is summed."""
    results: list[RewardResult] = []
    usage = Usage()
    for part in parts:
        results.extend(part.results)
        usage = usage + part.usage
    rubric = parts[0].rubric if parts else RubricRef(id="", version="")
    return RewardResponse(rubric=rubric, results=results, usage=usage)


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

    def delay(self, response: httpx.Response, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt + 1``."""
        asked = _retry_after_seconds(response.headers.get("Retry-After"))
        if asked is not None:
            return min(asked, self.max_retry_wait)
        # Exponential backoff with jitter, so that many trainer workers do not retry in step.
        return min(self.max_retry_wait, 0.5 * 2**attempt) * random.uniform(0.5, 1.0)


class Client(SyncComparative):
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
            base_url=self._s.base_url,
            headers=self._s.headers,
            timeout=self._s.timeout,
            transport=transport or httpx.HTTPTransport(retries=retries),
        )

    @property
    def base_url(self) -> str:
        """The service URL (without /v1)."""
        return self._s.base_url

    def _post(self, path: str, body: Mapping[str, Any]) -> httpx.Response:
        for attempt in range(self._s.retries + 1):
            try:
                response = self._http.post(path, json=body)
            except httpx.TransportError as exc:
                raise RewardServiceError(f"cannot reach {self._s.base_url}{path}: {exc!r}") from exc
            if response.status_code in RETRY_STATUSES and attempt < self._s.retries:
                time.sleep(self._s.delay(response, attempt))
                continue
            if response.is_success:
                return response
            raise _error_from_response(response)
        raise AssertionError("unreachable")  # pragma: no cover

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
        items without an id get their index as id. Raises RewardServiceError on a 4xx/5xx
        answer or when the service stays unreachable.
        """
        prepared = _prepare_items(items)
        if not prepared:
            return RewardResponse(
                rubric=RubricRef(id=rubric if isinstance(rubric, str) else "", version=""),
                results=[],
            )
        parts = []
        for chunk in _chunks(prepared, self._s.max_batch):
            body = _body(rubric, chunk, options, run)
            try:
                response = self._post("/v1/rewards", body)
            except RewardServiceError as exc:
                if not _run_refused(exc, body):
                    raise
                response = self._post("/v1/rewards", _body(rubric, chunk, options, None))
            parts.append(_parse_chunk(response, len(chunk)))
        return _join(parts)

    def score(
        self,
        rubric: str | Mapping[str, Any],
        prompt: str | Sequence[Mapping[str, Any]],
        completion: str | Sequence[Mapping[str, Any]],
        reference: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> float | None:
        """The reward of one completion, or None when it has none (judge_error, rejected)."""
        item: dict[str, Any] = {"prompt": prompt, "completion": completion}
        if reference is not None:
            item["reference"] = reference
        return self.rewards(rubric, [item], options).results[0].reward

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(AsyncComparative):
    """asyncio client of rewardsvc; same arguments as ``Client``, plus:

    Args:
        max_concurrent_batches: chunks of one ``rewards`` call in flight at once.

    Create and use it inside one event loop (httpx connection pools are bound to their loop).
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
            base_url=self._s.base_url,
            headers=self._s.headers,
            timeout=self._s.timeout,
            transport=transport or httpx.AsyncHTTPTransport(retries=retries),
        )

    @property
    def base_url(self) -> str:
        """The service URL (without /v1)."""
        return self._s.base_url

    async def _post(self, path: str, body: Mapping[str, Any]) -> httpx.Response:
        for attempt in range(self._s.retries + 1):
            try:
                response = await self._http.post(path, json=body)
            except httpx.TransportError as exc:
                raise RewardServiceError(f"cannot reach {self._s.base_url}{path}: {exc!r}") from exc
            if response.status_code in RETRY_STATUSES and attempt < self._s.retries:
                await asyncio.sleep(self._s.delay(response, attempt))
                continue
            if response.is_success:
                return response
            raise _error_from_response(response)
        raise AssertionError("unreachable")  # pragma: no cover

    async def rewards(
        self,
        rubric: str | Mapping[str, Any],
        items: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        run: str | None = None,
    ) -> RewardResponse:
        """Score ``items`` against ``rubric``; see ``Client.rewards``.

        Chunks are sent concurrently (at most ``max_concurrent_batches`` at once) and joined
        in item order.
        """
        prepared = _prepare_items(items)
        if not prepared:
            return RewardResponse(
                rubric=RubricRef(id=rubric if isinstance(rubric, str) else "", version=""),
                results=[],
            )
        limit = asyncio.Semaphore(self._max_concurrent)

        async def one(chunk: list[dict[str, Any]]) -> RewardResponse:
            body = _body(rubric, chunk, options, run)
            async with limit:
                try:
                    response = await self._post("/v1/rewards", body)
                except RewardServiceError as exc:
                    if not _run_refused(exc, body):
                        raise
                    response = await self._post("/v1/rewards", _body(rubric, chunk, options, None))
            return _parse_chunk(response, len(chunk))

        parts = await asyncio.gather(*(one(c) for c in _chunks(prepared, self._s.max_batch)))
        return _join(list(parts))

    async def score(
        self,
        rubric: str | Mapping[str, Any],
        prompt: str | Sequence[Mapping[str, Any]],
        completion: str | Sequence[Mapping[str, Any]],
        reference: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> float | None:
        """The reward of one completion, or None when it has none (judge_error, rejected)."""
        item: dict[str, Any] = {"prompt": prompt, "completion": completion}
        if reference is not None:
            item["reference"] = reference
        return (await self.rewards(rubric, [item], options)).results[0].reward

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
