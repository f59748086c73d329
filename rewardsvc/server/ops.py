"""Operations routes: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from rewardsvc.core.errors import ErrorKind
from rewardsvc.protocol.ops import Health, PublicReadiness, Readiness
from rewardsvc.server import access
from rewardsvc.server.errors import error_responses
from rewardsvc.server.readiness import code_grader_users
from rewardsvc.server.service import Service, ServiceDep

health = APIRouter(tags=["operations"])


@health.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """Liveness: the process is up and serving HTTP."""
    return Health()


@health.get("/readyz", response_model=PublicReadiness, responses={503: {"model": PublicReadiness}})
async def readyz(service: ServiceDep) -> JSONResponse:
    """Readiness, public (probes carry no key): at least one rubric is served and, for every
    rubric, at least its ``min_judges`` judges answer ``GET /v1/models`` (probed at most
    every few seconds) and, when a rubric or recipe has a code grader, the sandbox works.
    Which judges and rubrics: ``GET /readyz/detail``."""
    _, general, _ = await _assess(service)
    ready = not general
    body = PublicReadiness(ready=ready, message="ready" if ready else "; ".join(general))
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@health.get(
    "/readyz/detail",
    response_model=Readiness,
    responses={503: {"model": Readiness}, **error_responses(ErrorKind.UNAUTHORIZED)},
)
async def readyz_detail(service: ServiceDep) -> JSONResponse:
    """Readiness as ``/readyz`` decides it, with the judges that answer, the rubrics that
    cannot be scored and the shared state (behind the API key: these are internal names; a
    scoped key is told of its own rubrics only)."""
    reachable, general, reasons = await _assess(service)
    ready = not general
    link = service.shared
    body = Readiness(
        ready=ready,
        message="ready" if ready else "; ".join(reasons or general),
        rubrics=sum(1 for e in service.registry.entries() if access.can_read_rubric(e.rubric.id)),
        judges=reachable,
        shared_state="none" if link is None else "ok" if link.healthy else "unreachable",
        shared_pending=0 if link is None else link.pending,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


async def _assess(service: Service) -> tuple[dict[str, bool], list[str], list[str]]:
    """Which judges answer, and why the service is not ready (ready: no reason): in
    general terms (for everyone), and naming judges and the rubrics the request's key may
    read (for key holders)."""
    entries = service.registry.entries()
    reachable = await service.readiness.reachable()
    general: list[str] = []
    reasons: list[str] = []
    if service.draining:
        general.append("shutting down")
        reasons.append("shutting down")
    if not entries:
        general.append("no rubric is loaded")
        reasons.append(f"no rubric is loaded from {service.registry.rubrics_dir.name}/")
    blocked: list[tuple[str, str]] = []
    for entry in entries:
        up = sum(1 for j in entry.rubric.judges if reachable.get(j.name))
        if up < entry.rubric.min_judges:
            r = entry.rubric
            blocked.append((r.id, f"{r.id} (needs {r.min_judges}, {up} up)"))
    if blocked:
        down = ", ".join(sorted(n for n, ok in reachable.items() if not ok)) or "none"
        general.append("too few judges answer for some rubrics")
        shown = [text for rubric_id, text in blocked if access.can_read_rubric(rubric_id)]
        reasons.append(
            f"judges not answering: {down}; rubrics that cannot be scored: "
            f"{', '.join(shown) or 'none of this API key'}"
        )
    needed_by = code_grader_users(service.registry)
    unavailable = await service.readiness.sandbox_unavailable(needed_by)
    if unavailable is not None:
        general.append("the sandbox of the code graders is unavailable")
        shown = [rubric_id for rubric_id in needed_by if access.can_read_rubric(rubric_id)]
        reasons.append(
            f"the sandbox is unavailable ({unavailable}); needed by: "
            f"{', '.join(shown) or 'none of this API key'}"
        )
    return reachable, general, reasons


@health.get("/metrics", response_class=Response, responses=error_responses(ErrorKind.UNAUTHORIZED))
async def prometheus_metrics() -> Response:
    """Prometheus metrics (text exposition format)."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
