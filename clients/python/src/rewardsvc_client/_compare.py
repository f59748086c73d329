"""POST /v1/groups and POST /v1/preferences for ``Client`` and ``AsyncClient`` (mixins).

Groups and pairs are numbered before chunking, as items are for /v1/rewards, so that ids
stay unique across chunks; chunks of ``max_batch`` groups (or pairs) are joined in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rewardsvc_client.types import (
    ComparativeUsage,
    GroupResponse,
    PreferenceResponse,
    RubricRef,
)

if TYPE_CHECKING:
    import httpx

    from rewardsvc_client.client import _Settings


def _numbered(entries: Sequence[Mapping[str, Any]], what: str) -> list[dict[str, Any]]:
    if isinstance(entries, Mapping | str):
        raise TypeError(f"{what} must be a sequence of dicts")
    out = []
    for index, entry in enumerate(entries):
        copy = dict(entry)
        if copy.get("id") is None:
            copy["id"] = str(index)
        out.append(copy)
    return out


def _request(
    rubric: str | Mapping[str, Any],
    key: str,
    chunk: list[dict[str, Any]],
    options: Mapping[str, Any] | None,
    run: str | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"rubric": rubric if isinstance(rubric, str) else dict(rubric)}
    body[key] = chunk
    if options:
        body["options"] = dict(options)
    if run:
        body["run"] = run
    return body


def _parse_groups(response: httpx.Response, expected: int) -> GroupResponse:
    from rewardsvc_client.client import RewardServiceError

    try:
        parsed = GroupResponse.from_json(response.json())
    except (ValueError, AttributeError, TypeError) as exc:
        raise RewardServiceError(
            f"unreadable response from {response.request.url}: {exc}",
            status_code=response.status_code,
        ) from exc
    if len(parsed.results) != expected:
        raise RewardServiceError(
            f"the service returned {len(parsed.results)} results for {expected} groups",
            status_code=response.status_code,
        )
    return parsed


def _parse_preferences(response: httpx.Response, expected: int) -> PreferenceResponse:
    from rewardsvc_client.client import RewardServiceError

    try:
        parsed = PreferenceResponse.from_json(response.json())
    except (ValueError, AttributeError, TypeError) as exc:
        raise RewardServiceError(
            f"unreadable response from {response.request.url}: {exc}",
            status_code=response.status_code,
        ) from exc
    if len(parsed.results) != expected:
        raise RewardServiceError(
            f"the service returned {len(parsed.results)} results for {expected} pairs",
            status_code=response.status_code,
        )
    return parsed


def _join_groups(rubric: str | Mapping[str, Any], parts: list[GroupResponse]) -> GroupResponse:
    if not parts:
        return GroupResponse(
            rubric=RubricRef(id=rubric if isinstance(rubric, str) else "", version=""),
            results=[],
        )
    usage = ComparativeUsage()
    for part in parts:
        usage = usage + part.usage
    results = [r for part in parts for r in part.results]
    return GroupResponse(parts[0].rubric, results, parts[0].method, usage)


def _join_preferences(
    rubric: str | Mapping[str, Any], parts: list[PreferenceResponse]
) -> PreferenceResponse:
    if not parts:
        return PreferenceResponse(
            rubric=RubricRef(id=rubric if isinstance(rubric, str) else "", version=""),
            results=[],
        )
    usage = ComparativeUsage()
    for part in parts:
        usage = usage + part.usage
    results = [r for part in parts for r in part.results]
    return PreferenceResponse(parts[0].rubric, results, usage)


def _chunks(entries: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    return [entries[i : i + size] for i in range(0, len(entries), size)]


class SyncComparative:
    """``groups`` and ``preferences`` of the blocking ``Client``."""

    _s: _Settings

    def _post(self, path: str, body: Mapping[str, Any]) -> httpx.Response:
        raise NotImplementedError

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
        numbered = _numbered(groups, "groups")
        parts = [
            _parse_groups(
                self._post("/v1/groups", _request(rubric, "groups", chunk, options, run)),
                len(chunk),
            )
            for chunk in _chunks(numbered, self._s.max_batch)
        ]
        return _join_groups(rubric, parts)

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
        numbered = _numbered(pairs, "pairs")
        parts = [
            _parse_preferences(
                self._post("/v1/preferences", _request(rubric, "pairs", chunk, options, run)),
                len(chunk),
            )
            for chunk in _chunks(numbered, self._s.max_batch)
        ]
        return _join_preferences(rubric, parts)


class AsyncComparative:
    """``groups`` and ``preferences`` of ``AsyncClient`` (chunks sent concurrently)."""

    _s: _Settings
    _max_concurrent: int

    async def _post(self, path: str, body: Mapping[str, Any]) -> httpx.Response:
        raise NotImplementedError

    async def _chunked(
        self,
        path: str,
        key: str,
        rubric: str | Mapping[str, Any],
        entries: list[dict[str, Any]],
        options: Mapping[str, Any] | None,
        run: str | None,
    ) -> list[tuple[httpx.Response, int]]:
        limit = asyncio.Semaphore(self._max_concurrent)

        async def one(chunk: list[dict[str, Any]]) -> tuple[httpx.Response, int]:
            async with limit:
                response = await self._post(path, _request(rubric, key, chunk, options, run))
            return response, len(chunk)

        return list(await asyncio.gather(*(one(c) for c in _chunks(entries, self._s.max_batch))))

    async def groups(
        self,
        rubric: str | Mapping[str, Any],
        groups: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        run: str | None = None,
    ) -> GroupResponse:
        """Score each group's completions relative to each other; see ``Client.groups``."""
        answers = await self._chunked(
            "/v1/groups", "groups", rubric, _numbered(groups, "groups"), options, run
        )
        return _join_groups(rubric, [_parse_groups(r, n) for r, n in answers])

    async def preferences(
        self,
        rubric: str | Mapping[str, Any],
        pairs: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        run: str | None = None,
    ) -> PreferenceResponse:
        """Pairwise verdicts in both orders; see ``Client.preferences``."""
        answers = await self._chunked(
            "/v1/preferences", "pairs", rubric, _numbered(pairs, "pairs"), options, run
        )
        return _join_preferences(rubric, [_parse_preferences(r, n) for r, n in answers])
