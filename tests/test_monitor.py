"""The monitor's statistics, alert rules, per-run state and bounds (pure, no I/O)."""

from __future__ import annotations

import math
import random

import pytest

from rewardsvc.core.results import (
    BatchResult,
    CriterionOutcome,
    ItemReward,
    JudgeOutcome,
    Usage,
)
from rewardsvc.monitor import AlertEvent, Monitor, MonitorConfig, Rule
from rewardsvc.monitor.alerts import AlertTracker
from rewardsvc.monitor.runs import History
from rewardsvc.monitor.stats import ks_statistic, quantile, ranks, spearman

CONFIG = MonitorConfig(window=64, baseline=64, eval_every=8, for_evals=2)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_750_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def item(
    reward: float | None,
    length: int = 100,
    flags: tuple[str, ...] = (),
    status: str = "ok",
    judge_scores: tuple[float, ...] = (),
    criteria: dict[str, float] | None = None,
    uncertainty: float | None = 0.05,
) -> ItemReward:
    judges = {
        f"j{n}": JudgeOutcome(
            score=s,
            criteria={c: CriterionOutcome(score=v) for c, v in (criteria or {}).items()},
        )
        for n, s in enumerate(judge_scores or ((reward,) if reward is not None else ()))
    }
    return ItemReward(
        id="x",
        reward=reward,
        status=status,  # type: ignore[arg-type]
        uncertainty=uncertainty,
        judges=judges,
        flags=list(flags),
        completion_chars=length,
    )


def batch(items: list[ItemReward], version: str = "v1") -> BatchResult:
    return BatchResult("r", version, items, Usage())


def clean(rng: random.Random, n: int) -> list[ItemReward]:
    return [item(rng.uniform(0.3, 0.8), rng.randint(200, 800)) for _ in range(n)]


def feed(monitor: Monitor, items: list[ItemReward], run: str = "a", version: str = "v1") -> None:
    for start in range(0, len(items), 16):
        monitor.observe("r", version, run, batch(items[start : start + 16], version))


def alert_names(monitor: Monitor, run: str = "a", state: str = "firing") -> set[str]:
    (state_,) = monitor.runs("r", run)
    return {a.name for a in state_.tracker.alerts.values() if a.state == state}


# ------------------------------------------------------------------ statistics


def test_ranks_share_ties() -> None:
    assert ranks([10.0, 20.0, 20.0, 5.0]) == [2.0, 3.5, 3.5, 1.0]


def test_spearman_sees_monotone_not_linear_relation() -> None:
    xs = [float(x) for x in range(1, 30)]
    assert spearman(xs, [x**3 for x in xs]) == pytest.approx(1.0)
    assert spearman(xs, [-x for x in xs]) == pytest.approx(-1.0)
    assert spearman(xs, [1.0] * len(xs)) is None


def test_ks_is_zero_for_equal_and_one_for_disjoint_samples() -> None:
    a = [0.1, 0.2, 0.3, 0.4]
    assert ks_statistic(a, list(a)) == 0.0
    assert ks_statistic(a, [0.6, 0.7]) == 1.0
    assert ks_statistic([0.1, 0.2, 0.3, 0.4], [0.3, 0.4, 0.5, 0.6]) == pytest.approx(0.5)


def test_quantile_interpolates() -> None:
    assert quantile([0.0, 1.0], 0.25) == pytest.approx(0.25)
    assert quantile([], 0.5) is None


# ------------------------------------------------------------------ alert state machine


def test_alert_goes_pending_then_firing_then_resolved() -> None:
    tracker = AlertTracker(for_evals=2)
    assert tracker.update("s", 0.9, 0.5, 1.0) is None
    assert tracker.alerts["s"].state == "pending"
    assert tracker.update("s", 0.8, 0.5, 2.0) == "firing"
    assert tracker.alerts["s"].since == 2.0
    assert tracker.update("s", 0.1, 0.5, 3.0) == "resolved"
    assert (tracker.alerts["s"].state, tracker.alerts["s"].value) == ("resolved", 0.1)
    assert tracker.update("s", 0.9, 0.5, 4.0) is None
    assert tracker.alerts["s"].state == "pending"


def test_a_pending_alert_that_clears_is_forgotten() -> None:
    tracker = AlertTracker(for_evals=3)
    tracker.update("s", 0.9, 0.5, 1.0)
    tracker.update("s", 0.1, 0.5, 2.0)
    assert "s" not in tracker.alerts


def test_rule_rise_is_measured_from_the_baseline() -> None:
    rule = Rule(threshold=0.35, rise=0.25)
    assert rule.effective(0.5) == pytest.approx(0.75)
    assert rule.effective(0.0) == pytest.approx(0.35)
    only_new = Rule(threshold=0.98, baseline_below=0.9)
    assert only_new.effective(0.95) is None
    assert only_new.effective(0.5) == 0.98


def test_config_overrides_by_family_or_full_name() -> None:
    config = MonitorConfig(rules={"flag_rate": 0.2, "flag_rate:fake_score": Rule(threshold=0.5)})
    fake = config.rule("flag_rate:fake_score")
    other = config.rule("flag_rate:zero_width")
    assert fake is not None and (fake.threshold, fake.rise) == (0.5, None)
    assert other is not None and (other.threshold, other.rise) == (0.2, 0.05)
    assert config.rule("reward_mean") is None


# ------------------------------------------------------------------ the monitor


def test_clean_traffic_raises_no_alert_and_computes_signals() -> None:
    rng = random.Random(1)
    monitor = Monitor(lambda _: CONFIG, clock=Clock())
    feed(monitor, clean(rng, 640))
    (run,) = monitor.runs()
    assert run.samples == 640
    assert not run.tracker.alerts
    assert 0.5 < (run.signals["reward_mean"] or 0) < 0.6
    assert run.signals["judge_error_share"] == 0.0
    assert run.signals["reward_drift"] is not None


def test_fake_score_surge_fires_its_flag_rate_alert_and_calls_back() -> None:
    rng = random.Random(2)
    events: list[AlertEvent] = []
    monitor = Monitor(lambda _: CONFIG, on_event=events.append, clock=Clock())
    feed(monitor, clean(rng, 128))
    hacked = [
        item(0.9, 300, flags=("fake_score",)) if n % 4 == 0 else i
        for n, i in enumerate(clean(rng, 128))
    ]
    feed(monitor, hacked)
    assert "flag_rate:fake_score" in alert_names(monitor)
    (event,) = [e for e in events if e.name == "flag_rate:fake_score"]
    assert (event.state, event.rubric, event.run) == ("firing", "r", "a")
    assert event.value >= event.threshold == pytest.approx(0.05)
    assert 128 < event.sample <= 256


def test_a_per_rubric_threshold_silences_the_same_surge() -> None:
    rng = random.Random(2)
    lenient = MonitorConfig(**{**CONFIG.model_dump(), "rules": {"flag_rate": 0.5}})
    monitor = Monitor(lambda _: lenient, clock=Clock())
    feed(monitor, clean(rng, 128))
    feed(
        monitor,
        [
            item(0.9, 300, flags=("fake_score",)) if n % 4 == 0 else i
            for n, i in enumerate(clean(rng, 128))
        ],
    )
    assert "flag_rate:fake_score" not in alert_names(monitor)
    assert "flag_rate:fake_score" not in alert_names(monitor, state="pending")


def test_reward_tracking_length_fires_the_correlation_alert() -> None:
    rng = random.Random(3)
    monitor = Monitor(lambda _: CONFIG, clock=Clock())
    feed(monitor, clean(rng, 128))
    lengths = [rng.randint(200, 2000) for _ in range(128)]
    feed(monitor, [item(min(1.0, n / 2000 + rng.uniform(0, 0.1)), n) for n in lengths])
    firing = alert_names(monitor)
    assert "reward_length_corr" in firing
    assert "length_drift" in firing


def test_a_run_whose_reward_always_tracked_length_does_not_alarm() -> None:
    rng = random.Random(4)
    monitor = Monitor(lambda _: CONFIG, clock=Clock())
    lengths = [rng.randint(200, 800) for _ in range(512)]
    feed(monitor, [item(n / 1000 + rng.uniform(0, 0.2), n) for n in lengths])
    (run,) = monitor.runs()
    assert (run.signals["reward_length_corr"] or 0) > 0.6
    assert "reward_length_corr" not in alert_names(monitor)


def test_judge_errors_and_a_criterion_everyone_passes_alarm() -> None:
    rng = random.Random(5)
    monitor = Monitor(lambda _: CONFIG, clock=Clock())
    feed(
        monitor,
        [
            item(r, criteria={"c": rng.choice([0.1, 0.9])})
            for r in [rng.uniform(0.3, 0.8) for _ in range(128)]
        ],
    )
    feed(
        monitor,
        [
            item(None, status="judge_error") if n % 3 == 0 else item(0.6, criteria={"c": 0.95})
            for n in range(128)
        ],
    )
    firing = alert_names(monitor)
    assert {"judge_error_share", "criterion_pass_rate:c"} <= firing


def test_judges_that_start_to_disagree_alarm() -> None:
    rng = random.Random(6)
    monitor = Monitor(lambda _: CONFIG, clock=Clock())
    agree = [rng.uniform(0.3, 0.8) for _ in range(128)]
    feed(monitor, [item(r, judge_scores=(r, r + 0.02)) for r in agree])
    feed(monitor, [item(0.5, judge_scores=(0.95, 0.1)) for _ in range(128)])
    assert "judge_disagreement" in alert_names(monitor)


def test_rubric_version_change_is_an_event_and_restarts_the_baseline() -> None:
    rng = random.Random(7)
    monitor = Monitor(lambda _: CONFIG, clock=Clock())
    feed(monitor, clean(rng, 128))
    # The new version scores everything higher: a scale change, not drift.
    feed(
        monitor,
        [
            item(r + 0.2, n)
            for r, n in [(rng.uniform(0.3, 0.8), rng.randint(200, 800)) for _ in range(256)]
        ],
        version="v2",
    )
    (run,) = monitor.runs()
    assert [e.name for e in run.events if e.kind == "version"] == ["v2"]
    assert run.events[0].sample == 128
    assert "reward_drift" not in alert_names(monitor)
    assert run.version == "v2"


def test_oldest_runs_are_evicted() -> None:
    rng = random.Random(8)
    monitor = Monitor(lambda _: CONFIG, max_runs=3, clock=Clock())
    for name in ["a", "b", "c"]:
        feed(monitor, clean(rng, 8), run=name)
    feed(monitor, clean(rng, 8), run="a")
    feed(monitor, clean(rng, 8), run="d")
    assert [r.run for r in monitor.runs()] == ["d", "a", "c"]
    assert [r.run for r in monitor.recent_runs(2)] == ["d", "a"]


def test_no_run_name_counts_under_default() -> None:
    monitor = Monitor(lambda _: CONFIG, clock=Clock())
    monitor.observe("r", "v1", None, batch([item(0.5)]))
    monitor.observe("r", "v1", "", batch([item(0.5)]))
    assert [(r.run, r.samples) for r in monitor.runs()] == [("default", 2)]


def test_a_failing_event_callback_does_not_fail_observe() -> None:
    def broken(event: AlertEvent) -> None:
        raise OSError("disk full")

    rng = random.Random(9)
    monitor = Monitor(lambda _: CONFIG, on_event=broken, clock=Clock())
    feed(monitor, clean(rng, 128))
    feed(monitor, [item(0.9, flags=("fake_score",)) for _ in range(64)])
    assert "flag_rate:fake_score" in alert_names(monitor)


def test_history_is_downsampled_but_spans_the_run() -> None:
    history = History(capacity=16)
    for n in range(1, 1001):
        history.add(n, float(n), {"x": float(n)} if n > 500 else {"y": 1.0})
    assert len(history.samples) < 16
    assert history.samples[0] < 100 and history.samples[-1] > 900
    for sample, x in zip(history.samples, history.columns["x"], strict=True):
        assert x == sample if sample > 500 else math.isnan(x)
