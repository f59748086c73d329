"""Alert rules and the pending → firing → resolved state machine.

A rule belongs to a signal family (``flag_rate`` covers ``flag_rate:fake_score`` and every
other flag). It breaches when the signal's value reaches its threshold; a rule with
``rise`` raises the threshold to the run's own baseline value plus ``rise``, so that a
rubric whose rewards naturally track length does not alarm for that alone. A breach
makes the alert ``pending``; ``for_evals`` consecutive breaching evaluations make it
``firing``; the first clear evaluation after firing makes it ``resolved``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AlertState = Literal["pending", "firing", "resolved"]
Transition = Literal["firing", "resolved"]
"""A change of state worth telling someone about (pending is not told)."""


@dataclass
class Alert:
    """One alert of a run: its signal name, state, since when, and the last value seen."""

    name: str
    state: AlertState
    since: float
    value: float
    threshold: float
    streak: int = 0
    criteria: tuple[str, ...] = ()
    """The criteria the alert is about (``non_discriminative``: the saturated ones)."""


@dataclass(frozen=True)
class AlertEvent:
    """A transition worth telling someone about: an alert fired or resolved."""

    rubric: str
    run: str
    name: str
    state: Transition
    time: float
    sample: int
    value: float
    threshold: float
    criteria: tuple[str, ...] = ()
    """The criteria the alert is about (``non_discriminative``: the saturated ones)."""


class AlertTracker:
    """The alerts of one run (or of the canaries), keyed by name."""

    def __init__(self, for_evals: int) -> None:
        self.for_evals = for_evals
        self.alerts: dict[str, Alert] = {}

    def update(self, name: str, value: float, threshold: float, now: float) -> Transition | None:
        """Feed one evaluation; return the new state when it fired or resolved."""
        breached = value >= threshold
        alert = self.alerts.get(name)
        if alert is None or alert.state == "resolved":
            if not breached:
                if alert is not None:
                    alert.value, alert.threshold = value, threshold
                return None
            alert = Alert(name, "pending", now, value, threshold, streak=0)
            self.alerts[name] = alert
        alert.value, alert.threshold = value, threshold
        if breached:
            alert.streak += 1
            if alert.state == "pending" and alert.streak >= self.for_evals:
                alert.state, alert.since = "firing", now
                return "firing"
            return None
        alert.streak = 0
        if alert.state == "pending":
            del self.alerts[name]
            return None
        alert.state, alert.since = "resolved", now
        return "resolved"

    def firing(self) -> list[Alert]:
        """The alerts firing now."""
        return [a for a in self.alerts.values() if a.state == "firing"]
