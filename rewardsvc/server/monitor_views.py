"""The wire views of the monitor's records: what ``GET /v1/monitor`` and
``POST /v1/monitor/golden`` answer with.

One mapping serves every record: :func:`view` reads a wire model of
``rewardsvc.protocol.monitor`` from the attributes of a record of ``rewardsvc.monitor``
named as its fields (pydantic's ``from_attributes``, nested records too; the models read
Unix seconds as times). The functions below say only what a record names or shapes
otherwise than its wire model.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

from pydantic import BaseModel

from rewardsvc.monitor import CanaryRecord, RunState
from rewardsvc.monitor.golden import GoldenRecord
from rewardsvc.protocol.monitor import CanaryOut, GoldenOut, HistoryOut, RunOut

W = TypeVar("W", bound=BaseModel)


def view(model: type[W], record: object, **fields: Any) -> W:
    """``model`` of ``record``: each field from the record's attribute of the same name, but
    those given in ``fields`` (what the record names or shapes otherwise); a field the
    record lacks keeps the model's default."""
    read = {
        name: getattr(record, name)
        for name in model.model_fields
        if name not in fields and hasattr(record, name)
    }
    return model.model_validate(read | fields, from_attributes=True)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def history_out(state: RunState) -> HistoryOut:
    """A run's downsampled signal history and the marks on its time axis."""
    h = state.history
    return HistoryOut.model_validate(
        {
            "times": list(h.times),
            "samples": [int(s) for s in h.samples],
            "series": {k: [_finite(v) for v in col] for k, col in h.columns.items()},
            "events": list(state.events),
        },
        from_attributes=True,
    )


def run_out(state: RunState, history: bool) -> RunOut:
    """The wire view of one run (its history when asked for)."""
    return view(
        RunOut,
        state,
        alerts=list(state.tracker.alerts.values()),
        health=state.health.report() if state.health is not None else None,
        history=history_out(state) if history else None,
    )


def canary_out(c: CanaryRecord, history: bool) -> CanaryOut:
    """The wire view of one canary record (its history when asked for)."""
    return view(CanaryOut, c, checked=c.time, history=c.history if history else None)


def golden_out(rec: GoldenRecord, history: bool) -> GoldenOut:
    """The wire view of one judge's golden record (its history when asked for)."""
    return view(
        GoldenOut,
        rec,
        checked=rec.time,
        baseline=rec.baseline_time,
        history=rec.history if history else None,
    )
