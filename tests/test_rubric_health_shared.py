"""Rubric health across replicas: groups observed by different in-process monitors sharing
a real Redis merge into one run's health, and ``non_discriminative`` is sent once."""

from __future__ import annotations

from pathlib import Path

from redis_server import RedisServer

from rewardsvc.application.monitoring import share_monitor
from rewardsvc.core.monitor_spec import NON_DISCRIMINATIVE, HealthConfig, MonitorConfig
from rewardsvc.core.results import (
    BatchResult,
    CriterionOutcome,
    ItemReward,
    JudgeOutcome,
    Usage,
)
from rewardsvc.monitor import AlertEvent, Monitor
from rewardsvc.storage.redis_link import RedisLink


def grouped_batch(start: int) -> BatchResult:
    """Two prompts x four completions, every completion of a prompt scored alike, and a
    criterion everyone passes."""
    items = []
    for n in range(8):
        prompt, reward = f"p{start}-{n // 4}", 0.25 + 0.5 * (n // 4)
        criteria = {"always": CriterionOutcome(1.0), "mixed": CriterionOutcome(reward)}
        judges = {"j": JudgeOutcome(reward, criteria=criteria)}
        items.append(ItemReward(f"{start}-{n}", reward, "ok", judges=judges, group=prompt))
    return BatchResult("r", "v1", items, Usage(), "a")


async def test_replicas_merge_groups_and_send_the_alert_once(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    health = HealthConfig(min_groups=4, min_samples=16)
    config = MonitorConfig(window=32, baseline=16, eval_every=8, for_evals=2, health=health)
    events: list[AlertEvent] = []
    links = [RedisLink(redis.url, timeout_s=1.0, prefix="h") for _ in range(2)]
    monitors = []
    for link in links:
        monitor = Monitor(lambda _rubric: config, on_event=events.append)
        share_monitor(monitor, link)
        monitors.append(monitor)
    try:
        for b in range(12):
            monitors[b % 2].observe("r", "v1", "a", grouped_batch(b))
            await monitors[b % 2].sink.drain()  # type: ignore[union-attr]
        assert await monitors[0].sink.refresh()  # type: ignore[union-attr]
        run = monitors[0].runs()[0]
        assert run.samples == 96
        assert run.health is not None
        assert (run.health.groups, run.health.zero_spread_groups) == (8, 8)  # 32 samples
        assert run.health.saturated() == ("always",)
        assert run.tracker.alerts[NON_DISCRIMINATIVE].state == "firing"
        fired = [e for e in events if e.name == NON_DISCRIMINATIVE and e.state == "firing"]
        assert len(fired) == 1 and fired[0].criteria == ("always",)
        # Each replica's own view counted only its half.
        assert [m._runs[("r", "a")].samples for m in monitors] == [48, 48]
    finally:
        for link in links:
            await link.aclose()
        redis.stop()
