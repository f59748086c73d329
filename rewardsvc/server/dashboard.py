"""The monitor's routes: ``GET /v1/monitor`` (JSON) and the ``/dashboard`` page.

The page is static HTML and JavaScript with a vendored copy of uPlot (no build step, no
CDN); it polls ``/v1/monitor?history=true``. The response models are in
``rewardsvc.protocol.monitor``; they are built here from the monitor's state. Also here:
the JSON line of an alert event (for the reward log), the optional webhook that posts it,
and the canary runner's scorer over the engine.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import httpx
from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse

from rewardsvc.core.monitor_spec import MonitorConfig, inline_rubric_name
from rewardsvc.core.observe import NullObserver
from rewardsvc.core.results import BatchResult
from rewardsvc.core.rollout import ItemIn, Rollout, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.registry import Registry
from rewardsvc.monitor import AlertEvent, CanaryRecord, Monitor, RunState
from rewardsvc.monitor.canaries import ScoreFn
from rewardsvc.monitor.shared import SharedMonitor
from rewardsvc.protocol.monitor import (
    AlertOut,
    CanaryOut,
    EventOut,
    HistoryOut,
    MonitorReport,
    RunOut,
)
from rewardsvc.scoring.engine import Engine
from rewardsvc.server.access import can_read, can_read_rubric
from rewardsvc.server.dispatch import INLINE_LABEL
from rewardsvc.server.reward_log import RewardLog
from rewardsvc.storage.redis_link import RedisLink

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
ASSETS = {
    "dashboard.js": "application/javascript",
    "dashboard.css": "text/css",
    "uPlot.iife.min.js": "application/javascript",
    "uPlot.min.css": "text/css",
}


def iso(t: float) -> datetime:
    """Unix seconds as an aware UTC datetime (serialized as ISO 8601 with ``Z``)."""
    return datetime.fromtimestamp(t, UTC)


# ------------------------------------------------------------------ mapping


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


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
        alerts=[
            AlertOut(
                name=a.name, state=a.state, since=iso(a.since), value=a.value, threshold=a.threshold
            )
            for a in state.tracker.alerts.values()
        ],
        history=hist,
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
        since=iso(c.since) if c.since is not None else None,
        checked=iso(c.time),
        history=[(iso(t), r, a) for t, r, a in c.history] if history else None,
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
    )


# ------------------------------------------------------------------ events out


def event_record(event: AlertEvent) -> dict[str, Any]:
    """The JSON object of an alert event: a reward-log line and the webhook's body."""
    return {
        "time": iso(event.time).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "event": "monitor_alert",
        "rubric": event.rubric,
        "run": event.run,
        "alert": event.name,
        "state": event.state,
        "value": event.value,
        "threshold": event.threshold,
        "sample": event.sample,
    }


class Webhook:
    """Posts every alert event as JSON to a URL, off the scoring path (failures are logged).

    It owns its HTTP client unless one is given; :meth:`aclose` waits for the posts in
    flight and closes it."""

    def __init__(
        self, url: str, timeout_s: float = 5.0, http: httpx.AsyncClient | None = None
    ) -> None:
        self.url, self.timeout_s = url, timeout_s
        self._owned = http is None
        self.http = http or httpx.AsyncClient()
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, event: AlertEvent) -> None:
        """Schedule the post on the running loop."""
        try:
            task = asyncio.get_running_loop().create_task(self._post(event_record(event)))
        except RuntimeError:
            log.warning("monitor webhook: no event loop; alert %s not posted", event.name)
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _post(self, body: dict[str, Any]) -> None:
        try:
            response = await self.http.post(self.url, json=body, timeout=self.timeout_s)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            log.warning("monitor webhook %s failed: %s", self.url, exc)

    async def drain(self) -> None:
        """Wait for the posts in flight."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Wait for the posts in flight, then close the client this webhook owns."""
        await self.drain()
        if self._owned:
            await self.http.aclose()


def fan_out(*sinks: Callable[[AlertEvent], None] | None) -> Callable[[AlertEvent], None]:
    """One event callback that calls every given sink in turn; a sink that raises is
    logged and does not keep the event from the others."""
    chosen = [s for s in sinks if s is not None]

    def send(event: AlertEvent) -> None:
        for sink in chosen:
            try:
                sink(event)
            except Exception:
                log.exception("monitor: an alert sink failed for %s", event.name)

    return send


def alert_logger(reward_log: RewardLog) -> Callable[[AlertEvent], None]:
    """The sink that writes each alert event to the reward log (the line of
    :func:`event_record`, timed by the log)."""

    def write(event: AlertEvent) -> None:
        fields = {k: v for k, v in event_record(event).items() if k not in ("time", "event")}
        reward_log.event("monitor_alert", **fields)

    return write


CANARY_LABEL = "canary"
"""The metrics label of canary batches; the monitor does not count them in any run."""


class MonitorObserver(NullObserver):
    """Feeds every scored batch to the monitor under its (rubric, run) — the engine reports
    each batch through the observer interface, whichever route or recipe asked for it.
    Canary batches are left out: they are the monitor's own probes, not a run's traffic.
    Inline rubrics and recipes (the engine's ``INLINE_LABEL``) are observed under
    :func:`inline_rubric_name`, apart from every library rubric's runs."""

    def __init__(self, monitor: Monitor):
        self.monitor = monitor

    def shared_state(self, healthy: bool) -> None:
        """Redis is back: send the batches observed while it was away."""
        if healthy and isinstance(self.monitor.sink, SharedMonitor):
            self.monitor.sink.resync()

    def batch(self, label: str, result: BatchResult) -> None:
        """Observe a batch (never raises: a monitor bug must not fail a reward)."""
        if label == CANARY_LABEL:
            return
        rubric = result.rubric_id
        if label == INLINE_LABEL:
            rubric = inline_rubric_name(rubric, result.version)
        try:
            self.monitor.observe(rubric, result.version, result.run, result)
        except Exception:
            log.exception("monitor: observing a batch of %s failed", result.rubric_id)

    def groups(self, label: str, result: BatchResult) -> None:
        """Group rewards are a run's rewards too: observed as a batch is."""
        self.batch(label, result)


def share_monitor(monitor: Monitor, link: RedisLink | None) -> None:
    """Merge the monitor's runs with the other replicas' through ``link`` (once; nothing
    without a link). A run's shared statistics expire like a calibration window."""
    if link is not None and monitor.sink is None:
        monitor.sink = SharedMonitor(monitor, link, link.window_ttl_s)


def monitor_config(registry: Registry, rubric_id: str) -> MonitorConfig:
    """A library rubric's monitor settings; the defaults for others (inline rubrics)."""
    try:
        configured = registry.get(rubric_id).rubric.monitor
    except KeyError:
        configured = None
    return configured or MonitorConfig()


def canary_scorer(engine: Engine, rubric_of: Callable[[str], Rubric]) -> ScoreFn:
    """The canary runner's ``score``: one judge of the engine, no cache (a swapped model or
    edited prompt must be asked again), counted in metrics under the label ``canary``.

    Canary batches go to the engine directly, not through the routes, so they never count
    in a run's monitor statistics.
    """

    async def score(rubric_id: str, items: list[dict[str, Any]], judge: str) -> BatchResult:
        batch = [
            ItemIn(str(i["id"]), Rollout(i["prompt"], i["completion"], i.get("reference")))
            for i in items
        ]
        options = ScoreOptions(judges=(judge,), min_judges=1, use_cache=False)
        rubric = rubric_of(rubric_id)
        return await engine.score(rubric, batch, options, metrics_label=CANARY_LABEL)

    return score


# ------------------------------------------------------------------ routes


async def get_monitor(request: Request) -> Monitor:
    """The app's monitor: ``app.state.service.monitor``, else ``app.state.monitor``."""
    service = getattr(request.app.state, "service", None)
    monitor: Monitor | None = getattr(service, "monitor", None) or getattr(
        request.app.state, "monitor", None
    )
    if monitor is None:
        raise HTTPException(503, "the monitor is not running")
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
    """Per (rubric, run): samples, current signals and alerts; and the canaries' latest scores.

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
        raise HTTPException(404, f"no asset {name!r}")
    folder = STATIC if name.startswith("dashboard") else STATIC / "vendor"
    return FileResponse(folder / name, media_type=media)
