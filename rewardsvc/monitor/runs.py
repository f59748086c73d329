"""One (rubric, run): its rolling window, early baseline, signals, alerts and history."""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rewardsvc.core.monitor_spec import CEILING, NON_DISCRIMINATIVE, MonitorConfig
from rewardsvc.core.results import ItemReward
from rewardsvc.monitor import health as rubric_health
from rewardsvc.monitor import stats
from rewardsvc.monitor.alerts import Alert, AlertEvent, AlertTracker
from rewardsvc.monitor.escalation import Escalation
from rewardsvc.monitor.health import GroupStat, Health, criterion_key
from rewardsvc.monitor.window import Window, compute_signals

# Flags and criteria add columns; a rubric with hundreds of criteria must not make
# one run's history unbounded.
MAX_COLUMNS = 96
MAX_EVENTS = 256
ESTABLISHED_GRACE_S = 86_400.0
"""How much longer than a short-lived run an established run (one full window of samples)
is kept after it was last seen, when runs must be evicted: a churn of new run names evicts
the short-lived runs first, and an established run only after a day of silence."""


def established(samples: int, config: MonitorConfig) -> bool:
    """True when a run has seen a full window of samples (its alerts have been evaluated)."""
    return samples >= config.window


def keep_rank(samples: int, last_seen: float, config: MonitorConfig) -> float:
    """The order in which runs are evicted, lowest first: the least recently seen, with an
    established run counted as seen ``ESTABLISHED_GRACE_S`` later than it was."""
    return last_seen + (ESTABLISHED_GRACE_S if established(samples, config) else 0.0)


@dataclass(frozen=True, slots=True)
class Mark:
    """A mark on a run's time axis: an alert fired or resolved, a new rubric version, or a
    judge of the rubric whose identity changed."""

    time: float
    sample: int
    kind: Literal["firing", "resolved", "version", "identity"]
    name: str


@dataclass(slots=True)
class Sample:
    """What the monitor keeps of one scored item."""

    reward: float | None
    length: int
    status: str
    flags: tuple[str, ...]
    passes: tuple[tuple[str, bool], ...]
    """Each criterion of the run's rubric and whether it passed (the pass-rate signals;
    an item scored with its own rubric has none: its criteria are per prompt)."""
    disagreement: float | None
    uncertainty: float | None
    scores: tuple[tuple[str, float], ...] = ()
    """Each criterion's mean score over the judges that scored it, by :func:`criterion_key`."""
    group: GroupStat | None = None
    """Set on the first ok sample of a group of its batch (:func:`grouped`)."""

    @classmethod
    def of(cls, item: ItemReward) -> Sample:
        """Extract the monitored quantities of one engine result."""
        scores = [j.score for j in item.judges.values() if j.score is not None]
        per_criterion: dict[str, list[float]] = {}
        for judge in item.judges.values():
            for cid, outcome in judge.criteria.items():
                if outcome.score is not None:
                    per_criterion.setdefault(cid, []).append(outcome.score)
        means = tuple(
            (criterion_key(cid, item.version), sum(v) / len(v)) for cid, v in per_criterion.items()
        )
        own = item.version is not None
        return cls(
            reward=item.reward,
            length=item.completion_chars,
            status=item.status,
            flags=tuple(sorted(set(item.flags))),
            passes=() if own else tuple((cid, mean >= 0.5) for cid, mean in means),
            disagreement=stats.sd(scores) if len(scores) >= 2 else None,
            uncertainty=item.uncertainty,
            scores=means,
        )


def grouped(items: Sequence[ItemReward], samples: Sequence[Sample]) -> None:
    """Summarize the groups of one batch (ok items with the same :attr:`ItemReward.group`,
    two or more) onto the first sample of each."""
    members: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        if item.group is not None and item.status == "ok" and item.reward is not None:
            members.setdefault(item.group, []).append(i)
    for found in members.values():
        if len(found) < 2:
            continue
        rewards = [r for i in found if (r := items[i].reward) is not None]
        scores = [dict(samples[i].scores) for i in found]
        samples[found[0]].group = rubric_health.group_of(rewards, scores)


class History:
    """Signal values at evaluation points, downsampled to at most ``capacity`` points.

    When full, every other point is dropped and only every second evaluation is kept
    from then on, so a run of any length keeps an evenly thinned picture of its life.
    """

    def __init__(self, capacity: int = 480) -> None:
        self.capacity = capacity
        self.stride = 1
        self._skipped = 0
        self.samples = array("d")
        self.times = array("d")
        self.columns: dict[str, array[float]] = {}

    def add(self, sample: int, time: float, values: dict[str, float | None]) -> None:
        """Record one evaluation (or skip it, per the current stride)."""
        self._skipped += 1
        if self._skipped < self.stride:
            return
        self._skipped = 0
        for name in values:
            if name not in self.columns and len(self.columns) < MAX_COLUMNS:
                self.columns[name] = array("d", [math.nan] * len(self.samples))
        self.samples.append(sample)
        self.times.append(time)
        for name, column in self.columns.items():
            value = values.get(name)
            column.append(math.nan if value is None else value)
        if len(self.samples) >= self.capacity:
            self.samples = self.samples[1::2]
            self.times = self.times[1::2]
            self.columns = {k: v[1::2] for k, v in self.columns.items()}
            self.stride *= 2


class RunState:
    """The monitor's state for one (rubric, run)."""

    def __init__(
        self, rubric: str, run: str, version: str, config: MonitorConfig, now: float
    ) -> None:
        self.rubric, self.run, self.version, self.config = rubric, run, version, config
        self.started = self.last_seen = now
        self.samples = 0
        self.window: Window[Sample] = Window(config.window, config.ceiling_window)
        self.flags: dict[str, None] = {}
        self.criteria: dict[str, None] = {}
        self.signals: dict[str, float | None] = {}
        self.health: Health | None = None
        self.tracker = AlertTracker(config.for_evals)
        self.history = History()
        self.events: deque[Mark] = deque(maxlen=MAX_EVENTS)
        self.escalation = Escalation(config.window, config.baseline)
        self._reset_baseline()

    def _reset_baseline(self) -> None:
        self._baseline_samples: list[Sample] | None = []
        self.baseline: dict[str, float | None] | None = None
        self.baseline_rewards: list[float] = []
        self.baseline_lengths: list[float] = []
        """The baseline's rewards and lengths, sorted (the drift signals' other side)."""
        self._since_reset = 0

    def change_version(self, version: str, config: MonitorConfig, now: float) -> None:
        """A rubric edit changed the reward scale: record it, start a new window and baseline.

        Alerts keep their state; rules are evaluated again once the new baseline is complete.
        """
        self.events.append(Mark(now, self.samples, "version", version))
        self.version, self.config = version, config
        self.tracker.for_evals = config.for_evals
        self.window = Window(config.window, config.ceiling_window)
        self._reset_baseline()

    def add(self, item: ItemReward, now: float) -> list[AlertEvent]:
        """Count one scored item; evaluate the rules when an evaluation is due."""
        self.escalation.add(item)
        return self.add_sample(Sample.of(item), now)

    def add_sample(self, sample: Sample, now: float) -> list[AlertEvent]:
        """Count one item's sample; evaluate the rules when an evaluation is due."""
        self.samples += 1
        self._since_reset += 1
        self.last_seen = now
        self.window.append(sample)
        self._register(sample)
        if self._baseline_samples is not None and self.takes_baseline():
            self._baseline_samples.append(sample)
            if len(self._baseline_samples) >= self.config.baseline:
                self._complete_baseline()
        if self.samples % self.config.eval_every == 0:
            return self.evaluate(now)
        return []

    def takes_baseline(self) -> bool:
        """False while an attack flag's ceiling alert is pending or firing: the samples of
        an attack must not become the baseline that the run is later measured against."""
        return not any(
            a.state != "resolved" and a.name.startswith(f"{CEILING}:")
            for a in self.tracker.alerts.values()
        )

    @property
    def rank(self) -> float:
        """This run's eviction order (:func:`keep_rank`)."""
        return keep_rank(self.samples, self.last_seen, self.config)

    def _register(self, sample: Sample) -> None:
        for flag in sample.flags:
            self.flags.setdefault(flag, None)
        for cid, _ in sample.passes:
            if cid not in self.criteria and len(self.criteria) < MAX_COLUMNS // 2:
                self.criteria[cid] = None

    def restore(
        self,
        samples: int,
        since_reset: int,
        window: Iterable[Sample],
        baseline: Sequence[Sample],
        alerts: Iterable[Alert],
    ) -> None:
        """Take a run's state merged from every replica in place of this process's own:
        ``samples`` counted in all, ``since_reset`` of them since the rubric version changed,
        the shared rolling window, the first samples of the version (its baseline once
        complete) and the alerts' states."""
        self.samples, self._since_reset = samples, since_reset
        self.window.clear()
        self.window.extend(window)
        for sample in (*baseline, *self.window):
            self._register(sample)
        self._reset_baseline()
        self._since_reset = since_reset
        self._baseline_samples = list(baseline[: self.config.baseline])
        if len(self._baseline_samples) >= self.config.baseline:
            self._complete_baseline()
        self.tracker.alerts = {a.name: a for a in alerts}

    def _complete_baseline(self) -> None:
        samples = self._baseline_samples or []
        self.baseline = compute_signals(samples, self.flags, self.criteria)
        self.baseline_rewards = sorted(s.reward for s in samples if s.reward is not None)
        self.baseline_lengths = sorted(float(s.length) for s in samples)
        self._baseline_samples = None

    def baseline_value(self, name: str) -> float | None:
        """The baseline value of a signal; a flag unseen in the baseline had rate 0."""
        if self.baseline is None:
            return None
        value = self.baseline.get(name)
        if value is None and name.startswith("flag_rate:"):
            return 0.0
        return value

    def evaluate(self, now: float) -> list[AlertEvent]:
        """Compute the window's signals, record them, and step every alert rule."""
        signals = compute_signals(self.window, self.flags, self.criteria, self.window.tally)
        if self.baseline is not None:
            signals.update(self._drift())
        signals.update(self._ceilings())
        signals.update(self.escalation.signals())
        health = rubric_health.measure(self.window, self.config.health, self.window.health_inputs)
        signals["zero_spread_share"] = health.zero_spread_share
        self.signals, self.health = signals, health
        self.history.add(self.samples, now, signals)
        ceiling_from = min(self.config.ceiling_window, self.config.window)
        if self._since_reset < ceiling_from:
            return []
        events = []
        for name, value in signals.items():
            rule = self.config.rule(name)
            if value is None or rule is None:
                continue
            if self._since_reset < self.config.window and not name.startswith(f"{CEILING}:"):
                continue
            threshold = rule.effective(self.baseline_value(name))
            # A rise is measured from the baseline: without one, the rule waits for it.
            if threshold is None or (rule.rise is not None and self.baseline is None):
                continue
            changed = self.tracker.update(name, value, threshold, now)
            if changed is not None:
                event = AlertEvent(
                    self.rubric, self.run, name, changed, now, self.samples, value, threshold
                )
                self.events.append(Mark(now, self.samples, changed, name))
                events.append(event)
        events.extend(self._health_alert(health, now))
        return events

    def _health_alert(self, health: Health, now: float) -> list[AlertEvent]:
        """Step the ``non_discriminative`` alert (:func:`rubric_health.breach`); the alert
        names the saturated criteria."""
        config = self.config.health
        found = rubric_health.breach(health, config) if config.enabled else None
        if found is None:
            return []
        value, saturated = found
        changed = self.tracker.update(NON_DISCRIMINATIVE, value, 1.0, now)
        alert = self.tracker.alerts.get(NON_DISCRIMINATIVE)
        if alert is not None:
            alert.criteria = saturated
        if changed is None:
            return []
        self.events.append(Mark(now, self.samples, changed, NON_DISCRIMINATIVE))
        return [
            AlertEvent(
                self.rubric,
                self.run,
                NON_DISCRIMINATIVE,
                changed,
                now,
                self.samples,
                value,
                1.0,
                saturated,
            )
        ]

    def _drift(self) -> dict[str, float | None]:
        """``reward_drift`` and ``length_drift``: the window against the (sorted) baseline."""
        rewards = sorted(s.reward for s in self.window if s.reward is not None)
        lengths = sorted(float(s.length) for s in self.window)
        return {
            "reward_drift": stats.ks_sorted(rewards, self.baseline_rewards),
            "length_drift": stats.ks_sorted(lengths, self.baseline_lengths),
        }

    def _ceilings(self) -> dict[str, float | None]:
        """Each attack flag's rate over the latest ``ceiling_window`` samples."""
        attacks = [f for f in self.flags if f in self.config.attack_flags]
        if not attacks or not self.window:
            return {}
        size = min(self.window.tail, len(self.window))
        counts = self.window.tail_flags.flags
        return {f"{CEILING}:{f}": counts[f] / size for f in attacks}
