"""Monitor integrity: inline rubrics apart from the library's runs, attack-flag ceilings that
alarm without a baseline, and run-name churn that neither evicts an established run nor
leaves keys behind in Redis."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fakejudge import FakeJudge
from pydantic import ValidationError
from redis_server import RedisServer
from test_api_support import ITEM, app_client, fake_pool, settings_for, write_library
from test_monitor import Clock, batch, item

from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.core.results import ItemReward
from rewardsvc.core.rubric import Rubric
from rewardsvc.monitor import Monitor
from rewardsvc.monitor.shared import SHORT_LIVED_TTL_S, SharedMonitor
from rewardsvc.storage.redis_link import RedisLink


@pytest_asyncio.fixture(loop_scope="function")  # the test's own loop, where the link lives
async def link(tmp_path: Path) -> AsyncIterator[RedisLink]:
    """A link to a real Redis of its own (keys under the prefix ``t``)."""
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    shared = RedisLink(redis.url, timeout_s=2.0, prefix="t")
    try:
        await shared.start()
        yield shared
    finally:
        await shared.aclose()
        redis.stop()


def shared_monitor(link: RedisLink, **kwargs: Any) -> tuple[Monitor, SharedMonitor]:
    """A monitor whose runs are merged through ``link``, as one replica's."""
    monitor = Monitor(**kwargs)
    sink = SharedMonitor(monitor, link, ttl_s=30 * 86_400)
    monitor.sink = sink
    return monitor, sink


# ------------------------------------------------------------------ inline rubrics


async def test_an_inline_rubric_reusing_a_library_id_leaves_the_library_run_alone(
    tmp_path: Path,
) -> None:
    """The issue's reproduction: 60 samples of library ``tiny`` in run ``prod``, then an
    inline rubric with the id ``tiny`` posted to the same run, three times over."""
    inline = {
        "id": "tiny",
        "criteria": [{"id": "short", "text": "The response is short."}],
        "judges": ["primary"],
    }
    with FakeJudge() as primary, FakeJudge() as secondary:
        settings = settings_for(write_library(tmp_path / "rubrics"))
        async with app_client(settings, fake_pool(primary.url, secondary.url)) as (http, app, _):
            items = [{**ITEM, "id": str(n)} for n in range(60)]
            reply = await http.post(
                "/v1/rewards", json={"rubric": "tiny", "items": items, "run": "prod"}
            )
            assert reply.status_code == 200, reply.text
            library_version = reply.json()["rubric"]["version"]
            for _ in range(3):
                reply = await http.post(
                    "/v1/rewards", json={"rubric": inline, "items": [ITEM], "run": "prod"}
                )
                assert reply.status_code == 200, reply.text
            inline_version = reply.json()["rubric"]["version"]
            report = (await http.get("/v1/monitor", params={"history": "true"})).json()
            monitor = app.state.service.monitor
            (library_state,) = monitor.runs("tiny", "prod")
    runs = {(r["rubric"], r["run"]): r for r in report["runs"]}
    assert set(runs) == {("tiny", "prod"), (f"inline:tiny@{inline_version}", "prod")}
    production = runs[("tiny", "prod")]
    assert production["samples"] == 60 and production["version"] == library_version
    assert [e for e in production["history"]["events"] if e["kind"] == "version"] == []
    assert len(library_state.window) == 60
    assert runs[(f"inline:tiny@{inline_version}", "prod")]["samples"] == 3


def test_no_library_rubric_can_take_the_inline_namespace() -> None:
    document = {
        "id": "inline:tiny@1",
        "criteria": [{"id": "short", "text": "The response is short."}],
        "judges": ["primary"],
    }
    with pytest.raises(ValidationError, match="id"):
        Rubric.model_validate(document)
    Rubric.model_validate({**document, "id": "tiny"})


# ------------------------------------------------------------------ attack-flag ceilings


def hacked_stream(rng: random.Random) -> list[ItemReward]:
    """120 clean samples, then 240 flagged as injections (the issue's CPU-judge run)."""
    clean = [item(rng.uniform(0.3, 0.8), rng.randint(200, 800)) for _ in range(120)]
    flags = ("injection_suspected",)
    return clean + [item(rng.uniform(0.8, 1.0), rng.randint(200, 800), flags) for _ in range(240)]


def test_a_run_hacked_from_its_start_alerts_before_its_baseline_exists() -> None:
    """120 clean, then 240 injection-flagged samples (the default monitor settings: window
    128, baseline 512): the ceiling fires before sample 360, and the baseline kept out the
    attack's samples."""
    rng = random.Random(13)
    fired: list[tuple[str, int]] = []
    monitor = Monitor(on_event=lambda e: fired.append((e.name, e.sample)), clock=Clock())
    stream = hacked_stream(rng)
    for start in range(0, len(stream), 8):
        monitor.observe("r", "v1", "a", batch(stream[start : start + 8]))
    (run,) = monitor.runs()
    assert ("flag_ceiling:injection_suspected", 152) in fired, fired
    assert run.tracker.alerts["flag_ceiling:injection_suspected"].state == "firing"
    assert run.signals["flag_rate:injection_suspected"] == 1.0
    baseline = run._baseline_samples or []
    flagged = sum("injection_suspected" in s.flags for s in baseline)
    assert len(baseline) < 150 and flagged <= 16, (len(baseline), flagged)


async def test_the_shared_monitor_alerts_and_keeps_the_attack_out_of_the_baseline(
    link: RedisLink,
) -> None:
    """The same stream through Redis (as behind several replicas)."""
    fired: list[str] = []
    monitor, sink = shared_monitor(link, on_event=lambda e: fired.append(e.name))
    stream = hacked_stream(random.Random(13))
    for start in range(0, len(stream), 8):
        monitor.observe("r", "v1", "a", batch(stream[start : start + 8]))
        await sink.drain()
    assert link._client is not None  # the link's own connection, to read the baseline
    baseline = await link._client.llen(b"t:monitor:1:r:a:base")
    assert "flag_ceiling:injection_suspected" in fired
    assert baseline < 150, baseline


def test_a_healthy_stream_with_rare_benign_flags_raises_no_alert() -> None:
    rng = random.Random(5)
    fired: list[str] = []
    monitor = Monitor(on_event=lambda e: fired.append(e.name), clock=Clock())
    stream = [
        item(
            rng.uniform(0.3, 0.8),
            rng.randint(200, 800),
            flags=("injection_suspected",) if rng.random() < 0.005 else (),
        )
        for _ in range(10_000)
    ]
    for start in range(0, len(stream), 16):
        monitor.observe("r", "v1", "a", batch(stream[start : start + 16]))
    (run,) = monitor.runs()
    assert run.samples == 10_000 and "flag_ceiling:injection_suspected" in run.signals
    assert fired == []


def test_the_ceiling_is_set_in_the_rubric_monitor_section() -> None:
    config = MonitorConfig.model_validate(
        {"attack_flags": ["padding"], "ceiling_window": 32, "rules": {"flag_ceiling": 0.5}}
    )
    rule = config.rule("flag_ceiling:padding")
    assert rule is not None and rule.threshold == 0.5 and rule.rise is None
    monitor = Monitor(lambda _: config, clock=Clock())
    padded = [item(0.9, 900, flags=("padding",)) for _ in range(160)]
    monitor.observe("r", "v1", "a", batch(padded))
    monitor.observe("r", "v1", "a", batch([item(0.5) for _ in range(8)]))
    (run,) = monitor.runs()
    assert run.signals["flag_ceiling:padding"] == pytest.approx(24 / 32)
    assert "flag_ceiling:injection_suspected" not in run.signals


# ------------------------------------------------------------------ run-name churn

SMALL = MonitorConfig(window=16, baseline=16, eval_every=4, for_evals=2)


def test_churn_of_run_names_keeps_the_established_run() -> None:
    rng = random.Random(2)
    monitor = Monitor(lambda _: SMALL, max_runs=16, clock=Clock())
    monitor.observe("r", "v1", "prod", batch([item(rng.random()) for _ in range(64)]))
    for n in range(1_000):
        monitor.observe("r", "v1", f"churn-{n}", batch([item(0.5)]))
    runs = [r.run for r in monitor.runs()]
    assert len(runs) == 16 and "prod" in runs
    assert monitor.runs(run="prod")[0].samples == 64


async def test_churn_in_redis_leaves_bounded_keys_and_keeps_the_established_run(
    link: RedisLink,
) -> None:
    monitor, sink = shared_monitor(link, config_for=lambda _: SMALL, max_runs=16)
    rng = random.Random(4)
    for _ in range(4):
        monitor.observe("r", "v1", "prod", batch([item(rng.random()) for _ in range(16)]))
        await sink.drain()
    for n in range(1_000):
        monitor.observe("r", "v1", f"churn-{n}", batch([item(0.5)]))
        if n % 50 == 0:
            await sink.drain()
    await sink.drain()
    client = link._client  # the link's own connection, for counting keys
    assert client is not None
    keys = [k async for k in client.scan_iter(match=b"t:monitor:*", count=1000)]
    # At most six keys per listed run, plus the list itself.
    assert len(keys) <= 6 * 16 + 1, len(keys)
    assert await client.exists(b"t:monitor:1:r:prod:meta")
    assert await client.ttl(b"t:monitor:1:r:prod:meta") > SHORT_LIVED_TTL_S
    churned = [k for k in keys if b":churn-" in k]
    ttls = [await client.ttl(k) for k in churned]
    assert churned and all(0 < t <= SHORT_LIVED_TTL_S for t in ttls), ttls
    assert await sink.refresh()
    assert "prod" in [r.run for r in monitor.runs()]
    assert monitor.runs(run="prod")[0].samples == 64
    # A replica that just started knows nothing of the runs: with the list full of
    # established runs, its first batch of prod and a churn must not evict prod.
    for n in range(15):
        monitor.observe("r", "v1", f"big-{n}", batch([item(0.5) for _ in range(16)]))
    await sink.drain()
    fresh, fresh_sink = shared_monitor(link, config_for=lambda _: SMALL, max_runs=16)
    fresh.observe("r", "v1", "prod", batch([item(0.5)]))
    await fresh_sink.drain()
    for n in range(100):
        fresh.observe("r", "v1", f"late-{n}", batch([item(0.5)]))
    await fresh_sink.drain()
    assert await fresh_sink.refresh()
    assert fresh.runs(run="prod")[0].samples == 65
    assert await client.ttl(b"t:monitor:1:r:prod:meta") > SHORT_LIVED_TTL_S
