"""The monitor's routes: ``GET /v1/monitor`` (JSON) and the ``/dashboard`` page.

The page is static HTML and JavaScript with a vendored copy of uPlot (no build step, no
CDN); it polls ``/v1/monitor?history=true``. The response models are in
``rewardsvc.protocol.monitor``; ``rewardsvc.server.monitor_views`` builds them from the
monitor's records. What feeds the monitor and where its alerts go is wired in
``rewardsvc.application.monitoring``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, HTMLResponse

from rewardsvc.core.errors import ErrorKind, RequestError, Unavailable
from rewardsvc.monitor import Monitor
from rewardsvc.monitor.shared import SharedMonitor
from rewardsvc.protocol.monitor import IdentityOut, MonitorReport, SpendOut, ToolLoopsOut
from rewardsvc.server.access import GRANT, can_read, can_read_rubric, can_read_run
from rewardsvc.server.monitor_views import canary_out, golden_out, run_out, view

STATIC = Path(__file__).parent / "static"
ASSETS = {
    "dashboard.js": "application/javascript",
    "dashboard.css": "text/css",
    "uPlot.iife.min.js": "application/javascript",
    "uPlot.min.css": "text/css",
}


# ------------------------------------------------------------------ report


def report(monitor: Monitor, rubric: str | None, run: str | None, history: bool) -> MonitorReport:
    """The monitor's state, filtered as ``GET /v1/monitor`` is asked and to what the
    request's API key may read (a scoped key sees its own runs and rubrics only)."""
    source: Literal["local", "shared", "local_fallback"] = "local"
    if monitor.sink is not None:
        source = "shared" if monitor.shared else "local_fallback"
    return MonitorReport(
        source=source,
        runs=[run_out(s, history) for s in monitor.runs(rubric, run) if can_read(s.rubric, s.run)],
        canaries=[
            canary_out(c, history) for c in monitor.canaries(rubric) if can_read_rubric(c.rubric)
        ],
        spend=[
            view(SpendOut, c)
            for c in monitor.spend.runs()
            if (run is None or c.run == run) and can_read_run(c.run)
        ],
        golden=[
            golden_out(g, history)
            for g in monitor.golden.records(rubric)
            if can_read_rubric(g.rubric)
        ],
        # What serves the judges is the operator's: unrestricted keys see it.
        judges=[view(IdentityOut, i) for i in monitor.golden.identities()]
        if GRANT.get() is None
        else [],
        tool_loops=[
            view(ToolLoopsOut, e)
            for e in monitor.tool_loops.runs(rubric, run)
            if can_read(e.rubric, e.run)
        ],
    )


# ------------------------------------------------------------------ routes


async def get_monitor(request: Request) -> Monitor:
    """The app's monitor: ``app.state.service.monitor``, else ``app.state.monitor``."""
    service = getattr(request.app.state, "service", None)
    monitor: Monitor | None = getattr(service, "monitor", None) or getattr(
        request.app.state, "monitor", None
    )
    if monitor is None:
        raise Unavailable("the monitor is not running", kind=ErrorKind.UNAVAILABLE)
    return monitor


MonitorDep = Annotated[Monitor, Depends(get_monitor)]
router = APIRouter()


@router.get("/v1/monitor", tags=["monitor"])
async def get_monitor_report(
    monitor: MonitorDep,
    rubric: Annotated[str | None, Query(description="Only this rubric's runs.")] = None,
    run: Annotated[str | None, Query(description="Only runs of this name.")] = None,
    history: Annotated[
        bool, Query(description="Include each run's downsampled signal history.")
    ] = False,
) -> MonitorReport:
    """Per (rubric, run): samples, current signals and alerts; the canaries' latest scores;
    per rubric and judge the golden set's latest re-score; and each judge's identity.

    Behind several replicas sharing Redis, the runs are merged from all of them."""
    if isinstance(monitor.sink, SharedMonitor) and monitor.sink.active:
        await monitor.sink.refresh(rubric, run, history)
    return report(monitor, rubric, run, history)


@router.get("/dashboard", include_in_schema=False)
async def dashboard_page() -> HTMLResponse:
    """The dashboard page (plots over time per rubric and run, alerts on the time axis)."""
    return HTMLResponse((STATIC / "dashboard.html").read_text(encoding="utf-8"))


@router.get("/dashboard/assets/{name}", include_in_schema=False)
async def dashboard_asset(name: str) -> FileResponse:
    """The page's script and styles and the vendored chart library (a fixed list of files)."""
    media = ASSETS.get(name)
    if media is None:
        raise RequestError(f"no asset {name!r}", kind=ErrorKind.NOT_FOUND)
    folder = STATIC if name.startswith("dashboard") else STATIC / "vendor"
    return FileResponse(folder / name, media_type=media)
