"""The native API routes: ``POST /v1/rewards`` and the rubric library
(``GET /v1/rubrics``, ``GET /v1/rubrics/{id}``, ``POST /v1/rubrics/validate``), which lists
and shows rubrics, constitutions, recipes and routing tables alike (one id space)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import ValidationError

from rewardsvc.application.targets import library_target
from rewardsvc.core.errors import ErrorKind, RequestError, TooLarge
from rewardsvc.core.recipe import Recipe, RoutingTable
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.registry import Registry, Served
from rewardsvc.library.yamlfile import InvalidFile, Problem
from rewardsvc.protocol.rewards import RewardRequest, RewardResponse
from rewardsvc.protocol.rubrics import (
    FileProblem,
    ProblemOut,
    RubricDetail,
    RubricList,
    RubricSummary,
    ValidateRequest,
    ValidationReport,
)
from rewardsvc.server.access import can_read_rubric
from rewardsvc.server.errors import SCORING_REFUSALS, error_responses
from rewardsvc.server.service import ServiceDep


def _problems_out(problems: list[Problem]) -> list[ProblemOut]:
    return [ProblemOut(line=p.line, path=p.path, message=p.message) for p in problems]


v1 = APIRouter(prefix="/v1")


@v1.post(
    "/rewards",
    response_model=RewardResponse,
    responses=error_responses(*SCORING_REFUSALS),
    tags=["rewards"],
    summary="Score a batch of rollouts against a rubric",
)
async def rewards(body: RewardRequest, service: ServiceDep) -> Response:
    """Rewards for every item, in request order.

    ``rubric`` is a library rubric id or an inline rubric object (validated against the
    judge pool). Each item is validated on its own: a malformed one comes back with
    status ``rejected`` and an error naming its field, and the others are scored.
    """
    target = service.target(body.rubric)
    response = await service.score(target, body.items, body.options, run=body.run)
    return Response(response.model_dump_json(), media_type="application/json")


@v1.get(
    "/rubrics",
    response_model=RubricList,
    responses=error_responses(ErrorKind.UNAUTHORIZED),
    tags=["rubrics"],
)
async def list_rubrics(service: ServiceDep) -> RubricList:
    """The served rubrics, constitutions, recipes and routing tables (one id space, each
    with its ``kind``), and the problems of library files that were refused (those the
    request's API key may read)."""
    registry = service.registry
    errors = {f: ps for f, ps in registry.errors().items() if can_read_rubric(Path(f).stem)}
    summaries = [
        _summary(registry, served, str(served.path) in errors)
        for served in registry.served()
        if can_read_rubric(served.document.id)
    ]
    problems = [
        FileProblem(file=_file(registry, Path(f)), line=p.line, path=p.path, message=p.message)
        for f, ps in sorted(errors.items())
        for p in ps
    ]
    return RubricList(rubrics=summaries, errors=problems)


def _file(registry: Registry, path: Path) -> str:
    """A library file as the routes name it: relative to the rubric folder."""
    try:
        return path.relative_to(registry.rubrics_dir).as_posix()
    except ValueError:
        return path.name


def _summary(registry: Registry, served: Served, refused_edit: bool) -> RubricSummary:
    """One line of the library's listing."""
    document = served.document
    target = library_target(registry, document.id)
    judged = target.judged_rubrics() if target is not None else []
    components: list[str] = []
    if isinstance(document, Recipe):
        components = [c.id for c in document.components]
    elif isinstance(document, RoutingTable):
        components = list(
            dict.fromkeys([*document.routes.values(), *filter(None, [document.default])])
        )
    return RubricSummary(
        id=document.id,
        version=served.version,
        kind=served.kind,
        description=document.description,
        file=_file(registry, served.path),
        criteria=[c.id for c in document.criteria] if isinstance(document, Rubric) else [],
        components=components,
        judges=list(dict.fromkeys(j.name for r in judged for j in r.judges)),
        refused_edit=refused_edit,
    )


@v1.get(
    "/rubrics/{rubric_id}",
    response_model=RubricDetail,
    responses=error_responses(ErrorKind.UNAUTHORIZED, ErrorKind.UNKNOWN_RUBRIC),
    tags=["rubrics"],
)
async def get_rubric(rubric_id: str, service: ServiceDep) -> RubricDetail:
    """One served rubric, constitution, recipe or routing table with its version, source
    file and YAML text; when the file's latest edit was refused, ``errors`` holds its
    problems and the last good version is shown."""
    served = service.library_entry(rubric_id)
    problems = service.registry.errors().get(str(served.path), [])
    return RubricDetail(
        id=served.document.id,
        version=served.version,
        kind=served.kind,
        file=_file(service.registry, served.path),
        yaml=served.text,
        rubric=served.document,
        errors=_problems_out(problems),
    )


_YAML_TYPES = ("text/yaml", "application/yaml", "application/x-yaml", "text/x-yaml", "text/plain")


@v1.post(
    "/rubrics/validate",
    response_model=ValidationReport,
    responses=error_responses(
        ErrorKind.UNAUTHORIZED, ErrorKind.PAYLOAD_TOO_LARGE, ErrorKind.INVALID_REQUEST
    ),
    tags=["rubrics"],
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "text/yaml": {"schema": {"type": "string"}},
                "application/json": {"schema": {"$ref": "#/components/schemas/ValidateRequest"}},
            },
        }
    },
)
async def validate_rubric(request: Request, service: ServiceDep) -> Any:
    """Check rubric YAML (as ``text/yaml``, or JSON ``{"yaml": ...}``) against the schema and
    the judge pool, without installing it. Problems carry line and key path. A text larger
    than ``max_rubric_bytes`` gets 413 before it is parsed; parsing counts as in-flight
    work (429 when the service is full, 503 while it drains)."""
    raw = await request.body()
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json" or content_type.endswith("+json"):
        try:
            text = ValidateRequest.model_validate_json(raw).yaml
        except ValidationError as exc:
            # The app's validation handler words it as for any other body.
            raise RequestValidationError(exc.errors(), body=_json_or_none(raw)) from exc
    elif content_type in _YAML_TYPES or not content_type:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RequestError.at((), "the body is not UTF-8 text") from exc
    else:
        raise RequestError(
            f"send the rubric as text/yaml or as JSON {{'yaml': ...}}, not {content_type}",
            kind=ErrorKind.UNSUPPORTED_MEDIA_TYPE,
            field="Content-Type",
        )
    limit = service.settings.max_rubric_bytes
    if len(text.encode()) > limit:
        raise TooLarge(
            f"the rubric is {len(text.encode())} bytes, more than max_rubric_bytes={limit}",
            kind=ErrorKind.PAYLOAD_TOO_LARGE,
            field="max_rubric_bytes",
        )
    try:
        # Parsing YAML with line numbers costs about 1 s of CPU per 64 KB: off the loop,
        # and held as one item in flight like any scoring work.
        with service.admitted(1, 0):
            rubric = await asyncio.to_thread(service.registry.validate_text, text, "<request>")
    except InvalidFile as exc:
        return ValidationReport(valid=False, errors=_problems_out(exc.problems))
    return ValidationReport(valid=True, id=rubric.id, version=rubric.version())


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None
