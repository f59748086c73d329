"""Operations routes: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from rewardsvc.server.errors import error_responses
from rewardsvc.server.service import ServiceDep
from rewardsvc.server.wire.ops import Health, Readiness

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
    if service.draining:
        reasons.append("shutting down")
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
    link = service.shared
    body = Readiness(
        ready=ready,
        message="ready" if ready else "; ".join(reasons),
        rubrics=len(entries),
        judges=reachable,
        shared_state="none" if link is None else "ok" if link.healthy else "unreachable",
        shared_pending=0 if link is None else link.pending,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@health.get("/metrics", response_class=Response, responses=error_responses(401))
async def prometheus_metrics() -> Response:
    """Prometheus metrics (text exposition format)."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
