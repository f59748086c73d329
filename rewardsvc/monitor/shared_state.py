"""The shared monitor's state in Redis: the link it talks through, the keys of a run, and
the encodings of samples, alerts, marks and a run's merged state (pure: no I/O). The link
is ``rewardsvc.storage.redis_link.RedisLink``, which the application builds and hands in."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.monitor.alerts import Alert
from rewardsvc.monitor.health import GroupStat, Health
from rewardsvc.monitor.runs import History, Mark, RunState, Sample

HISTORY_POINTS = 480
"""Evaluations kept in a shared run's history (the latest; the local history thins instead)."""


# ------------------------------------------------------------------ encodings (pure)


def encode_sample(s: Sample) -> bytes:
    """One sample as compact JSON (about 100 bytes)."""
    passes = [[c, int(ok)] for c, ok in s.passes]
    row = [s.reward, s.length, s.status, list(s.flags), passes, s.disagreement, s.uncertainty]
    row += [[list(x) for x in s.scores], s.group.encode() if s.group is not None else None]
    return json.dumps(row, separators=(",", ":")).encode()


def decode_sample(raw: bytes) -> Sample:
    """The sample of :func:`encode_sample` (one written before rubric health has no
    scores and no group)."""
    row = json.loads(raw)
    reward, length, status, flags, passes, disagreement, uncertainty = row[:7]
    scores, group = row[7:9] if len(row) >= 9 else ([], None)
    return Sample(
        reward,
        int(length),
        status,
        tuple(flags),
        tuple((c, bool(ok)) for c, ok in passes),
        disagreement,
        uncertainty,
        tuple((str(c), float(v)) for c, v in scores),
        GroupStat.decode(group) if group is not None else None,
    )


def encode_alert(a: Alert) -> bytes:
    """An alert's state as JSON."""
    return json.dumps(asdict(a)).encode()


def decode_alert(raw: bytes) -> Alert:
    """The alert of :func:`encode_alert`."""
    fields = json.loads(raw)
    fields["criteria"] = tuple(fields.get("criteria", ()))
    return Alert(**fields)


def encode_mark(m: Mark) -> bytes:
    """A mark on a run's time axis as JSON."""
    return json.dumps([m.time, m.sample, m.kind, m.name]).encode()


def decode_mark(raw: bytes) -> Mark:
    """The mark of :func:`encode_mark`."""
    time, sample, kind, name = json.loads(raw)
    return Mark(time, sample, kind, name)


@dataclass(frozen=True)
class Batch:
    """One process's samples of a run, encoded, on their way to Redis."""

    rubric: str
    run: str
    version: str
    samples: tuple[bytes, ...]
    now: float


class Keys:
    """The Redis keys of one run's shared state."""

    def __init__(self, prefix: str, rubric: str, run: str):
        # The rubric's length first: neither name can make another run's keys.
        base = f"{prefix}:monitor:{len(rubric)}:{rubric}:{run}".encode()
        self.meta, self.window, self.baseline = base + b":meta", base + b":win", base + b":base"
        self.alerts, self.history, self.events = base + b":alerts", base + b":hist", base + b":ev"

    def all(self) -> tuple[bytes, ...]:
        """Every key of the run."""
        return (self.meta, self.window, self.baseline, self.alerts, self.history, self.events)


def text(meta: dict[bytes, bytes], field: str, default: str = "") -> str:
    """A field of a run's meta hash as text, ``default`` when absent."""
    value = meta.get(field.encode())
    return value.decode() if value is not None else default


def evaluated(state: RunState) -> dict[str, str]:
    """The fields of a run's meta hash that an evaluation sets: its signals and health."""
    health = state.health.report() if state.health is not None else None
    return {"signals": json.dumps(state.signals), "health": json.dumps(health)}


def mirrored_state(
    key: tuple[str, str],
    config: MonitorConfig,
    meta: dict[bytes, bytes],
    alerts: Any,
    previous: RunState | None,
    history: list[bytes] | None = None,
    events: list[bytes] | None = None,
) -> RunState:
    """A run's merged state decoded from its shared keys (alerts encoded or decoded); the
    history and events not read are kept from ``previous``."""
    rubric, run = key
    started = float(text(meta, "started", "0"))
    state = RunState(rubric, run, text(meta, "version"), config, started)
    state.samples = int(text(meta, "samples", "0"))
    state.last_seen = float(text(meta, "last_seen", repr(started)))
    state.signals = json.loads(text(meta, "signals", "{}"))
    health = json.loads(text(meta, "health", "null"))
    state.health = Health.from_report(health) if health is not None else None
    decoded = [a if isinstance(a, Alert) else decode_alert(a) for a in alerts]
    state.tracker.alerts = {a.name: a for a in decoded}
    if history is not None:
        state.history = History(capacity=HISTORY_POINTS + 1)
        for raw in history:
            point = json.loads(raw)
            state.history.add(int(point["s"]), float(point["t"]), point["v"])
    elif previous is not None:
        state.history = previous.history
    if events is not None:
        state.events.extend(decode_mark(e) for e in events)
    elif previous is not None:
        state.events = previous.events
    return state
