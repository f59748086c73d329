"""The HTTP service: ``create_app(settings)`` returns the FastAPI app.

Routes: the native API (``routes.py``), trainer compatibility routes (``compat.py``) and
operations (``ops.py``); the service objects they share are built in ``service.py``.
Every error is an ``ErrorDetail`` body ``{error, message, field}`` (``errors.py``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.telemetry import TelemetryConfig
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute

from rewardsvc.core.errors import ServiceError
from rewardsvc.judges.judge import Judge
from rewardsvc.library.registry import Registry
from rewardsvc.library.yamlfile import InvalidFile
from rewardsvc.protocol.rubrics import ValidateRequest
from rewardsvc.server import (
    agents,
    comparative,
    compat,
    compat_roll,
    dashboard,
    docs_ui,
    golden,
    ops,
    routes,
)
from rewardsvc.server.access import Keyring
from rewardsvc.server.api_keys import PUBLIC_PATHS, ApiKeyMiddleware
from rewardsvc.server.errors import (
    HTTP_FORM,
    HttpRefusal,
    error_detail_of,
    form_at,
    request_error_of,
    validation_error_of,
)
from rewardsvc.server.guards import AdmissionMiddleware, BodyLimitMiddleware, CancelOnDisconnect
from rewardsvc.server.metrics import RequestMetricsMiddleware
from rewardsvc.server.ors import OrsRoutes
from rewardsvc.server.ors_env import add_ors
from rewardsvc.server.service import start_service
from rewardsvc.settings import Settings

log = logging.getLogger(__name__)


ROUTERS = (
    routes.v1,
    comparative.router,
    compat.router,
    compat_roll.router,
    agents.router,
    ops.health,
    dashboard.router,
    golden.router,
    docs_ui.router,
)
"""The service's routers, in the order their routes are matched."""


# The service's metrics are its Prometheus families (docs: metrics). FastAPI's own
# OpenTelemetry hooks, on by default, looked up the global providers on every request.
NO_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}


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


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error as an ErrorDetail. A :class:`ServiceError` raised anywhere is
    answered by the one handler, in the form of the route that raised it (its kind's status
    from the one table in ``errors.py``), also when raised as an :class:`HttpRefusal`
    (while FastAPI reads a body); validation errors and invalid rubric documents
    become request errors first; Starlette's own HTTP errors (no such route) keep their
    status; anything else is a 500 whose text stays in the log."""

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return form_at(request.scope).response(exc)

    @app.exception_handler(HttpRefusal)
    async def _http_refusal(request: Request, exc: HttpRefusal) -> JSONResponse:
        return form_at(request.scope).response(exc.error)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(error_detail_of(exc), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return HTTP_FORM.response(validation_error_of(list(exc.errors()), exc.body))

    @app.exception_handler(InvalidFile)
    async def _invalid_file(request: Request, exc: InvalidFile) -> JSONResponse:
        return HTTP_FORM.response(request_error_of(exc))

    @app.exception_handler(Exception)
    async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        # The exception text may hold internals (paths, judge URLs): it goes to the log only.
        return HTTP_FORM.response(ServiceError("internal error; see the service log"))


def _add_middleware(
    app: FastAPI, settings: Settings, keyring: Keyring | None, formed: Sequence[BaseRoute] = ()
) -> None:
    """The request guards, added innermost first: metrics sees every response, auth (when
    ``keyring``) runs before the body is read, and the body limit wraps everything that
    reads it."""
    # Their refusals come before routing: in the form of the route of ``formed`` (the routes
    # with a form of their own: ORS's) the request is for.
    forms = functools.partial(form_at, routes=formed)
    app.add_middleware(CancelOnDisconnect)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes, forms=forms)
    app.add_middleware(
        AdmissionMiddleware, service=lambda: getattr(app.state, "service", None), forms=forms
    )
    if keyring is not None:
        app.add_middleware(ApiKeyMiddleware, keyring=keyring, forms=forms)
    app.add_middleware(RequestMetricsMiddleware, routes_app=app)


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
    scoped_keys = settings.api_key_scope_list()
    auth = bool(api_keys or scoped_keys)
    # Built here, not when the first request arrives: a key given twice fails the start.
    keyring = Keyring(api_keys, scoped_keys) if auth else None
    # Read here, once: no request names a file (an invalid one fails the start).
    ors = OrsRoutes.load(settings.ors_environments) if settings.ors_environments else None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = await start_service(settings, registry, judges)
        app.state.service = service
        try:
            if ors is not None:
                ors.check_targets(service)
            yield
        finally:
            app.state.service = None
            if ors is not None:
                ors.sessions.close()
            await service.aclose()

    app = FastAPI(
        title="rewardsvc",
        summary="Rubric and constitutional rewards for RL on LLMs, scored by LLM judges.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # docs_ui serves /docs from the installed package, not a CDN
        redoc_url=None,
        telemetry=NO_TELEMETRY,
    )

    install_error_handlers(app)

    for router in ROUTERS:
        app.include_router(router)
    formed: list[BaseRoute] = []
    if ors is not None:
        formed = add_ors(app, ors)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app, auth=auth)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented override

    _add_middleware(app, settings, keyring, formed)
    return app
