"""Prometheus gauges of the monitor, rendered at scrape time for the most recent runs only.

Runs come and go with training jobs; labelled gauges set from the scoring path would keep
every run's series forever. A collector renders them from the monitor's state on each
scrape instead, for the ``max_runs`` runs seen most recently, so the series stay bounded.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import REGISTRY, Collector, CollectorRegistry

from rewardsvc.monitor import Monitor


def render_gauges(monitor: Monitor, max_runs: int = 16) -> list[Metric]:
    """The monitor's gauges for its ``max_runs`` most recent runs, all its canaries and
    golden records."""
    signal = GaugeMetricFamily(
        "rewardsvc_monitor_signal",
        "Monitor signal over the run's rolling window (by rubric, run and signal)",
        labels=["rubric", "run", "signal"],
    )
    samples = GaugeMetricFamily(
        "rewardsvc_monitor_samples", "Items observed in the run", labels=["rubric", "run"]
    )
    alert = GaugeMetricFamily(
        "rewardsvc_monitor_alert",
        "1 while the monitor's alert fires, 0 when pending or resolved",
        labels=["rubric", "run", "alert"],
    )
    canary_gap = GaugeMetricFamily(
        "rewardsvc_canary_gap",
        "A canary attack's score minus the known-bad anchor's, by judge",
        labels=["rubric", "judge", "attack"],
    )
    canary_alert = GaugeMetricFamily(
        "rewardsvc_canary_alert",
        "1 while a judge rewards a canary attack above its anchor by the margin",
        labels=["rubric", "judge", "attack"],
    )
    for run in monitor.recent_runs(max_runs):
        samples.add_metric([run.rubric, run.run], run.samples)
        for name, value in run.signals.items():
            if value is not None:
                signal.add_metric([run.rubric, run.run, name], value)
        for a in run.tracker.alerts.values():
            alert.add_metric([run.rubric, run.run, a.name], 1.0 if a.state == "firing" else 0.0)
    for c in monitor.canaries():
        labels = [c.rubric, c.judge, c.attack]
        if c.reward is not None and c.anchor_reward is not None:
            canary_gap.add_metric(labels, c.reward - c.anchor_reward)
        canary_alert.add_metric(labels, 1.0 if c.alert else 0.0)
    return [
        signal,
        samples,
        alert,
        canary_gap,
        canary_alert,
        *spend_gauges(monitor, max_runs),
        *golden_gauges(monitor),
    ]


GOLDEN_GAUGES = (
    ("accuracy", "Share of a golden set's labels the judge's answers match"),
    ("agreement", "Mean probability the judge gives to the golden set's labelled answers"),
    ("shift", "Mean |P(yes) - P(yes) at baseline| over the golden set (the drift signal)"),
)


def golden_gauges(monitor: Monitor) -> list[Metric]:
    """Per rubric and judge: the golden set's latest accuracy, agreement, shift and
    drift alert; per judge, 1 while its identity-change alert is up."""
    families = {
        name: GaugeMetricFamily(f"rewardsvc_judge_golden_{name}", text, labels=["rubric", "judge"])
        for name, text in GOLDEN_GAUGES
    }
    alert = GaugeMetricFamily(
        "rewardsvc_judge_golden_alert",
        "1 while the judge's golden shift is at or above the set's max_shift",
        labels=["rubric", "judge"],
    )
    identity = GaugeMetricFamily(
        "rewardsvc_judge_golden_identity_changed",
        "1 from a change of the judge's identity (model, revision, served model) until a "
        "re-baseline",
        labels=["judge"],
    )
    for rec in monitor.golden.records():
        labels = [rec.rubric, rec.judge]
        for name, value in (
            ("accuracy", rec.accuracy),
            ("agreement", rec.agreement),
            ("shift", rec.shift),
        ):
            if value is not None:
                families[name].add_metric(labels, value)
        alert.add_metric(labels, 1.0 if rec.alert else 0.0)
    for ident in monitor.golden.identities():
        identity.add_metric([ident.judge], 1.0 if ident.alert else 0.0)
    return [*families.values(), alert, identity]


def spend_gauges(monitor: Monitor, max_runs: int = 16) -> list[Metric]:
    """Cost, budget and budget alert of the ``max_runs`` runs that spent most recently."""
    cost = GaugeMetricFamily(
        "rewardsvc_run_cost",
        "What the run's judge calls cost at the judges' prices (over every replica when shared)",
        labels=["run"],
    )
    budget = GaugeMetricFamily("rewardsvc_run_budget", "The run's budget", labels=["run"])
    exceeded = GaugeMetricFamily(
        "rewardsvc_run_budget_exceeded",
        "1 once the run's cost reached its budget (new scoring for it is refused)",
        labels=["run"],
    )
    for run in monitor.spend.runs()[:max_runs]:
        cost.add_metric([run.run], run.cost)
        if run.budget is not None:
            budget.add_metric([run.run], run.budget)
            exceeded.add_metric([run.run], 1.0 if run.exceeded else 0.0)
    return [cost, budget, exceeded]


class MonitorCollector(Collector):
    """Renders :func:`render_gauges` on each scrape for the monitor it currently points at."""

    def __init__(self, max_runs: int = 16) -> None:
        self.monitor: Monitor | None = None
        self.max_runs = max_runs

    def collect(self) -> Iterator[Metric]:
        """The gauges, or none before a monitor is attached."""
        if self.monitor is not None:
            yield from render_gauges(self.monitor, self.max_runs)

    def describe(self) -> Iterator[Metric]:
        """Nothing to describe up front (the series depend on the runs)."""
        return iter(())


def attach(
    monitor: Monitor, max_runs: int = 16, registry: CollectorRegistry = REGISTRY
) -> MonitorCollector:
    """Point the process's monitor collector at ``monitor`` (registered on first use)."""
    collector = _COLLECTORS.get(id(registry))
    if collector is None:
        collector = MonitorCollector(max_runs)
        registry.register(collector)
        _COLLECTORS[id(registry)] = collector
    collector.monitor, collector.max_runs = monitor, max_runs
    return collector


_COLLECTORS: dict[int, MonitorCollector] = {}
