"""The monitor: every scored batch in, per (rubric, run) signals and alerts out."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.core.results import BatchResult
from rewardsvc.monitor.alerts import AlertEvent
from rewardsvc.monitor.golden import GoldenBoard
from rewardsvc.monitor.runs import Mark, RunState, Sample, grouped
from rewardsvc.monitor.spend import Spend
from rewardsvc.monitor.toolloops import ToolLoops

log = logging.getLogger(__name__)

DEFAULT_RUN = "default"
MAX_CANARIES = 1024
CANARY_HISTORY = 256


def evict(runs: OrderedDict[tuple[str, str], RunState], max_runs: int) -> None:
    """Drop runs beyond ``max_runs``, the lowest :attr:`RunState.rank` first: short-lived runs
    (fewer samples than a window) before established ones, so that a churn of new run names
    cannot push out a training run that is being monitored."""
    while len(runs) > max_runs:
        victim = min(runs.values(), key=lambda r: r.rank)
        del runs[(victim.rubric, victim.run)]


class RunSink(Protocol):
    """Where a monitor also sends what it observes, to merge it with other processes' (the
    shared store of :mod:`rewardsvc.monitor.shared`)."""

    @property
    def active(self) -> bool:
        """True while the merged state is reachable: it then makes the monitor's view and
        raises the alerts, and this process's own alert events are not sent."""
        ...

    def observe(
        self, rubric: str, run: str, version: str, samples: Sequence[Sample], now: float
    ) -> None:
        """Record a batch's samples under (rubric, run) (never raises, never blocks)."""
        ...

    async def drain(self) -> None:
        """Wait until every batch recorded so far has been sent (at shutdown)."""
        ...


@dataclass
class CanaryRecord:
    """The latest canary result of one (rubric, judge, attack), with its recent history."""

    rubric: str
    judge: str
    attack: str
    reward: float | None
    anchor_reward: float | None
    good_reward: float | None
    margin: float
    time: float
    alert: bool = False
    since: float | None = None
    share_above: float | None = None
    history: deque[tuple[float, float | None, float | None]] = field(
        default_factory=lambda: deque(maxlen=CANARY_HISTORY)
    )


class Monitor:
    """Per (rubric, run) statistics over every scored batch, bounded in memory.

    ``config_for(rubric_id)`` gives a rubric's :class:`MonitorConfig` (its thresholds);
    ``on_event`` receives every alert that fires or resolves (the server writes it to the
    reward log and the webhook). At most ``max_runs`` runs are kept: the short-lived run seen
    least recently is evicted first (:func:`evict`). ``clock`` returns the time in Unix seconds.

    With a ``sink`` (set by the server when Redis is configured) every batch is also sent
    to the state shared by all replicas; while that is reachable, :meth:`runs` shows the
    merged runs and the merged state raises the alerts.

    ``budget_of(run)`` is a run's budget (None: none); :attr:`spend` counts each run's cost
    and refuses a run past its budget (:mod:`.spend`).
    """

    def __init__(
        self,
        config_for: Callable[[str], MonitorConfig] | None = None,
        max_runs: int = 256,
        on_event: Callable[[AlertEvent], None] | None = None,
        clock: Callable[[], float] = time.time,
        budget_of: Callable[[str], float | None] | None = None,
    ) -> None:
        self.config_for = config_for or (lambda _rubric: MonitorConfig())
        self.spend = Spend(budget_of, self._emit, clock)
        """Cost per run (over its rubrics) and the runs' budgets (:mod:`.spend`)."""
        self.tool_loops = ToolLoops(self._emit, clock, max_runs)
        """Agentic judges' tool loops per (rubric, run), and their alert (:mod:`.toolloops`)."""
        self.max_runs = max_runs
        self.on_event = on_event
        self.clock = clock
        self._runs: OrderedDict[tuple[str, str], RunState] = OrderedDict()
        self.sink: RunSink | None = None
        self.merged: OrderedDict[tuple[str, str], RunState] = OrderedDict()
        """The runs as merged from every process (set by the sink), most recent last."""
        self._canaries: OrderedDict[tuple[str, str, str], CanaryRecord] = OrderedDict()
        self.golden = GoldenBoard(self._emit, self.mark_runs, clock)
        """The judges' golden re-scores and identities (:mod:`.golden`)."""
        self.batches = 0
        """Batches observed by this process (the golden schedule counts them)."""

    def observe(
        self, rubric_id: str, version: str, run: str | None, result: BatchResult
    ) -> list[AlertEvent]:
        """Count a scored batch under (``rubric_id``, ``run``); return the alert events it caused.

        ``run`` None or empty counts under ``default``. A new ``version`` of the rubric is
        recorded as an event in the run's history and restarts its window and baseline.
        Beyond ``max_runs`` runs, :func:`evict` drops one.
        """
        now = self.clock()
        self.batches += 1
        self.spend.add(rubric_id, run, result.usage, len(result.items))
        key = (rubric_id, run or DEFAULT_RUN)
        self.tool_loops.add(*key, result.usage)
        state = self._runs.get(key)
        if state is None:
            state = RunState(key[0], key[1], version, self.config_for(rubric_id), now)
            self._runs[key] = state
        else:
            self._runs.move_to_end(key)
            if state.version != version:
                state.change_version(version, self.config_for(rubric_id), now)
        samples = [Sample.of(item) for item in result.items]
        grouped(result.items, samples)
        events: list[AlertEvent] = []
        for sample in samples:
            events.extend(state.add_sample(sample, now))
        evict(self._runs, self.max_runs)
        if self.sink is not None:
            shared = self.sink.active
            self.sink.observe(key[0], key[1], version, samples, now)
            if shared:
                # The merged state raises this run's alerts, once for every process.
                return []
        for event in events:
            self._emit(event)
        return events

    def mark_runs(self, rubrics: Iterable[str], name: str, now: float) -> None:
        """Put an ``identity`` mark named ``name`` on the timeline of this process's runs of
        ``rubrics`` (a judge they use changed)."""
        chosen = set(rubrics)
        for state in self._runs.values():
            if state.rubric in chosen:
                state.events.append(Mark(now, state.samples, "identity", name))

    def emit(self, event: AlertEvent) -> None:
        """Send an event raised by the merged state to ``on_event`` (reward log, webhook)."""
        self._emit(event)

    def _emit(self, event: AlertEvent) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception:
            # A broken sink (disk full, webhook client bug) must not fail the scoring path.
            log.exception("monitor event callback failed for %s", event.name)

    def _view(self) -> OrderedDict[tuple[str, str], RunState]:
        return self.merged if self.shared else self._runs

    @property
    def shared(self) -> bool:
        """True while the view is the state merged from every process."""
        return self.sink is not None and self.sink.active

    def runs(self, rubric: str | None = None, run: str | None = None) -> list[RunState]:
        """The runs kept, most recently seen first, filtered by rubric and run name (merged
        from every process while a shared store is reachable, else this process's own)."""
        return [
            s
            for s in reversed(self._view().values())
            if (rubric is None or s.rubric == rubric) and (run is None or s.run == run)
        ]

    def recent_runs(self, n: int) -> list[RunState]:
        """The ``n`` most recently seen runs (what Prometheus gauges are rendered for)."""
        out: list[RunState] = []
        for state in reversed(self._view().values()):
            if len(out) >= n:
                break
            out.append(state)
        return out

    def record_canary(
        self,
        rubric: str,
        judge: str,
        attack: str,
        reward: float | None,
        anchor_reward: float | None,
        good_reward: float | None = None,
        margin: float = 0.25,
        share_above: float | None = None,
    ) -> AlertEvent | None:
        """Record one canary score: ``attack``'s reward from ``judge`` against the known-bad
        anchor's. The canary alarms when the attack beats the anchor by ``margin`` or more.
        ``share_above``: the share of cases the attack scored above their anchor (the image
        family's susceptibility; None for the text attacks)."""
        now = self.clock()
        key = (rubric, judge, attack)
        record = self._canaries.get(key)
        if record is None:
            record = CanaryRecord(rubric, judge, attack, None, None, None, margin, now)
            self._canaries[key] = record
            while len(self._canaries) > MAX_CANARIES:
                self._canaries.popitem(last=False)
        else:
            self._canaries.move_to_end(key)
        record.reward, record.anchor_reward, record.good_reward = reward, anchor_reward, good_reward
        record.margin, record.time, record.share_above = margin, now, share_above
        record.history.append((now, reward, anchor_reward))
        if reward is None or anchor_reward is None:
            return None
        gap = reward - anchor_reward
        breached = gap >= margin
        if breached == record.alert:
            return None
        record.alert = breached
        record.since = now
        event = AlertEvent(
            rubric,
            "canary",
            f"canary:{judge}:{attack}",
            "firing" if breached else "resolved",
            now,
            0,
            gap,
            margin,
        )
        self._emit(event)
        return event

    def canaries(self, rubric: str | None = None) -> list[CanaryRecord]:
        """The canary records, optionally of one rubric, in a stable order."""
        return sorted(
            (c for c in self._canaries.values() if rubric is None or c.rubric == rubric),
            key=lambda c: (c.rubric, c.judge, c.attack),
        )
