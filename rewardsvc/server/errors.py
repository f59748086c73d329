"""HTTP errors: every refusal is an ``ErrorDetail`` body ``{error, message, field}``.

Request errors raised below the server (:class:`rewardsvc.core.errors.RequestError`),
invalid rubric documents (:class:`rewardsvc.library.yamlfile.InvalidFile`) and FastAPI's
validation errors all become ``ErrorDetail`` here, with field paths written by the one
formatter of ``core.errors``. :data:`STATUS_OF_KIND` is the one place where a request
error's kind gets its HTTP status; the app's handlers (:func:`request_error_response`,
:func:`invalid_file_response`) answer the errors that routes let through, and
:func:`error_responses` is the one table of documented error responses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import HTTPException
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse

from rewardsvc.core.errors import FieldProblem, RequestError, RequestErrorKind, field_problems
from rewardsvc.library.yamlfile import InvalidFile
from rewardsvc.protocol.errors import ErrorDetail

STATUS_OF_KIND: dict[RequestErrorKind, int] = {
    "invalid_request": 422,
    "unknown_rubric": 404,
    # Payment Required: not a 429, which clients retry; the run stays refused until its
    # budget is raised (rewardsvc.monitor.spend).
    "budget_exceeded": 402,
}
"""The HTTP status of each request error kind (the core knows kinds, not HTTP)."""


class ApiError(HTTPException):
    """An HTTP error rendered as ErrorDetail ``{error, message, field}``."""

    def __init__(
        self,
        status_code: int,
        error: str,
        message: str,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        detail = ErrorDetail(error=error, message=message, field=field)
        super().__init__(status_code=status_code, detail=detail.model_dump(), headers=headers)


def error_response(
    status_code: int,
    error: str,
    message: str,
    field: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """An ErrorDetail JSON response."""
    body = ErrorDetail(error=error, message=message, field=field).model_dump()
    return JSONResponse(body, status_code=status_code, headers=headers)


def request_error_response(error: RequestError) -> JSONResponse:
    """The answer to a request error that reached the app: its kind's status and body."""
    return error_response(STATUS_OF_KIND[error.kind], error.kind, str(error), error.field)


def invalid_file_response(error: InvalidFile) -> JSONResponse:
    """The answer to an invalid rubric document that reached the app: a 422 naming every
    problem's key path, the first as the field."""
    problems = [FieldProblem(_loc_of(p.path), p.message) for p in error.problems]
    detail = problems_detail(problems)
    return JSONResponse(detail.model_dump(), status_code=422)


def _loc_of(path: str) -> tuple[int | str, ...]:
    # A Problem's path is already written (``criteria[2].weight``): one key holds it whole.
    return (path,) if path else ()


_DESCRIPTIONS = {
    401: "Missing or invalid API key.",
    402: "The run's cost reached its budget (error budget_exceeded, field run): new "
    "scoring for it is refused until the budget is raised.",
    403: "The API key's scope does not allow the rubric or the run (``field`` names which).",
    404: "Unknown rubric.",
    413: "Body larger than max_body_bytes, or more items than max_items.",
    422: "Malformed request; `field` names the offending field.",
    429: "Too many items in flight (max_inflight); retry after Retry-After seconds.",
}
_TRAINER_DESCRIPTIONS = {
    **_DESCRIPTIONS,
    413: "Body larger than max_body_bytes, or more samples than max_items.",
    422: "Malformed request; for slime also a sample that cannot be scored (OpenRLHF "
    "gets a flagged 0.0 for it instead).",
    429: "Too many items in flight (max_inflight); see Retry-After.",
    503: "Judges failed for the whole hold; retry (OpenRLHF's last try gets a flagged "
    "0.0 and slime's dict format a reply without `reward` instead).",
}


def error_responses(*codes: int, trainer: bool = False) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses=`` of a route refusing with ``codes``, each an ErrorDetail;
    ``trainer`` words them for the trainer compatibility routes (samples, holds)."""
    text = _TRAINER_DESCRIPTIONS if trainer else _DESCRIPTIONS
    return {c: {"model": ErrorDetail, "description": text[c]} for c in codes}


_STATUS_NAMES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "overloaded",
    503: "unavailable",
}


def error_detail_of(exc: StarletteHTTPException) -> dict[str, Any]:
    """The ErrorDetail body for any HTTPException (ApiError or Starlette's own)."""
    # Starlette types the detail as text; FastAPI's subclass (ApiError) carries any value.
    detail: object = exc.detail
    if isinstance(detail, dict) and "error" in detail:
        return detail
    fallback = "error" if exc.status_code >= 500 else "bad_request"
    error = _STATUS_NAMES.get(exc.status_code, fallback)
    return ErrorDetail(error=error, message=str(exc.detail)).model_dump()


def problems_detail(problems: list[FieldProblem], kind: str = "invalid_request") -> ErrorDetail:
    """One ErrorDetail for several problems: all of them in the message, the first's field."""
    texts: list[str] = []
    for p in problems:
        text = str(p) if p.loc else f"request body: {p.message}"
        if text not in texts:
            texts.append(text)
    first = problems[0].path if problems else ""
    return ErrorDetail(error=kind, message="; ".join(texts), field=first or None)


def format_validation_errors(errors: Sequence[Mapping[str, Any]], body: Any) -> ErrorDetail:
    """One ErrorDetail for FastAPI's validation errors, fields written ``items[0].prompt``."""
    for e in errors:
        if e.get("type") == "json_invalid":
            loc = tuple(e.get("loc", ()))
            error = (e.get("ctx") or {}).get("error", "")
            position = loc[1] if len(loc) > 1 else "?"
            return ErrorDetail(
                error="invalid_json",
                message=f"the body is not valid JSON ({error} at character {position})",
            )

    # FastAPI prefixes body errors with "body"; an error with no location is the body's.
    def in_body(e: Mapping[str, Any]) -> bool:
        loc = tuple(e.get("loc", ()))
        return not loc or loc[0] == "body"

    body_errors = [{**e, "loc": tuple(e.get("loc", ()))[1:]} for e in errors if in_body(e)]
    problems = field_problems(body_errors, body)
    for e in errors:
        loc = tuple(e.get("loc", ()))
        if not in_body(e):
            # Query and path parameters: their name is the field.
            problems.append(
                FieldProblem(
                    tuple(str(p) for p in loc[1:]) or (str(loc[0]),),
                    str(e.get("msg", "invalid")).removeprefix("Value error, "),
                )
            )
    return problems_detail(problems)
