"""HTTP errors: every refusal is an ``ErrorDetail`` body ``{error, message, field}``.

A refusal raised anywhere is a :class:`~rewardsvc.core.errors.ServiceError` carrying its
:class:`~rewardsvc.core.errors.ErrorKind`; :data:`STATUS_OF_KIND` is the one place where a
kind gets its HTTP status (:data:`ORS_STATUS_OF_KIND`, beside it, is ORS's, keyed by the
same kinds). An :class:`ErrorForm` renders a refusal in one protocol's wire form: the app's
one handler of ``ServiceError``, and the middlewares that refuse before routing, answer in
the form of the route the request is for (:func:`form_at`). Invalid rubric documents
(:class:`rewardsvc.library.yamlfile.InvalidFile`) and FastAPI's validation errors become
request errors here, with field paths written by the one formatter of ``core.errors``;
:func:`error_responses` is the one table of documented error responses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from rewardsvc.core.errors import (
    ErrorKind,
    FieldProblem,
    RequestError,
    ServiceError,
    field_problems,
)
from rewardsvc.library.yamlfile import InvalidFile
from rewardsvc.protocol.errors import ErrorDetail

STATUS_OF_KIND: dict[ErrorKind, int] = {
    ErrorKind.INVALID_REQUEST: 422,
    ErrorKind.INVALID_JSON: 422,
    ErrorKind.UNSUPPORTED_MEDIA_TYPE: 415,
    ErrorKind.UNKNOWN_RUBRIC: 404,
    ErrorKind.UNKNOWN_ENVIRONMENT: 404,
    ErrorKind.UNKNOWN_SESSION: 404,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.PAYLOAD_TOO_LARGE: 413,
    ErrorKind.TOO_MANY_ITEMS: 413,
    ErrorKind.TOO_MUCH_WORK: 413,
    ErrorKind.UNAUTHORIZED: 401,
    ErrorKind.FORBIDDEN: 403,
    # Payment Required: not a 429, which clients retry; the run stays refused until its
    # budget is raised (rewardsvc.monitor.spend).
    ErrorKind.BUDGET_EXCEEDED: 402,
    ErrorKind.OVERLOADED: 429,
    ErrorKind.TOO_MANY_SESSIONS: 429,
    ErrorKind.SHUTTING_DOWN: 503,
    ErrorKind.JUDGE_ERROR: 503,
    ErrorKind.UNAVAILABLE: 503,
    ErrorKind.INTERNAL_ERROR: 500,
}
"""The HTTP status of each error kind (the rooms below know kinds, not HTTP)."""

ORS_STATUS_OF_KIND: dict[ErrorKind, int] = {
    **STATUS_OF_KIND,
    # ORS's routes have answered a bad split, index, task or session id 400 since they were
    # added (tests/test_ors.py pins it); a body that does not validate stays FastAPI's 422.
    ErrorKind.INVALID_REQUEST: 400,
}
"""The ORS routes' status of each kind: HTTP's, but for ORS's 400 on a bad request."""

_HEADERS_OF_KIND: dict[ErrorKind, dict[str, str]] = {
    ErrorKind.UNAUTHORIZED: {"WWW-Authenticate": 'Bearer realm="rewardsvc"'},
}


@dataclass(frozen=True)
class ErrorForm:
    """How one protocol's routes answer a refusal: the status of each kind and the body."""

    statuses: Mapping[ErrorKind, int]
    detail_beside: bool = False
    """ORS: the message again as ``detail``, which the ``openreward`` client reads."""

    def body(self, error: ServiceError) -> dict[str, Any]:
        """The ErrorDetail body of ``error`` (with ``detail`` for ORS)."""
        body = ErrorDetail(error=error.kind.value, message=error.message, field=error.field)
        out = body.model_dump()
        if self.detail_beside:
            out["detail"] = out["message"]
        return out

    @staticmethod
    def headers(error: ServiceError) -> dict[str, str] | None:
        """The headers of ``error``'s answer: its kind's, and ``Retry-After`` when it has one."""
        headers = dict(_HEADERS_OF_KIND.get(error.kind, {}))
        if error.retry_after is not None:
            headers["Retry-After"] = str(error.retry_after)
        return headers or None

    def response(self, error: ServiceError) -> JSONResponse:
        """The answer to ``error``: its kind's status, its body and headers."""
        status = self.statuses[error.kind]
        return JSONResponse(self.body(error), status_code=status, headers=self.headers(error))


def one_line(error: ServiceError) -> str:
    """A refusal as one line of text, ``kind: message``: the form of the answers that carry
    text only (a ROLL job's ``errmsg``, an ORS call's ``error`` event)."""
    return f"{error.kind}: {error.message}"


HTTP_FORM = ErrorForm(STATUS_OF_KIND)
"""The native API's and the trainer routes' form (the trainer routes differ in bodies that
are not refusals: OpenRLHF's flagged 0.0, slime's dict; see ``compat``)."""
ORS_FORM = ErrorForm(ORS_STATUS_OF_KIND, detail_beside=True)
"""The ORS routes' form (``rewardsvc.server.ors``)."""


class HttpRefusal(HTTPException):
    """``error`` as an HTTPException in :data:`HTTP_FORM`, for where FastAPI lets only
    HTTPException through (a middleware's ``receive`` while a route parses its body)."""

    def __init__(self, error: ServiceError):
        status, body = STATUS_OF_KIND[error.kind], HTTP_FORM.body(error)
        super().__init__(status, body, HTTP_FORM.headers(error))
        self.error = error


FormOf = Callable[[Scope], "ErrorForm"]
"""Which form answers a request (a middleware's refusal): :func:`form_at` over the app's routes."""


def form_at(scope: Scope, routes: Sequence[BaseRoute] = ()) -> ErrorForm:
    """The form of the route ``scope`` is for: the route that served it, else (a refusal
    before routing, by a middleware) the first of ``routes`` (those with a form of their
    own) it matches. A route class may carry its own ``error_form``; every other route, and
    no route, answers in :data:`HTTP_FORM`."""
    route = scope.get("route")
    if route is None:
        route = next((r for r in routes if r.matches(scope)[0] is Match.FULL), None)
    form = getattr(route, "error_form", HTTP_FORM)
    return form if isinstance(form, ErrorForm) else HTTP_FORM


def request_error_of(error: InvalidFile) -> RequestError:
    """An invalid rubric document as a request error naming every problem's key path, the
    first as the field."""
    return problems_error([FieldProblem(_loc_of(p.path), p.message) for p in error.problems])


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


SCORING_REFUSALS = (
    ErrorKind.UNAUTHORIZED,
    ErrorKind.BUDGET_EXCEEDED,
    ErrorKind.UNKNOWN_RUBRIC,
    ErrorKind.TOO_MANY_ITEMS,
    ErrorKind.INVALID_REQUEST,
    ErrorKind.OVERLOADED,
)
"""What a scoring route documents it refuses with (each kind's status once)."""


def error_responses(*kinds: ErrorKind, trainer: bool = False) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses=`` of a route refusing with ``kinds``: each kind's status
    (from :data:`STATUS_OF_KIND`, in order) with an ErrorDetail, described once per status;
    ``trainer`` words them for the trainer compatibility routes (samples, holds)."""
    text = _TRAINER_DESCRIPTIONS if trainer else _DESCRIPTIONS
    codes = sorted({STATUS_OF_KIND[k] for k in kinds})
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
    """The ErrorDetail body of Starlette's own HTTP errors (no such route, method not
    allowed; an :class:`HttpRefusal` has its own handler)."""
    fallback = "error" if exc.status_code >= 500 else "bad_request"
    error = _STATUS_NAMES.get(exc.status_code, fallback)
    return ErrorDetail(error=error, message=str(exc.detail)).model_dump()


def problems_error(
    problems: list[FieldProblem], kind: ErrorKind = ErrorKind.INVALID_REQUEST
) -> RequestError:
    """One request error for several problems: each once in the message (one with no
    place as the request body's), the first's path as the field."""
    texts: list[str] = []
    for p in problems:
        text = str(p) if p.loc else f"request body: {p.message}"
        if text not in texts:
            texts.append(text)
    first = problems[0].path if problems else ""
    return RequestError("; ".join(texts), kind=kind, field=first or None, problems=problems)


def validation_error_of(errors: Sequence[Mapping[str, Any]], body: Any) -> RequestError:
    """One request error for FastAPI's validation errors, fields written ``items[0].prompt``."""
    for e in errors:
        if e.get("type") == "json_invalid":
            loc = tuple(e.get("loc", ()))
            error = (e.get("ctx") or {}).get("error", "")
            position = loc[1] if len(loc) > 1 else "?"
            message = f"the body is not valid JSON ({error} at character {position})"
            return RequestError(message, kind=ErrorKind.INVALID_JSON)

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
    return problems_error(problems)
