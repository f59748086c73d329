"""Request errors are mapped to HTTP once: the core's RequestError knows only its kind, the
server's one table gives the status, and the app's handlers answer whatever a route lets
through with the same ErrorDetail body the routes answered by hand before."""

from __future__ import annotations

import contextlib
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from rewardsvc.core.errors import ErrorKind, FieldProblem, RequestError
from rewardsvc.library.yamlfile import InvalidFile, Problem
from rewardsvc.protocol.rewards import RewardOptions, RewardResponse
from rewardsvc.server.errors import STATUS_OF_KIND
from rewardsvc.server.state import running_service
from tests.test_api_support import app_client, fake_pool, settings_for, write_library


def test_the_core_request_error_knows_no_http_status() -> None:
    error = RequestError.at(("items", 0, "prompt"), "must not be empty")
    assert not hasattr(error, "status")
    with pytest.raises(TypeError):
        RequestError("x", kind=ErrorKind.INVALID_REQUEST, status=404)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        RequestError.at((), "x", "invalid_request", 404)  # type: ignore[call-arg]


def test_every_kind_maps_to_the_status_the_routes_answered() -> None:
    assert set(STATUS_OF_KIND) == set(ErrorKind)
    # invalid_request was every RequestError's 422; unknown_rubric the inline recipe's 404;
    # budget_exceeded (a run past its budget) is 402, which no client retries.
    assert STATUS_OF_KIND[ErrorKind.INVALID_REQUEST] == 422
    assert STATUS_OF_KIND[ErrorKind.UNKNOWN_RUBRIC] == 404
    assert STATUS_OF_KIND[ErrorKind.BUDGET_EXCEEDED] == 402


def _raise(error: Exception) -> Any:
    async def route() -> None:
        raise error

    return route


class _RefusingScorer:
    """A scorer whose scoring raises a RequestError (as the core does), for the compat routes."""

    async def score_rubric(
        self, rubric_id: str, items: Any, options: RewardOptions, *_: Any, **__: Any
    ) -> RewardResponse:
        raise RequestError.at(("items", 0, "completion"), "must not be empty")

    def hold(self, value: Any, what: str) -> Any:
        return types.SimpleNamespace(release=lambda: None)

    def held(self, holding: Any) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext(types.SimpleNamespace(record=lambda: None))

    async def pause(self, seconds: float) -> bool:
        return False


@pytest_asyncio.fixture(loop_scope="function")
async def running(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, FastAPI]]:
    settings = settings_for(write_library(tmp_path / "rubrics"))
    pool = fake_pool("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    async with app_client(settings, pool) as (http, app, _):
        yield http, app


@pytest.mark.asyncio(loop_scope="function")
async def test_a_request_error_from_a_route_reaches_the_client_as_its_4xx(
    running: tuple[httpx.AsyncClient, FastAPI],
) -> None:
    http, app = running
    invalid = RequestError.at(("items", 0, "prompt"), "must not be empty")
    problem = FieldProblem(("rubric",), "no rubric 'x'")
    unknown = RequestError.of([problem], ErrorKind.UNKNOWN_RUBRIC)
    app.add_api_route("/test/invalid", _raise(invalid), methods=["POST"])
    app.add_api_route("/test/unknown", _raise(unknown), methods=["POST"])
    reply = await http.post("/test/invalid")
    assert reply.status_code == 422
    assert reply.json() == {
        "error": "invalid_request",
        "message": "items[0].prompt: must not be empty",
        "field": "items[0].prompt",
    }
    reply = await http.post("/test/unknown")
    assert reply.status_code == 404
    assert reply.json() == {
        "error": "unknown_rubric",
        "message": "rubric: no rubric 'x'",
        "field": "rubric",
    }


@pytest.mark.asyncio(loop_scope="function")
async def test_an_invalid_file_from_a_route_is_a_422_naming_its_fields(
    running: tuple[httpx.AsyncClient, FastAPI],
) -> None:
    http, app = running
    invalid = InvalidFile(
        [
            Problem("<request>", 4, "criteria[2].weight", "must be positive"),
            Problem("<request>", 1, "", "no criteria"),
        ]
    )
    app.add_api_route("/test/file", _raise(invalid), methods=["POST"])
    reply = await http.post("/test/file")
    assert reply.status_code == 422
    assert reply.json() == {
        "error": "invalid_request",
        "message": "criteria[2].weight: must be positive; request body: no criteria",
        "field": "criteria[2].weight",
    }


@pytest.mark.asyncio(loop_scope="function")
async def test_the_validate_route_answers_as_before(
    running: tuple[httpx.AsyncClient, FastAPI],
) -> None:
    http, _ = running
    reply = await http.post(
        "/v1/rubrics/validate", content=b"\xff\xfe", headers={"content-type": "text/yaml"}
    )
    assert reply.status_code == 422
    assert reply.json() == {
        "error": "invalid_request",
        "message": "the body is not UTF-8 text",
        "field": None,
    }
    reply = await http.post(
        "/v1/rubrics/validate", json={"yaml": 3}, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 422
    assert reply.json() == {
        "error": "invalid_request",
        "message": "yaml: Input should be a valid string",
        "field": "yaml",
    }
    reply = await http.post(
        "/v1/rubrics/validate", content=b"{", headers={"content-type": "application/json"}
    )
    assert reply.status_code == 422
    assert reply.json()["error"] == "invalid_json"


@pytest.mark.asyncio(loop_scope="function")
async def test_an_inline_recipe_naming_an_unknown_rubric_is_still_a_404(
    running: tuple[httpx.AsyncClient, FastAPI],
) -> None:
    http, _ = running
    recipe = {"kind": "recipe", "id": "r", "components": [{"id": "c", "rubric": "nope"}]}
    body = {"rubric": recipe, "items": [{"id": "a", "prompt": "p", "completion": "c"}]}
    reply = await http.post("/v1/rewards", json=body)
    assert reply.status_code == 404, reply.text
    assert reply.json() == {
        "error": "unknown_rubric",
        "message": "rubric.components[0].rubric: unknown rubric 'nope'",
        "field": "rubric.components[0].rubric",
    }


@pytest.mark.asyncio(loop_scope="function")
async def test_a_request_error_below_a_trainer_route_is_answered_and_counts_a_try(
    running: tuple[httpx.AsyncClient, FastAPI],
) -> None:
    http, app = running
    app.dependency_overrides[running_service] = _RefusingScorer
    reply = await http.post("/slime/tiny", json={"prompt": "p", "response": "", "label": None})
    assert reply.status_code == 422
    assert reply.json() == {
        "error": "invalid_request",
        "message": "items[0].completion: must not be empty",
        "field": "items[0].completion",
    }
    # The refusal left its token: the trainer's retry of this body is its second try.
    assert len(app.state.compat_attempts.refusals) == 1
