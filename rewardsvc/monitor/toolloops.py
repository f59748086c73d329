"""Agentic judges' tool loops per (rubric, run): how many ran, their tool calls, how
each ended, and the alert when the share of loops ending without a verdict moves.

Every batch the monitor observes brings its ``usage.tool_loops`` (loops by how they ended:
``finished``, or the failed verdict's kind: ``loop_turns``, ``loop_tool_calls``,
``loop_tokens``, ``loop_sandbox``, ``loop_wall``, ``deadline``, ``judge_error``...) and
``usage.tool_calls``. A run's unfinished share is the share of its latest
:data:`WINDOW` loops that ended without a verdict; its baseline is that share over its
first :data:`BASELINE` loops. The ``tool_loops_unfinished`` alert fires when, over at
least :data:`MIN_LOOPS` loops, the share reaches the baseline plus :data:`RISE` (a judge,
a sandbox or a rubric's tools that began to fail), or :data:`ABSOLUTE` whatever the
baseline (a run whose loops mostly fail from the start); it resolves once the share is
back under. Counted by this process (like a run's judge calls in :mod:`.spend`).
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from rewardsvc.core.results import Usage
from rewardsvc.monitor.alerts import Alert, AlertEvent, AlertTracker

UNFINISHED_ALERT = "tool_loops_unfinished"
FINISHED = "finished"
WINDOW = 200
"""The latest loops of a run its unfinished share is measured over."""
BASELINE = 100
"""The first loops of a run its baseline share is measured over."""
MIN_LOOPS = 20
"""The fewest loops in the window before the alert is evaluated."""
RISE = 0.15
"""How far above its baseline a run's unfinished share alarms."""
ABSOLUTE = 0.5
"""The unfinished share that alarms whatever the baseline."""


@dataclass
class RunLoops:
    """One (rubric, run)'s tool loops: counts, outcomes, window, baseline and alert."""

    rubric: str
    run: str
    loops: int = 0
    tool_calls: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    window: deque[bool] = field(default_factory=lambda: deque(maxlen=WINDOW))
    """Whether each of the latest loops ended without a verdict."""
    baseline: float | None = None
    early: list[bool] = field(default_factory=list)
    """The run's first loops' ends, until the baseline is measured."""
    tracker: AlertTracker = field(default_factory=lambda: AlertTracker(1))
    last_seen: float = 0.0

    @property
    def unfinished_share(self) -> float | None:
        """The share of the window's loops that ended without a verdict."""
        return sum(self.window) / len(self.window) if self.window else None

    @property
    def threshold(self) -> float:
        """The unfinished share that alarms (see the module doc)."""
        if self.baseline is None:
            return ABSOLUTE
        return min(ABSOLUTE, self.baseline + RISE)

    @property
    def alert(self) -> Alert | None:
        """The run's ``tool_loops_unfinished`` alert, once it was pending."""
        return self.tracker.alerts.get(UNFINISHED_ALERT)

    def add(self, usage: Usage) -> None:
        """Count a batch's loops (their order within it is unknown: unfinished last)."""
        self.tool_calls += usage.tool_calls
        ends: list[bool] = []
        for ended, n in sorted(usage.tool_loops.items(), key=lambda kv: kv[0] != FINISHED):
            self.outcomes[ended] = self.outcomes.get(ended, 0) + n
            ends.extend([ended != FINISHED] * n)
        self.loops += len(ends)
        self.window.extend(ends)
        if self.baseline is None:
            self.early.extend(ends[: BASELINE - len(self.early)])
            if len(self.early) >= BASELINE:
                self.baseline, self.early = sum(self.early) / len(self.early), []


class ToolLoops:
    """Tool loops per (rubric, run) (see the module doc); at most ``max_runs`` kept, the
    least recently seen dropped first. ``on_event`` receives the alert's transitions."""

    def __init__(
        self,
        on_event: Callable[[AlertEvent], None] | None = None,
        clock: Callable[[], float] = time.time,
        max_runs: int = 256,
    ) -> None:
        self.on_event = on_event
        self.clock = clock
        self.max_runs = max_runs
        self._runs: OrderedDict[tuple[str, str], RunLoops] = OrderedDict()

    def add(self, rubric: str, run: str, usage: Usage) -> AlertEvent | None:
        """Count a batch's tool loops under (``rubric``, ``run``) and step the alert; the
        alert's transition, if any (sent to ``on_event``). A batch without loops counts
        nothing."""
        if not usage.tool_loops:
            return None
        key = (rubric, run)
        entry = self._runs.get(key)
        if entry is None:
            entry = self._runs[key] = RunLoops(rubric, run)
            while len(self._runs) > self.max_runs:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(key)
        now = entry.last_seen = self.clock()
        entry.add(usage)
        share = entry.unfinished_share
        if share is None or len(entry.window) < MIN_LOOPS:
            return None
        changed = entry.tracker.update(UNFINISHED_ALERT, share, entry.threshold, now)
        if changed is None:
            return None
        event = AlertEvent(
            rubric, run, UNFINISHED_ALERT, changed, now, entry.loops, share, entry.threshold
        )
        if self.on_event is not None:
            self.on_event(event)
        return event

    def runs(self, rubric: str | None = None, run: str | None = None) -> list[RunLoops]:
        """The runs kept, most recently seen first, filtered by rubric and run name."""
        return [
            e
            for e in reversed(self._runs.values())
            if (rubric is None or e.rubric == rubric) and (run is None or e.run == run)
        ]
