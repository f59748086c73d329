"""``GET /v1/monitor``, the monitor's Prometheus gauges, the alert event line and webhook."""

from __future__ import annotations

import random
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request
from prometheus_client import CollectorRegistry, generate_latest
from test_monitor import CONFIG, Clock, batch, clean, item

from rewardsvc.application.monitoring import Webhook, event_record, fan_out
from rewardsvc.monitor import AlertEvent, Monitor
from rewardsvc.monitor.golden import IdentityRecord
from rewardsvc.protocol.monitor import IdentityOut
from rewardsvc.server.app import install_error_handlers
from rewardsvc.server.dashboard import router
from rewardsvc.server.monitor_metrics import attach, render_gauges
from rewardsvc.server.monitor_views import view


def hacked_monitor(**kwargs: object) -> Monitor:
    """A monitor with a clean run and one whose fake-score flags surged."""
    rng = random.Random(11)
    monitor = Monitor(lambda _: CONFIG, clock=Clock(), **kwargs)  # type: ignore[arg-type]
    for run in ("clean", "hacked"):
        items = clean(rng, 128)
        if run == "hacked":
            items += [
                item(0.95, 300, flags=("fake_score",)) if n % 3 == 0 else i
                for n, i in enumerate(clean(rng, 128))
            ]
        else:
            items += clean(rng, 128)
        for start in range(0, len(items), 32):
            monitor.observe("qa", "sha256:v1", run, batch(items[start : start + 32]))
    monitor.observe("other", "sha256:o", None, batch(clean(rng, 4)))
    return monitor


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    app.include_router(router)
    app.state.monitor = hacked_monitor()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c


async def test_monitor_lists_runs_with_signals_and_alerts(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/monitor")).json()
    assert [(r["rubric"], r["run"]) for r in body["runs"]] == [
        ("other", "default"),
        ("qa", "hacked"),
        ("qa", "clean"),
    ]
    hacked = body["runs"][1]
    assert hacked["samples"] == 256
    assert set(hacked) == {
        "rubric",
        "run",
        "version",
        "samples",
        "started",
        "last_seen",
        "signals",
        "alerts",
        "health",
        "history",
    }
    assert hacked["history"] is None
    assert hacked["signals"]["flag_rate:fake_score"] > 0.2
    (alert,) = [a for a in hacked["alerts"] if a["name"] == "flag_rate:fake_score"]
    assert alert["state"] == "firing"
    assert alert["value"] >= alert["threshold"]
    for stamp in (alert["since"], hacked["started"], hacked["last_seen"]):
        assert stamp.endswith("Z")
        datetime.fromisoformat(stamp)
    assert body["runs"][2]["alerts"] == []
    assert body["canaries"] == []


async def test_monitor_filters_by_rubric_and_run(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/monitor", params={"rubric": "qa", "run": "clean"})).json()
    assert [(r["rubric"], r["run"]) for r in body["runs"]] == [("qa", "clean")]
    body = (await client.get("/v1/monitor", params={"run": "default"})).json()
    assert [r["rubric"] for r in body["runs"]] == ["other"]
    assert (await client.get("/v1/monitor", params={"rubric": "nope"})).json()["runs"] == []


async def test_history_has_one_axis_for_every_series_and_the_alert_marks(
    client: httpx.AsyncClient,
) -> None:
    body = (await client.get("/v1/monitor", params={"run": "hacked", "history": "true"})).json()
    history = body["runs"][0]["history"]
    n = len(history["times"])
    assert n == len(history["samples"]) == 256 // CONFIG.eval_every
    assert all(len(v) == n for v in history["series"].values())
    assert {"reward_mean", "reward_length_corr", "flag_rate:fake_score"} <= set(history["series"])
    # Drift needs the baseline: absent (null) before it was complete.
    assert history["series"]["reward_drift"][0] is None
    assert any(
        e["kind"] == "firing" and e["name"] == "flag_rate:fake_score" for e in history["events"]
    )


async def test_dashboard_page_and_assets_are_served(client: httpx.AsyncClient) -> None:
    page = await client.get("/dashboard")
    assert page.status_code == 200 and "uPlot.iife.min.js" in page.text
    script = await client.get("/dashboard/assets/uPlot.iife.min.js")
    assert script.status_code == 200 and "uPlot" in script.text
    assert script.headers["content-type"].startswith("application/javascript")
    assert (await client.get("/dashboard/assets/..%2Fdashboard.py")).status_code == 404


async def test_without_a_monitor_the_route_says_so() -> None:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(router)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        assert (await c.get("/v1/monitor")).status_code == 503


def test_gauges_cover_only_the_most_recent_runs() -> None:
    monitor = hacked_monitor()
    families = {m.name: m for m in render_gauges(monitor, max_runs=2)}
    runs = {
        (s.labels["rubric"], s.labels["run"]) for s in families["rewardsvc_monitor_samples"].samples
    }
    assert runs == {("other", "default"), ("qa", "hacked")}
    firing = [s for s in families["rewardsvc_monitor_alert"].samples if s.value == 1.0]
    assert {s.labels["alert"] for s in firing} >= {"flag_rate:fake_score"}
    registry = CollectorRegistry()
    attach(monitor, max_runs=1, registry=registry)
    text = generate_latest(registry).decode()
    assert 'rewardsvc_monitor_samples{rubric="other",run="default"} 4.0' in text
    assert 'run="hacked"' not in text
    attach(hacked_monitor(), max_runs=3, registry=registry)
    assert 'run="hacked"' in generate_latest(registry).decode()


def test_event_record_is_one_json_object_with_a_utc_time() -> None:
    event = AlertEvent("qa", "r1", "reward_length_corr", "firing", 1_750_000_000.5, 96, 0.6, 0.35)
    record = event_record(event)
    assert record == {
        "time": "2025-06-15T15:06:40.500Z",
        "event": "monitor_alert",
        "rubric": "qa",
        "run": "r1",
        "alert": "reward_length_corr",
        "state": "firing",
        "value": 0.6,
        "threshold": 0.35,
        "sample": 96,
    }


def test_a_record_view_reads_unix_seconds_as_python_does() -> None:
    # pydantic alone would round this one's microseconds up and take 3e10 for milliseconds.
    checked, changed = 1_130_489_325.5390625, 3e10
    ident = IdentityRecord("j", {"model": "m"}, checked, changed=changed, rubrics=("qa",))
    out = view(IdentityOut, ident)
    assert (out.checked, out.changed) == (
        datetime.fromtimestamp(checked, UTC),
        datetime.fromtimestamp(changed, UTC),
    )
    assert out.model_dump(mode="json")["checked"] == "2005-10-28T08:48:45.539062Z"


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict]]]:
    """A real HTTP server on loopback that records the JSON bodies posted to /hook."""
    received: list[dict] = []
    app = FastAPI()

    @app.post("/hook")
    async def hook(request: Request) -> dict[str, bool]:
        received.append(await request.json())
        return {"ok": True}

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/hook", received
    server.should_exit = True
    thread.join(timeout=10)


async def test_alerts_reach_the_webhook_and_every_sink(receiver: tuple[str, list[dict]]) -> None:
    url, received = receiver
    logged: list[AlertEvent] = []
    async with httpx.AsyncClient() as http:
        webhook = Webhook(url, http=http)
        hacked_monitor(on_event=fan_out(logged.append, None, webhook))
        await webhook.drain()
    assert logged and received
    # Posts run concurrently, so they may arrive in any order.
    expected = [event_record(e) for e in logged]
    assert sorted(received, key=str) == sorted(expected, key=str)
    assert any(r["alert"] == "flag_rate:fake_score" and r["state"] == "firing" for r in received)


async def test_a_dead_webhook_does_not_fail_scoring() -> None:
    async with httpx.AsyncClient() as http:
        webhook = Webhook("http://127.0.0.1:9/hook", timeout_s=1, http=http)
        monitor = hacked_monitor(on_event=webhook)
        await webhook.drain()
    assert monitor.runs("qa", "hacked")[0].tracker.firing()
