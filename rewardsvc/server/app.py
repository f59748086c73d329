"""The HTTP service: ``create_app(settings)`` returns the FastAPI app.

Routes: ``POST /v1/rewards``, the rubric library (``GET /v1/rubrics``,
``GET /v1/rubrics/{id}``, ``POST /v1/rubrics/validate``), trainer compatibility
routes (``compat.py``), ``/healthz``, ``/readyz`` and ``/metrics``.
Every error is an ``ErrorDetail`` body ``{error, message, field}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.library.registry import Registry, load_pool
from rewardsvc.library.yamlfile import (
    InvalidFile,
    Problem,
    format_path,
    split_relative,
    validate_document,
)
from rewardsvc.scoring.cache import VerdictCache
from rewardsvc.scoring.engine import Engine
from rewardsvc.server import compat, metrics
from rewardsvc.server.guards import (
    PUBLIC_PATHS,
    ApiError,
    ApiKeyMiddleware,
    BodyLimitMiddleware,
    InflightLimiter,
    check_batch,
    error_detail_of,
    error_response,
)
from rewardsvc.server.readiness import ReadinessProbe
from rewardsvc.server.reward_log import RewardLog
from rewardsvc.server.wire import ErrorDetail, RewardOptions, RewardRequest, RewardResponse
from rewardsvc.settings import Settings

log = logging.getLogger(__name__)


# ------------------------------------------------------------------ response models


class ProblemOut(BaseModel):
    """One validation problem of a rubric: its line, the key path, and what is wrong."""

    line: int
    path: str = Field(description="Key path inside the rubric, e.g. criteria[2].weight.")
    message: str


class FileProblem(ProblemOut):
    """A validation problem of a rubric file of the library."""

    file: str = Field(description="File name inside the rubric folder.")


class RubricSummary(BaseModel):
    """A served rubric of the library."""

    id: str
    version: str = Field(description="Hash of the rubric's normalized content.")
    kind: str
    description: str
    file: str = Field(description="Source file name inside the rubric folder.")
    criteria: list[str] = Field(description="Criterion ids.")
    judges: list[str] = Field(description="Judge names that score it.")
    refused_edit: bool = Field(
        description="The file's latest edit did not validate; the last good version serves."
    )


class RubricList(BaseModel):
    """The rubric library: served rubrics and the problems of refused files."""

    rubrics: list[RubricSummary]
    errors: list[FileProblem] = Field(
        description="Problems of files whose latest edit was refused (or never validated)."
    )


class RubricDetail(BaseModel):
    """One served rubric: version, source file and text, and any refused edit's problems."""

    id: str
    version: str
    file: str = Field(description="Source file name inside the rubric folder.")
    yaml: str = Field(description="The YAML text of the served version.")
    rubric: Rubric = Field(description="The served rubric, with defaults filled in.")
    errors: list[ProblemOut] = Field(
        description="Problems of the file's latest edit when it was refused (the served "
        "version is then the last good one); empty otherwise."
    )


class ValidateRequest(BaseModel):
    """Rubric YAML to check (the JSON form of ``POST /v1/rubrics/validate``)."""

    yaml: str = Field(description="The rubric as YAML text.")


class ValidationReport(BaseModel):
    """Whether rubric YAML is valid against the schema and this service's judge pool."""

    valid: bool
    id: str | None = Field(default=None, description="The rubric id, when valid.")
    version: str | None = Field(default=None, description="The version it would have.")
    errors: list[ProblemOut] = Field(default_factory=list)


class Health(BaseModel):
    """Liveness: the process answers."""

    status: str = "ok"


class Readiness(BaseModel):
    """Readiness: rubrics are loaded and enough judges answer for every rubric."""

    ready: bool
    message: str = Field(description="Why the service is not ready, or 'ready'.")
    rubrics: int = Field(description="Rubrics served.")
    judges: dict[str, bool] = Field(description="Whether each pool judge answered its probe.")


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {
        401: "Missing or invalid API key.",
        404: "Unknown rubric.",
        413: "Body larger than max_body_bytes, or more items than max_items.",
        422: "Malformed request; `field` names the offending field.",
        429: "Too many items in flight (max_inflight); retry after Retry-After seconds.",
    }
    return {c: {"model": ErrorDetail, "description": text[c]} for c in codes}


# ------------------------------------------------------------------ the service


@dataclass
class Service:
    """Everything the routes share: settings, rubric library, engine, limits, reward log."""

    settings: Settings
    registry: Registry
    engine: Engine
    limiter: InflightLimiter
    readiness: ReadinessProbe
    http: httpx.AsyncClient
    reward_log: RewardLog | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def judge_names(self) -> set[str]:
        """The judge names an inline rubric may refer to."""
        return set(self.engine.judges)

    def library_rubric(self, rubric_id: str) -> Rubric:
        """A rubric of the library, or 404 naming the field ``rubric``."""
        try:
            return self.registry.get(rubric_id).rubric
        except KeyError:
            pass
        refused = [Path(f).name for f in self.registry.errors() if Path(f).stem == rubric_id]
        known = [e.rubric.id for e in self.registry.entries()]
        if len(known) > 20:
            known = [*known[:20], "..."]
        if refused:
            message = (
                f"rubric {rubric_id!r} is not served: its file {refused[0]} does not validate "
                "(see GET /v1/rubrics)"
            )
        else:
            message = f"no rubric {rubric_id!r} in the library; known rubrics: {known}"
        raise ApiError(404, "unknown_rubric", message, field="rubric")

    def inline_rubric(self, rubric: Rubric) -> Rubric:
        """Re-validate an inline rubric against the judge pool (FastAPI validated its shape)."""
        try:
            return validate_document(
                rubric.model_dump(mode="json"),
                Rubric,
                "<request>",
                {"judge_names": self.judge_names()},
            )
        except InvalidFile as exc:
            first = exc.problems[0]
            message = "; ".join(
                f"rubric.{p.path}: {p.message}" if p.path else f"rubric: {p.message}"
                for p in exc.problems
            )
            raise ApiError(
                422,
                "invalid_request",
                message,
                field=f"rubric.{first.path}" if first.path else "rubric",
            ) from exc

    async def score(
        self,
        rubric: Rubric,
        items: list[Any],
        options: RewardOptions,
        field_name: str = "items",
        metrics_label: str | None = None,
    ) -> RewardResponse:
        """Score a batch within the batch and in-flight limits; log it when configured."""
        check_batch(len(items), self.settings.max_items, field_name)
        with self.limiter.admit(len(items)):
            metrics.INFLIGHT.inc()
            try:
                response = await self.engine.score(rubric, items, options, metrics_label)
            except ValueError as exc:
                message = str(exc)
                match = re.match(r"^([a-z_]+(?:\.[a-z_]+)*): ", message)
                raise ApiError(
                    422, "invalid_request", message, field=match.group(1) if match else None
                ) from exc
            finally:
                metrics.INFLIGHT.dec()
        if self.reward_log is not None:
            self.reward_log.write(response, items)
        return response

    async def score_rubric(
        self,
        rubric_id: str,
        items: list[dict[str, Any]],
        options: RewardOptions,
        field_name: str = "items",
    ) -> RewardResponse:
        """Score against a library rubric (the compatibility routes' entry point);
        ``field_name`` names the items' field in the caller's protocol, for errors."""
        return await self.score(self.library_rubric(rubric_id), items, options, field_name)

    async def aclose(self) -> None:
        """Stop the watcher, close judges, cache, probe client and reward log."""
        self.stop.set()
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.engine.aclose()
        await self.http.aclose()
        if self.reward_log is not None:
            await asyncio.to_thread(self.reward_log.close)


def get_service(request: Request) -> Service:
    """The running service (set by the app's lifespan)."""
    service = getattr(request.app.state, "service", None)
    if service is None:
        raise RuntimeError("the app's lifespan has not run (use it as an ASGI app with lifespan)")
    return service  # type: ignore[no-any-return]


ServiceDep = Annotated[Service, Depends(get_service)]


async def start_service(
    settings: Settings,
    registry: Registry | None = None,
    judges: Mapping[str, Judge] | None = None,
) -> Service:
    """Build what the app needs: registry and judges unless given, engine, cache, watcher."""
    if registry is None:
        pool = await asyncio.to_thread(load_pool, Path(settings.judge_pool))
        registry = await asyncio.to_thread(Registry, Path(settings.rubrics_dir), pool)
    if judges is None:
        judges = build_judges(registry.pool)
    cache = VerdictCache(settings.cache_size, settings.cache_path)
    engine = Engine(judges, cache, settings.max_text_chars)
    http = httpx.AsyncClient()
    service = Service(
        settings=settings,
        registry=registry,
        engine=engine,
        limiter=InflightLimiter(settings.max_inflight),
        readiness=ReadinessProbe(engine.judges, http),  # type: ignore[arg-type]
        http=http,
        reward_log=RewardLog(settings.reward_log) if settings.reward_log else None,
    )
    if settings.reload:
        service.tasks.append(asyncio.create_task(registry.watch(service.stop)))
    return service


# ------------------------------------------------------------------ error formatting

_TYPE_TAGS: dict[str, type | tuple[type, ...]] = {
    "str": str,
    "int": int,
    "float": (int, float),
    "bool": bool,
    "none": type(None),
    "list": list,
    "dict": dict,
}
_MISSING = object()


def _is_tag(part: str) -> bool:
    """pydantic's names for union members and validators in a location (not JSON keys)."""
    return part in _TYPE_TAGS or "[" in part or part[:1].isupper()


def _tag_fits(tag: str, node: Any) -> bool:
    """Whether the union member ``tag`` is the one meant for the input ``node``."""
    # A validated model shows as "function-after[_validator(), Model]": the member is Model.
    if tag.startswith("function-") and tag.endswith("]"):
        tag = tag[:-1].rsplit(",", 1)[-1].strip()
    base = tag.split("[", 1)[0]
    if base in _TYPE_TAGS:
        if base == "int" and isinstance(node, bool):
            return False
        return isinstance(node, _TYPE_TAGS[base])
    if tag[:1].isupper():  # a model class name
        return isinstance(node, dict)
    return True  # other validator names: not a union choice


def _locate(loc: tuple[Any, ...], body: Any) -> tuple[str, str | None, bool]:
    """(field path, path of the union the error is in, whether its member does not fit the
    input's type). Union members appear in pydantic locations as type tags."""
    node: Any = body
    path = ""
    union: str | None = None
    misfit = False
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else _MISSING
        elif isinstance(node, dict) and part in node:
            path += f".{part}" if path else part
            node = node[part]
        elif _is_tag(part):
            if union is None:
                union = path
                misfit = not _tag_fits(part, node)
        else:
            path += f".{part}" if path else part
            node = _MISSING
    return path, union, misfit


def _relative(path: str, message: str) -> tuple[str, str]:
    # Validators name a place relative to theirs ("[2].id: duplicate ..."); append it.
    relative = split_relative(message)
    if relative is None:
        return path, message
    parts, rest = relative
    rel = format_path(parts)
    return (path + rel if rel.startswith("[") or not path else f"{path}.{rel}"), rest


def format_validation_errors(errors: list[dict[str, Any]], body: Any) -> ErrorDetail:
    """One ErrorDetail for FastAPI's validation errors, fields written ``items[0].prompt``."""
    located = []
    for e in errors:
        loc = tuple(e.get("loc", ()))
        where = loc[0] if loc else "body"
        msg = str(e.get("msg", "invalid"))
        for prefix in ("Value error, ", "Assertion failed, "):
            msg = msg.removeprefix(prefix)
        if e.get("type") == "json_invalid":
            error = (e.get("ctx") or {}).get("error", "")
            position = loc[1] if len(loc) > 1 else "?"
            return ErrorDetail(
                error="invalid_json",
                message=f"the body is not valid JSON ({error} at character {position})",
            )
        if where == "body":
            path, union, misfit = _locate(loc[1:], body)
        else:
            path, union, misfit = ".".join(str(p) for p in loc[1:]) or str(where), None, False
        if e.get("type") == "extra_forbidden":
            msg = "unknown field (not allowed here)"
        path, msg = _relative(path, msg)
        located.append((path, union, misfit, msg))
    # Keep, for each union, only the errors of the member meant for the input's type
    # (a rubric given as an object is not also "not a valid string").
    fitting = {u for _, u, misfit, _ in located if u is not None and not misfit}
    kept = [(p, m) for p, u, misfit, m in located if not (misfit and u in fitting)]
    problems: list[str] = []
    for path, msg in kept:
        text = f"{path}: {msg}" if path else f"request body: {msg}"
        if text not in problems:
            problems.append(text)
    first = kept[0][0] if kept else None
    return ErrorDetail(error="invalid_request", message="; ".join(problems), field=first or None)


def _problems_out(problems: list[Problem]) -> list[ProblemOut]:
    return [ProblemOut(line=p.line, path=p.path, message=p.message) for p in problems]


# ------------------------------------------------------------------ request metrics


class RequestMetricsMiddleware:
    """Counts every HTTP response in REQUESTS by route template and status code."""

    def __init__(self, app: ASGIApp, routes_app: FastAPI):
        self.app = app
        self.routes_app = routes_app

    def _route(self, scope: Scope) -> str:
        route = scope.get("route")
        if route is None:
            # Refused before routing (auth, body limit): find the route it was meant for.
            for candidate in self.routes_app.router.routes:
                match, _ = candidate.matches(scope)
                if match == Match.FULL:
                    route = candidate
                    break
        return str(getattr(route, "path", "unmatched"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def counting_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            metrics.REQUESTS.labels(route=self._route(scope), code=str(status)).inc()


# ------------------------------------------------------------------ routes

v1 = APIRouter(prefix="/v1")


@v1.post(
    "/rewards",
    response_model=RewardResponse,
    responses=_errors(401, 404, 413, 422, 429),
    tags=["rewards"],
    summary="Score a batch of rollouts against a rubric",
)
async def rewards(body: RewardRequest, service: ServiceDep) -> Response:
    """Rewards for every item, in request order.

    ``rubric`` is a library rubric id or an inline rubric object (validated against the
    judge pool). Each item is validated on its own: a malformed one comes back with
    status ``rejected`` and an error naming its field, and the others are scored.
    """
    check_batch(len(body.items), service.settings.max_items)
    if isinstance(body.rubric, str):
        rubric, label = service.library_rubric(body.rubric), None
    else:
        rubric, label = service.inline_rubric(body.rubric), "_inline"
    response = await service.score(rubric, body.items, body.options, metrics_label=label)
    return Response(response.model_dump_json(), media_type="application/json")


@v1.get("/rubrics", response_model=RubricList, responses=_errors(401), tags=["rubrics"])
async def list_rubrics(service: ServiceDep) -> RubricList:
    """The served rubrics, and the problems of rubric files that were refused."""
    registry = service.registry
    errors = registry.errors()
    summaries = [
        RubricSummary(
            id=e.rubric.id,
            version=e.version,
            kind=e.rubric.kind,
            description=e.rubric.description,
            file=e.path.name,
            criteria=[c.id for c in e.rubric.criteria],
            judges=[j.name for j in e.rubric.judges],
            refused_edit=str(e.path) in errors,
        )
        for e in registry.entries()
    ]
    problems = [
        FileProblem(file=Path(f).name, line=p.line, path=p.path, message=p.message)
        for f, ps in sorted(errors.items())
        for p in ps
    ]
    return RubricList(rubrics=summaries, errors=problems)


@v1.get(
    "/rubrics/{rubric_id}",
    response_model=RubricDetail,
    responses=_errors(401, 404),
    tags=["rubrics"],
)
async def get_rubric(rubric_id: str, service: ServiceDep) -> RubricDetail:
    """One served rubric with its version, source file and YAML text; when the file's latest
    edit was refused, ``errors`` holds its problems and the last good version is shown."""
    service.library_rubric(rubric_id)  # 404 with the reason when it is not served
    entry = service.registry.get(rubric_id)
    problems = service.registry.errors().get(str(entry.path), [])
    return RubricDetail(
        id=entry.rubric.id,
        version=entry.version,
        file=entry.path.name,
        yaml=entry.text,
        rubric=entry.rubric,
        errors=_problems_out(problems),
    )


_YAML_TYPES = ("text/yaml", "application/yaml", "application/x-yaml", "text/x-yaml", "text/plain")


@v1.post(
    "/rubrics/validate",
    response_model=ValidationReport,
    responses=_errors(401, 413, 422),
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
    the judge pool, without installing it. Problems carry line and key path."""
    raw = await request.body()
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json" or content_type.endswith("+json"):
        try:
            text = ValidateRequest.model_validate_json(raw).yaml
        except ValidationError as exc:
            detail = format_validation_errors(exc.errors(), _json_or_none(raw))
            raise ApiError(422, detail.error, detail.message, detail.field) from exc
    elif content_type in _YAML_TYPES or not content_type:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ApiError(422, "invalid_request", "the body is not UTF-8 text") from exc
    else:
        raise ApiError(
            415,
            "unsupported_media_type",
            f"send the rubric as text/yaml or as JSON {{'yaml': ...}}, not {content_type}",
            field="Content-Type",
        )
    try:
        rubric = await asyncio.to_thread(service.registry.validate_text, text, "<request>")
    except InvalidFile as exc:
        return ValidationReport(valid=False, errors=_problems_out(exc.problems))
    return ValidationReport(valid=True, id=rubric.id, version=rubric.version())


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


health = APIRouter(tags=["operations"])


@health.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """Liveness: the process is up and serving HTTP."""
    return Health()


@health.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
async def readyz(service: ServiceDep) -> JSONResponse:
    """Readiness: at least one rubric is served and, for every rubric, at least its
    ``min_judges`` judges answer ``GET /v1/models`` (probed at most every few seconds)."""
    entries = service.registry.entries()
    reachable = await service.readiness.reachable()
    reasons = []
    if not entries:
        reasons.append(f"no rubric is loaded from {service.registry.rubrics_dir.name}/")
    blocked = []
    for entry in entries:
        up = sum(1 for j in entry.rubric.judges if reachable.get(j.name))
        if up < entry.rubric.min_judges:
            blocked.append(f"{entry.rubric.id} (needs {entry.rubric.min_judges}, {up} up)")
    if blocked:
        down = ", ".join(sorted(n for n, ok in reachable.items() if not ok)) or "none"
        reasons.append(
            f"judges not answering: {down}; rubrics that cannot be scored: {', '.join(blocked)}"
        )
    ready = not reasons
    body = Readiness(
        ready=ready,
        message="ready" if ready else "; ".join(reasons),
        rubrics=len(entries),
        judges=reachable,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@health.get("/metrics", response_class=Response, responses=_errors(401))
async def prometheus_metrics() -> Response:
    """Prometheus metrics (text exposition format)."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


# ------------------------------------------------------------------ the app


def build_openapi(app: FastAPI, auth: bool) -> dict[str, Any]:
    """FastAPI's schema with every 422 as ErrorDetail (that is what the handlers send), the
    validate route's JSON body model, and the bearer scheme when API keys are required."""
    schema = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
    )
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas["ValidateRequest"] = ValidateRequest.model_json_schema(
        ref_template="#/components/schemas/{model}"
    )
    error_ref = {"$ref": "#/components/schemas/ErrorDetail"}
    for path, operations in schema.get("paths", {}).items():
        for operation in operations.values():
            responses = operation.get("responses", {})
            if "422" in responses:
                responses["422"] = {
                    "description": "Malformed request; `field` names the offending field.",
                    "content": {"application/json": {"schema": error_ref}},
                }
            if auth and path not in PUBLIC_PATHS:
                operation["security"] = [{"bearer": []}]
    if auth:
        schema["components"]["securitySchemes"] = {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "An API key from REWARDSVC_API_KEYS (HTTP Basic with the key as "
                "password is accepted too).",
            }
        }
    return schema


def create_app(
    settings: Settings | None = None,
    registry: Registry | None = None,
    judges: Mapping[str, Judge] | None = None,
) -> FastAPI:
    """The rewardsvc app. Its lifespan builds the registry (from ``settings.rubrics_dir`` and
    ``settings.judge_pool``) and the judges unless given, the engine and cache, and starts
    the rubric watcher when ``settings.reload``. The app owns given judges: it closes them
    on shutdown."""
    settings = settings or Settings()
    api_keys = settings.api_key_list()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = await start_service(settings, registry, judges)
        app.state.service = service
        try:
            yield
        finally:
            app.state.service = None
            await service.aclose()

    app = FastAPI(
        title="rewardsvc",
        summary="Rubric and constitutional rewards for RL on LLMs, scored by LLM judges.",
        version="0.1.0",
        lifespan=lifespan,
    )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(error_detail_of(exc), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = format_validation_errors(list(exc.errors()), exc.body)
        return JSONResponse(detail.model_dump(), status_code=422)

    @app.exception_handler(Exception)
    async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        # The exception text may hold internals (paths, judge URLs): it goes to the log only.
        return error_response(500, "internal_error", "internal error; see the service log")

    app.include_router(v1)
    app.include_router(compat.router)
    app.include_router(health)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app, auth=bool(api_keys))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    # Added innermost first: metrics sees every response, auth runs before the body
    # is read, and the body limit wraps everything that reads it.
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    if api_keys:
        app.add_middleware(ApiKeyMiddleware, keys=api_keys)
    app.add_middleware(RequestMetricsMiddleware, routes_app=app)
    return app
