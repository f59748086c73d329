"""Errors by class: a refusal raised anywhere carries its kind, and the server's tables alone
give it a status (``rewardsvc.server.errors``); ORS and the trainer routes render the same
kinds in their own forms."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rewardsvc.core.errors import (
    ErrorKind,
    Refused,
    RequestError,
    ServiceError,
    TooLarge,
    Unavailable,
)
from rewardsvc.server.errors import HTTP_FORM, ORS_FORM, ORS_STATUS_OF_KIND, STATUS_OF_KIND
from tests.test_api_support import app_client, fake_pool, settings_for, write_library
from tests.test_ors import write_env

ROOT = Path(__file__).resolve().parents[1]
TABLES = ROOT / "rewardsvc" / "server" / "errors.py"

LITERAL_STATUS = [
    # An error class, HTTPException or a response helper called with a status first.
    re.compile(r"\b\w*(?:Error|Exception|error_response)\(\s*[45]\d\d\b"),
    # A status then an error name, as the first arguments of any call.
    re.compile(r"\(\s*[45]\d\d\s*,\s*\"[a-z_]+\""),
    # A response built with an error status.
    re.compile(r"\bstatus_code\s*=\s*[45]\d\d\b"),
]


def literal_statuses(root: Path) -> list[str]:
    """``path:line: text`` of each place under ``root`` that writes an error status
    outside the tables."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        if path == root / TABLES.relative_to(ROOT / "rewardsvc"):
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in LITERAL_STATUS:
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                place = f"{path.relative_to(root.parent)}:{line}"
                found.setdefault(place, f"{place}: {match.group(0)!r}")
    return sorted(found.values())


def test_no_error_status_is_written_outside_the_tables() -> None:
    assert literal_statuses(ROOT / "rewardsvc") == []


def test_the_grep_finds_what_it_looks_for(tmp_path: Path) -> None:
    room = tmp_path / "rewardsvc"
    room.mkdir()
    (room / "a.py").write_text(
        'raise ApiError(404, "unknown_rubric", m)\n'
        'raise OrsError(\n    400, "invalid_request", m)\n'
        "return JSONResponse(body, status_code=422)\n"
        'raise HTTPException(503, "down")\n'
        "ok = JSONResponse(body, status_code=200 if ready else 503)\n"
    )
    assert len(literal_statuses(room)) == 4


def test_every_kind_has_a_status_in_each_table_and_one_class() -> None:
    assert set(STATUS_OF_KIND) == set(ErrorKind) == set(ORS_STATUS_OF_KIND)
    classes = [ServiceError, RequestError, TooLarge, Refused, Unavailable]
    for kind in ErrorKind:
        assert len([c for c in classes if kind in c.KINDS]) == 1, kind


def test_a_class_refuses_a_kind_not_its_own() -> None:
    with pytest.raises(ValueError, match="Unavailable is not raised as unknown_rubric"):
        Unavailable("x", kind=ErrorKind.UNKNOWN_RUBRIC)
    assert Unavailable("x").kind is ErrorKind.OVERLOADED
    assert isinstance(TooLarge("x"), RequestError)


def test_one_kind_renders_in_each_form_from_its_table() -> None:
    error = RequestError("Invalid split 'dev'", field="split")
    http, ors = HTTP_FORM.response(error), ORS_FORM.response(error)
    assert (http.status_code, ors.status_code) == (422, 400)
    assert HTTP_FORM.body(error) == {
        "error": "invalid_request",
        "message": "Invalid split 'dev'",
        "field": "split",
    }
    assert ORS_FORM.body(error) == {**HTTP_FORM.body(error), "detail": "Invalid split 'dev'"}
    busy = Unavailable("full", retry_after=3)
    assert HTTP_FORM.response(busy).headers["Retry-After"] == "3"
    assert HTTP_FORM.response(busy).status_code == STATUS_OF_KIND[ErrorKind.OVERLOADED] == 429
    unauthorized = Refused("missing API key", kind=ErrorKind.UNAUTHORIZED)
    assert HTTP_FORM.response(unauthorized).headers["WWW-Authenticate"].startswith("Bearer")


def test_every_refusal_is_a_service_error() -> None:
    for cls in (RequestError, TooLarge, Refused, Unavailable):
        assert issubclass(cls, ServiceError)


def test_the_reference_lists_every_kind_with_its_status_and_class() -> None:
    text = (ROOT / "docs" / "reference" / "http-api.md").read_text(encoding="utf-8")
    rows = dict(
        (m.group(1), (int(m.group(2)), m.group(3)))
        for m in re.finditer(r"^\| `([a-z_]+)` \| (\d{3}) \| `(\w+)` \|", text, re.M)
    )
    classes = [ServiceError, RequestError, TooLarge, Refused, Unavailable]
    expected = {
        kind.value: (STATUS_OF_KIND[kind], next(c.__name__ for c in classes if kind in c.KINDS))
        for kind in ErrorKind
    }
    assert rows == expected


@pytest.mark.asyncio(loop_scope="function")
async def test_an_ors_request_refused_before_routing_answers_in_ors_form(tmp_path: Path) -> None:
    # The key check and the body limit refuse before any route runs; an ORS client still
    # gets ORS's form (the ``detail`` it reads), and the native API keeps its own.
    settings = settings_for(
        write_library(tmp_path / "rubrics"),
        ors_environments=[write_env(tmp_path / "env")],
        api_keys="secret",
        max_body_bytes=4096,
    )
    pool = fake_pool("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    async with app_client(settings, pool) as (http, _, _):
        body = {"split": "train", "index": 0, "env_name": "tiny-env"}
        no_key = await http.post("/create", json=body, headers={"X-Session-ID": "s1"})
        assert no_key.status_code == 401, no_key.text
        assert no_key.json()["error"] == "unauthorized"
        assert no_key.json()["detail"] == no_key.json()["message"]
        assert (await http.get("/tiny-env/splits")).json()["detail"].startswith("missing API key")
        too_big = await http.post(
            "/tiny-env/call",
            content=b" " * 5000,
            headers={"Authorization": "Bearer secret", "Content-Type": "application/json"},
        )
        assert too_big.status_code == 413, too_big.text
        assert too_big.json()["error"] == "payload_too_large"
        assert too_big.json()["detail"] == too_big.json()["message"]
        native = await http.post("/v1/rewards", json={})
        assert native.status_code == 401 and "detail" not in native.json()
