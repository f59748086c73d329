"""The monitor's routes: ``GET /v1/monitor`` (JSON) and the ``/dashboard`` page.

The page is static HTML and JavaScript with a vendored copy of uPlot (no build step, no
CDN); it polls ``/v1/monitor?history=true``. The response models are in
``rewardsvc.protocol.monitor``; they are built here from the monitor's state. What feeds
the monitor and where its alerts go is wired in ``rewardsvc.application.monitoring``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, HTMLResponse

from rewardsvc.application.monitoring import iso
from rewardsvc.core.errors import ErrorKind, RequestError, Unavailable
from rewardsvc.monitor import CanaryRecord, Monitor, RunState
from rewardsvc.monitor.alerts import Alert
from rewardsvc.monitor.health import Health
from rewardsvc.monitor.shared import SharedMonitor
from rewardsvc.monitor.spend import RunCost
from rewardsvc.monitor.toolloops import RunLoops
from rewardsvc.protocol.monitor import (
    AlertOut,
    CanaryOut,
    EventOut,
    HealthOut,
    HistoryOut,
    MonitorReport,
    RunOut,
    SpendOut,
    ToolLoopsOut,
)
from rewardsvc.server.access import GRANT, can_read, can_read_rubric, can_read_run
from rewardsvc.server.golden import golden_out, identity_out

STATIC = Path(__file__).parent / "static"
ASSETS = {
    "dashboard.js": "application/javascript",
    "dashboard.css": "text/css",
    "uPlot.iife.min.js": "application/javascript",
    "uPlot.min.css": "text/css",
}


# ------------------------------------------------------------------ mapping


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def health_out(health: Health) -> HealthOut:
    """The wire view of a run's rubric health (:meth:`Health.report`)."""
    return HealthOut.model_validate(health.report())


def run_out(state: RunState, history: bool) -> RunOut:
    """The wire view of one run."""
    hist = None
    if history:
        h = state.history
        hist = HistoryOut(
            times=[iso(t) for t in h.times],
            samples=[int(s) for s in h.samples],
            series={k: [_finite(v) for v in col] for k, col in h.columns.items()},
            events=[
                EventOut(time=iso(e.time), sample=e.sample, kind=e.kind, name=e.name)
                for e in state.events
            ],
        )
    return RunOut(
        rubric=state.rubric,
        run=state.run,
        version=state.version,
        samples=state.samples,
        started=iso(state.started),
        last_seen=iso(state.last_seen),
        signals=state.signals,
        alerts=[alert_out(a) for a in state.tracker.alerts.values()],
        health=health_out(state.health) if state.health is not None else None,
        history=hist,
    )


def alert_out(a: Alert) -> AlertOut:
    """The wire view of one alert."""
    return AlertOut(
        name=a.name,
        state=a.state,
        since=iso(a.since),
        value=a.value,
        threshold=a.threshold,
        criteria=list(a.criteria),
    )


def loops_out(e: RunLoops) -> ToolLoopsOut:
    """The wire view of one (rubric, run)'s tool loops."""
    alert = e.alert
    return ToolLoopsOut(
        rubric=e.rubric,
        run=e.run,
        loops=e.loops,
        tool_calls=e.tool_calls,
        outcomes=dict(e.outcomes),
        unfinished_share=e.unfinished_share,
        baseline=e.baseline,
        threshold=e.threshold,
        alert=alert_out(alert) if alert is not None else None,
        last_seen=iso(e.last_seen),
    )


def canary_out(c: CanaryRecord, history: bool) -> CanaryOut:
    """The wire view of one canary record."""
    return CanaryOut(
        rubric=c.rubric,
        judge=c.judge,
        attack=c.attack,
        reward=c.reward,
        anchor_reward=c.anchor_reward,
        good_reward=c.good_reward,
        margin=c.margin,
        alert=c.alert,
        share_above=c.share_above,
        since=iso(c.since) if c.since is not None else None,
        checked=iso(c.time),
        history=[(iso(t), r, a) for t, r, a in c.history] if history else None,
    )


def spend_out(cost: RunCost) -> SpendOut:
    """The wire form of one run's cost and budget."""
    since = cost.exceeded_since
    return SpendOut(
        run=cost.run,
        cost=cost.cost,
        budget=cost.budget,
        exceeded=cost.exceeded,
        exceeded_since=iso(since) if since is not None else None,
        judge_calls=cost.judge_calls,
        rewards=cost.rewards,
        cost_per_reward=cost.cost_per_reward,
        last_seen=iso(cost.last_seen),
    )


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
            spend_out(c)
            for c in monitor.spend.runs()
            if (run is None or c.run == run) and can_read_run(c.run)
        ],
        golden=[
            golden_out(g, history)
            for g in monitor.golden.records(rubric)
            if can_read_rubric(g.rubric)
        ],
        # What serves the judges is the operator's: unrestricted keys see it.
        judges=[identity_out(i) for i in monitor.golden.identities()]
        if GRANT.get() is None
        else [],
        tool_loops=[
            loops_out(e) for e in monitor.tool_loops.runs(rubric, run) if can_read(e.rubric, e.run)
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
