"""The reward health monitor: per (rubric, run) signals, alerts, history and canaries.

Everything the service scores passes through :meth:`Monitor.observe`, which keeps
rolling windows (counted in samples) per (rubric, run), evaluates alert rules on them and
keeps a downsampled history of every signal for the dashboard. :mod:`.health` measures
rubric health (groups whose rewards have zero spread, saturated criteria, discrimination
within groups) and its ``non_discriminative`` alert; :mod:`.replay` feeds a reward log's
lines to a monitor (``rewardsvc rubrics health --log``). :mod:`.spend` keeps each run's
cost (``usage.cost``) and refuses a run past its budget (``BudgetExceeded``, with the
``budget_exceeded`` alert). Canary items (known attacks and anchors) are planned here and
scored through an injected callable; so are golden sets (:mod:`.golden_set`, labelled items
re-scored by :mod:`.golden_runner`), whose :mod:`.golden` board measures each judge against
the labels and its own baseline and records each judge's identity. A rubric's canary and
golden files are both :mod:`.rubric_sets` (read, told apart and checked one way).

This room is pure apart from the canary and golden runners' awaits and :mod:`.shared`, which merges
the runs of several replicas in Redis through a link it is given (reading them back with
:mod:`.shared_view`; and :mod:`.spend`, which keeps a run's cost there): it imports ``core``
and pydantic, never the application, the server, the scoring room, the judges, wire
models, HTTP clients or a metrics library. The application wires it: after a request is
scored, its rewards go to :meth:`Monitor.observe`, and the canary runner gets the
callable that scores canaries. The server renders its state as ``GET /v1/monitor``,
Prometheus gauges and the ``/dashboard`` page.
"""

from rewardsvc.core.monitor_spec import MonitorConfig, Rule
from rewardsvc.monitor.alerts import Alert, AlertEvent
from rewardsvc.monitor.canaries import (
    CanaryCase,
    CanaryJob,
    CanaryRunner,
    CanarySet,
    load_canaries,
    plan_canaries,
)
from rewardsvc.monitor.monitor import CanaryRecord, Monitor
from rewardsvc.monitor.runs import RunState

__all__ = [
    "Alert",
    "AlertEvent",
    "CanaryCase",
    "CanaryJob",
    "CanaryRecord",
    "CanaryRunner",
    "CanarySet",
    "Monitor",
    "MonitorConfig",
    "Rule",
    "RunState",
    "load_canaries",
    "plan_canaries",
]
