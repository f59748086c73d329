"""Rubric health: zero-spread groups, criterion pass rates, saturation and discrimination,
and the ``non_discriminative`` alert, on hand-computed batches and on the simulated runs
of ``bench.rubric_health`` (smaller, deterministic: seeded, no clock)."""

from __future__ import annotations

import json

import pytest

from bench.rubric_health import healthy, saturated, saturating, simulate
from rewardsvc.core.monitor_spec import NON_DISCRIMINATIVE, HealthConfig, MonitorConfig
from rewardsvc.core.results import (
    BatchResult,
    CriterionOutcome,
    ItemReward,
    JudgeOutcome,
    Status,
    Usage,
)
from rewardsvc.core.rollout import Rollout
from rewardsvc.monitor import Monitor
from rewardsvc.monitor.health import MAX_CRITERIA, breach, measure
from rewardsvc.monitor.runs import Sample, grouped
from rewardsvc.monitor.shared_state import (
    decode_alert,
    decode_sample,
    encode_alert,
    encode_sample,
    evaluated,
    mirrored_state,
)
from rewardsvc.scoring.group_plan import GroupIn
from rewardsvc.scoring.groups import GroupBatch, GroupReward
from rewardsvc.scoring.groups import monitored as groups_batch
from rewardsvc.server.monitor_metrics import render_gauges


def item(
    reward: float | None,
    group: str | None,
    scores: dict[str, float] | None = None,
    status: Status = "ok",
) -> ItemReward:
    criteria = {c: CriterionOutcome(s) for c, s in (scores or {}).items()}
    judges = {"j": JudgeOutcome(reward, criteria=criteria)}
    return ItemReward("x", reward, status, judges=judges, group=group)


def samples_of(items: list[ItemReward]) -> list[Sample]:
    samples = [Sample.of(i) for i in items]
    grouped(items, samples)
    return samples


# ------------------------------------------------------------------ the figures


def test_groups_spread_pass_rates_and_discrimination_by_hand() -> None:
    items = [
        # Prompt a: rewards 0.5, 0.5 (zero spread); c1 scored 1, 0 -> variance 0.25.
        item(0.5, "a", {"c1": 1.0, "c2": 0.0}),
        item(0.5, "a", {"c1": 0.0, "c2": 0.0}),
        # Prompt b: rewards 0.2, 0.8, and a judge_error that does not count.
        item(0.2, "b", {"c1": 0.2, "c2": 0.0}),
        item(0.8, "b", {"c1": 0.6, "c2": 0.0}),
        item(None, "b", {"c1": 1.0}, status="judge_error"),
        # Prompt c: one ok item is no group; a degraded one is not ok.
        item(0.9, "c", {"c1": 1.0, "c2": 0.0}),
        item(0.9, "c", {"c1": 1.0, "c2": 0.0}, status="degraded"),
        # No group key (a trainer route's single item).
        item(0.3, None, {"c1": 0.2, "c2": 0.0}),
    ]
    health = measure(samples_of(items), HealthConfig(min_samples=6))
    assert (health.samples, health.groups, health.zero_spread_groups) == (6, 2, 1)
    assert health.zero_spread_share == 0.5
    c1, c2 = health.criteria
    assert c1.criterion == "c1" and c1.samples == 6
    assert c1.pass_rate == pytest.approx((1 + 0 + 0.2 + 0.6 + 1 + 0.2) / 6)
    # Within-group variances: a (1, 0) -> 0.25; b (0.2, 0.6) -> 0.04.
    assert c1.discrimination == pytest.approx((0.25 + 0.04) / 2) and c1.groups == 2
    assert c1.saturated is None
    assert c2.pass_rate == 0.0 and c2.saturated == "low" and c2.discrimination == 0.0
    assert health.saturated() == ("c2",)


def test_epsilon_bounds_zero_spread_and_min_samples_bounds_saturation() -> None:
    items = [item(0.5, "a", {"c": 1.0}), item(0.5 + 5e-4, "a", {"c": 1.0})]
    items += [item(0.5, "b", {"c": 1.0}), item(0.5 + 2e-3, "b", {"c": 1.0})]
    health = measure(samples_of(items), HealthConfig(epsilon=1e-3, min_samples=5))
    assert health.zero_spread_groups == 1  # 5e-4 is within epsilon, 2e-3 is not
    assert health.criteria[0].pass_rate == 1.0
    assert health.criteria[0].saturated is None  # 4 scores < min_samples
    assert measure(samples_of(items), HealthConfig(min_samples=4)).saturated() == ("c",)


def test_the_alert_counts_saturated_criteria_not_exempt_and_waits_for_evidence() -> None:
    items = [item(0.5, None, {"always": 1.0, "never": 0.0, "mixed": n % 2}) for n in range(64)]
    health = measure(samples_of(items), HealthConfig())
    assert health.saturated() == ("always", "never")
    assert breach(health, HealthConfig()) == (1.0, ("always", "never"))
    assert breach(health, HealthConfig(exempt=["never"])) == (0.5, ("always",))
    assert breach(health, HealthConfig(saturated_criteria=1, exempt=["never"])) == (
        1.0,
        ("always",),
    )
    # Fewer scores than min_samples and no groups: nothing to judge yet.
    assert breach(measure(samples_of(items[:10]), HealthConfig()), HealthConfig()) is None


# ------------------------------------------------------------------ simulated runs


def test_a_policy_saturating_two_criteria_raises_non_discriminative_within_512() -> None:
    outcome = simulate("saturated", saturated, 512, seed=3)
    assert outcome.first is not None and outcome.first <= 512
    named = [c for s, n, c in outcome.fired if n == NON_DISCRIMINATIVE]
    assert set(named[0]) == {"clear", "cites_source"}


def test_a_policy_saturating_after_an_onset_raises_it_after_the_onset() -> None:
    outcome = simulate("saturating", saturating, 1024 + 512, seed=4)
    assert outcome.first is not None and 1024 < outcome.first <= 1024 + 512


def test_collapsed_groups_raise_it_on_zero_spread_alone() -> None:
    outcome = simulate("collapsed", healthy, 256, seed=5, collapsed=True)
    assert outcome.first is not None
    assert next(c for s, n, c in outcome.fired if n == NON_DISCRIMINATIVE) == ()


def test_a_healthy_run_raises_none() -> None:
    outcome = simulate("healthy", healthy, 3_000, seed=6)
    assert [f for f in outcome.fired if f[1] == NON_DISCRIMINATIVE] == []


def test_disabled_health_raises_nothing_but_still_measures() -> None:
    config = MonitorConfig(health=HealthConfig(enabled=False))
    outcome = simulate("saturated", saturated, 512, seed=3, config=config)
    assert outcome.first is None


# ------------------------------------------------------------------ the monitor's state


def batch(items: list[ItemReward]) -> BatchResult:
    return BatchResult("qa", "sha256:v", items, Usage(), "r")


def test_a_group_counts_once_and_a_run_reports_health_and_the_signal() -> None:
    monitor = Monitor(lambda _r: MonitorConfig(eval_every=8), clock=lambda: 0.0)
    items = [item(0.5, f"p{n // 4}", {"c": 0.5}) for n in range(8)]
    monitor.observe("qa", "sha256:v", "r", batch(items))
    (state,) = monitor.runs()
    assert state.health is not None
    assert (state.health.groups, state.health.zero_spread_groups) == (2, 2)
    assert state.signals["zero_spread_share"] == 1.0


def test_samples_alerts_and_health_survive_the_shared_encoding() -> None:
    (first, second) = samples_of([item(0.2, "a", {"c": 1.0}), item(0.6, "a", {"c": 0.0})])
    assert first.group is not None and second.group is None
    back = decode_sample(encode_sample(first))
    assert back.group == first.group and back.scores == first.scores == (("c", 1.0),)
    old = json.dumps([0.5, 10, "ok", [], [["c", 1]], None, None]).encode()
    assert decode_sample(old).group is None and decode_sample(old).scores == ()

    monitor = Monitor(clock=lambda: 0.0)
    monitor.observe("qa", "sha256:v", "r", batch([item(0.5, "a", {"c": 1.0})] * 8))
    (state,) = monitor.runs()
    state.tracker.update(NON_DISCRIMINATIVE, 2.0, 1.0, 0.0)
    state.tracker.alerts[NON_DISCRIMINATIVE].criteria = ("c",)
    alert = decode_alert(encode_alert(state.tracker.alerts[NON_DISCRIMINATIVE]))
    assert alert.criteria == ("c",)
    meta = {k.encode(): v.encode() for k, v in evaluated(state).items()}
    mirrored = mirrored_state(("qa", "r"), state.config, meta, [alert], None)
    assert mirrored.health == state.health


def test_groups_of_the_groups_route_count_each_group_once() -> None:
    rollouts = tuple(Rollout("q", f"a{i}") for i in range(3))
    groups = [GroupIn("g1", rollouts), GroupIn("g2", rollouts[:2])]
    results = [
        GroupReward("g1", [0.5, 0.5, 0.5], "ok"),  # a tie: zero spread
        GroupReward("g2", [0.2, 0.9], "ok"),
    ]
    usage = Usage()
    monitored = groups_batch(GroupBatch("qa", "sha256:v", "listwise", results, usage), groups, "r")
    health = measure(samples_of(monitored.items), HealthConfig())
    assert (health.groups, health.zero_spread_groups) == (2, 1)


def test_a_window_of_many_criterion_ids_reports_the_most_scored() -> None:
    items = [item(0.5, None, {f"c{n}": 1.0, "common": 0.5}) for n in range(MAX_CRITERIA + 10)]
    health = measure(samples_of(items), HealthConfig())
    assert len(health.criteria) == MAX_CRITERIA
    assert "common" in [c.criterion for c in health.criteria]


def test_the_alert_and_the_zero_spread_share_are_prometheus_gauges() -> None:
    monitor = Monitor(lambda _r: MonitorConfig(health=HealthConfig(min_groups=2)))
    for b in range(12):  # every group's rewards equal: zero spread
        monitor.observe(
            "qa", "sha256:v", "r", batch([item(0.5, f"{b}-{n // 4}") for n in range(16)])
        )
    families = {f.name: f for f in render_gauges(monitor)}
    alerts = {s.labels["alert"]: s.value for s in families["rewardsvc_monitor_alert"].samples}
    assert alerts[NON_DISCRIMINATIVE] == 1.0
    signals = {s.labels["signal"]: s.value for s in families["rewardsvc_monitor_signal"].samples}
    assert signals["zero_spread_share"] == 1.0
