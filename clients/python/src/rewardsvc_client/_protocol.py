"""What one call of the API sends and reads back, without I/O (``Client`` and ``AsyncClient``
drive it: ``rewardsvc_client._steps``).

POST /v1/rewards, /v1/groups and /v1/preferences work alike: the entries (items, groups,
pairs) are numbered before chunking, so that ids stay unique across chunks; each chunk of
``max_batch`` entries is one request, sent again after answers that mean "try again later"
(429, 502, 503, 504, honouring Retry-After) a bounded number of times; the chunks' answers are
joined in order, usage summed.
"""

from __future__ import annotations

import dataclasses
import email.utils
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from rewardsvc_client._steps import Steps
from rewardsvc_client.errors import (
    BudgetExceededError,
    RefusedError,
    TransportError,
)
from rewardsvc_client.types import GroupResponse, PreferenceResponse, RewardResponse

if TYPE_CHECKING:
    from rewardsvc_client.client import _Settings

RETRY_STATUSES = frozenset({429, 502, 503, 504})
"""Answers after which the same request is sent again: the service (or a proxy in front of it)
is overloaded or restarting. A request is idempotent: the verdict cache makes a repeat cheap."""

logger = logging.getLogger("rewardsvc_client")


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


def _error_from_response(response: httpx.Response) -> RefusedError:
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
    kind = BudgetExceededError if error == "budget_exceeded" else RefusedError
    return kind(
        text,
        status_code=response.status_code,
        error=error,
        field=field,
        body=body,
        retry_after=_retry_after_seconds(response.headers.get("Retry-After")),
    )


R = TypeVar("R", RewardResponse, GroupResponse, PreferenceResponse)


@dataclasses.dataclass(frozen=True)
class Endpoint(Generic[R]):
    """One POST route: where, under which key its entries go, and how its answer reads."""

    path: str
    key: str
    """The request's list of entries (``items``, ``groups``, ``pairs``), also their name."""
    response: Callable[[Mapping[str, Any]], R]
    drop_refused_run: bool = False
    """Send again without ``run`` when the service refuses it (one older than runs)."""

    def numbered(self, entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Copy the entries and give each one without an id its index in the whole batch.

        The service defaults a missing id to the index within the request; after chunking that
        would restart at 0 in every chunk, so the client numbers entries before splitting.
        """
        if isinstance(entries, Mapping | str):
            raise TypeError(f"{self.key} must be a sequence of dicts")
        out = []
        for index, entry in enumerate(entries):
            copy = dict(entry)
            if copy.get("id") is None:
                copy["id"] = str(index)
            out.append(copy)
        return out

    def body(
        self,
        rubric: str | Mapping[str, Any],
        chunk: list[dict[str, Any]],
        options: Mapping[str, Any] | None,
        run: str | None,
    ) -> dict[str, Any]:
        """The JSON body of one chunk's request."""
        body: dict[str, Any] = {"rubric": rubric if isinstance(rubric, str) else dict(rubric)}
        body[self.key] = chunk
        if options:
            body["options"] = dict(options)
        if run:
            body["run"] = run
        return body

    def parse(self, response: httpx.Response, expected: int) -> R:
        """One chunk's answer, which must hold one result per entry sent."""
        try:
            parsed = self.response(response.json())
        except (ValueError, AttributeError, TypeError) as exc:
            raise TransportError(
                f"unreadable response from {response.request.url}: {exc}",
                status_code=response.status_code,
            ) from exc
        if len(parsed.results) != expected:
            raise TransportError(
                f"the service returned {len(parsed.results)} results for {expected} {self.key}",
                status_code=response.status_code,
            )
        return parsed

    def join(self, rubric: str | Mapping[str, Any], parts: Sequence[R]) -> R:
        """The chunks' answers as one, in order, usage summed (an empty one for no chunks)."""
        if not parts:
            return self.response({"rubric": {"id": rubric if isinstance(rubric, str) else ""}})
        usage = parts[0].usage
        for part in parts[1:]:
            usage = usage + part.usage
        results = [result for part in parts for result in part.results]
        return dataclasses.replace(parts[0], results=results, usage=usage)


REWARDS = Endpoint("/v1/rewards", "items", RewardResponse.from_json, drop_refused_run=True)
GROUPS = Endpoint("/v1/groups", "groups", GroupResponse.from_json)
PREFERENCES = Endpoint("/v1/preferences", "pairs", PreferenceResponse.from_json)


@dataclasses.dataclass(frozen=True)
class Send:
    """Step: POST ``body`` to ``path``; the ``httpx.Response`` comes back."""

    path: str
    body: Mapping[str, Any]


def chunk_calls(
    settings: _Settings,
    endpoint: Endpoint[R],
    rubric: str | Mapping[str, Any],
    entries: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None,
    run: str | None,
) -> list[Steps[Send, R]]:
    """One exchange per chunk of ``max_batch`` entries, each ending in its parsed answer."""
    numbered = endpoint.numbered(entries)
    size = settings.max_batch
    chunks = [numbered[i : i + size] for i in range(0, len(numbered), size)]
    return [
        _exchange(settings, endpoint, endpoint.body(rubric, chunk, options, run), len(chunk))
        for chunk in chunks
    ]


def _exchange(
    settings: _Settings, endpoint: Endpoint[R], body: dict[str, Any], expected: int
) -> Steps[Send, R]:
    try:
        response = yield from _post(settings, endpoint.path, body)
    except RefusedError as exc:
        if not (endpoint.drop_refused_run and _run_refused(exc, body)):
            raise
        without_run = {key: value for key, value in body.items() if key != "run"}
        response = yield from _post(settings, endpoint.path, without_run)
    return endpoint.parse(response, expected)


def _post(settings: _Settings, path: str, body: Mapping[str, Any]) -> Steps[Send, httpx.Response]:
    for attempt in range(settings.retries + 1):
        response: httpx.Response = yield Send(path, body)
        if response.status_code in RETRY_STATUSES and attempt < settings.retries:
            yield settings.delay(response, attempt)
            continue
        if response.is_success:
            return response
        raise _error_from_response(response)
    raise AssertionError("unreachable")  # pragma: no cover


def _run_refused(exc: RefusedError, body: Mapping[str, Any]) -> bool:
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
