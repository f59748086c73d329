"""Wire models of the reward-hacking monitor's route: ``GET /v1/monitor`` (runs, their
signals, alerts and history, and the canaries' latest scores); the dashboard page reads it."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field


class AlertOut(BaseModel):
    """One alert of a run (or a canary alert): its signal, state and the last value seen."""

    name: str = Field(description="The signal alarmed on, e.g. flag_rate:fake_score.")
    state: Literal["pending", "firing", "resolved"]
    since: datetime = Field(description="When the alert entered its state (UTC).")
    value: float = Field(description="The signal's value at the latest evaluation.")
    threshold: float = Field(description="The threshold it was compared against.")


class EventOut(BaseModel):
    """A mark on the run's time axis: an alert firing or resolving, or a rubric version."""

    time: datetime
    sample: int = Field(description="Items observed in the run when it happened.")
    kind: Literal["firing", "resolved", "version"]
    name: str = Field(description="The alert's name, or the rubric's new version.")


class HistoryOut(BaseModel):
    """Every signal over the life of the run, downsampled; the columns share one axis."""

    times: list[datetime]
    samples: list[int]
    series: dict[str, list[float | None]]
    events: list[EventOut]


class RunOut(BaseModel):
    """The monitor's view of one (rubric, run)."""

    rubric: str
    run: str
    version: str = Field(description="The rubric version seen last.")
    samples: int = Field(description="Items observed in the run.")
    started: datetime
    last_seen: datetime
    signals: dict[str, float | None] = Field(
        description="Signals over the rolling window at the latest evaluation."
    )
    alerts: list[AlertOut]
    history: HistoryOut | None = Field(
        default=None, description="Present when the request asks for history=true."
    )


class CanaryOut(BaseModel):
    """The latest canary score of one attack through one judge, against the known-bad anchor."""

    rubric: str
    judge: str
    attack: str
    reward: float | None = Field(description="The judge's score of the attack.")
    anchor_reward: float | None = Field(description="The judge's score of the known-bad answer.")
    good_reward: float | None = Field(description="The judge's score of the known-good answer.")
    margin: float
    alert: bool = Field(description="True while the attack beats the anchor by the margin.")
    since: datetime | None
    checked: datetime
    history: list[tuple[datetime, float | None, float | None]] | None = Field(
        default=None, description="(time, reward, anchor_reward), with history=true."
    )


class MonitorReport(BaseModel):
    """The body of ``GET /v1/monitor``."""

    source: Literal["local", "shared", "local_fallback"] = Field(
        default="local",
        description="Where the runs' statistics come from: this process (no shared state "
        "configured), every replica merged through Redis, or this process alone because "
        "Redis is unreachable (it resynchronizes when Redis is back).",
    )
    runs: list[RunOut]
    canaries: list[CanaryOut]
