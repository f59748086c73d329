"""Property-based fuzzing of the HTTP API from its own OpenAPI document (schemathesis).

The app runs in-process (ASGI, lifespan started by schemathesis) on fake judges, with a
small rubric library. For every operation of the document, schemathesis generates valid
and invalid requests (bodies, path and query parameters); whatever arrives, the service
must never answer 5xx, and every 4xx must be an ``ErrorDetail`` ``{error, message, field}``
whose ``field`` names the part at fault when a field is at fault (a validation error).
Bounded: a few dozen examples per operation, no shrinking database.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fakejudge import FakeJudge
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from test_api_support import fake_pool, settings_for, write_library

from rewardsvc.library.registry import Registry
from rewardsvc.server.app import create_app

MAX_EXAMPLES = 60

ERROR_KEYS = {"error", "message", "field"}


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The app's OpenAPI document, bound to the in-process app on fake judges."""
    folder = tmp_path_factory.mktemp("fuzz")
    with FakeJudge() as primary, FakeJudge() as secondary:
        library = write_library(folder / "rubrics")
        settings_ = settings_for(library, reward_log=folder / "rewards.jsonl", max_items=8)
        registry = Registry(Path(library), fake_pool(primary.url, secondary.url))
        app = create_app(settings_, registry=registry)
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        yield schema


def check_error_body(status: int, body: Any) -> None:
    """A 4xx body is an ErrorDetail; a validation error names its field."""
    assert isinstance(body, dict) and set(body) == ERROR_KEYS, body
    assert isinstance(body["error"], str) and body["error"], body
    assert isinstance(body["message"], str) and body["message"], body
    assert body["field"] is None or isinstance(body["field"], str), body
    if status == 422 and body["error"] == "invalid_request":
        # The whole body can be at fault (not an object); then the message says so.
        assert body["field"] or body["message"].startswith("request body"), body


def check_case(case: Any) -> None:
    """One generated request: no 5xx, and a 4xx explained by an ErrorDetail."""
    response = case.call(timeout=30)
    where = f"{case.as_curl_command()}\n-> {response.status_code} {response.text[:300]}"
    assert response.status_code < 500, where
    if 400 <= response.status_code < 500:
        try:
            body = response.json()
        except ValueError as exc:
            raise AssertionError(f"a {response.status_code} body is not JSON: {where}") from exc
        try:
            check_error_body(response.status_code, body)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {where}") from exc


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_never_fails_and_always_explains(api_schema: Any, mode: GenerationMode) -> None:
    """For every operation of the document: no 5xx for any request it allows (positive) or
    nearly allows (negative), and every 4xx explained."""
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 5, operations
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=True,
            # A failing example is reported as found: shrinking it would take minutes.
            phases=[Phase.explicit, Phase.generate],
        )
        def fuzz(case: Any) -> None:
            check_case(case)

        try:
            fuzz()
        except Unsatisfiable:
            # No invalid request exists for an operation without parameters or body.
            assert mode == GenerationMode.NEGATIVE, operation.path
        except Exception as exc:
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
    assert not failures, "\n\n".join(failures)
