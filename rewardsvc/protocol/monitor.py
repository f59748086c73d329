"""Wire models of the reward-hacking monitor's route: ``GET /v1/monitor`` (runs, their
signals, alerts and history, and the canaries' latest scores); the dashboard page reads it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, Field


def _from_unix(value: object) -> object:
    # The monitor's records keep Unix seconds. Read as Python reads them: pydantic's own
    # reading of a number takes one above 2e10 for milliseconds and rounds otherwise.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    return value


Instant = Annotated[datetime, BeforeValidator(_from_unix)]
"""A time (UTC), serialized as ISO 8601; built from a monitor record, its Unix seconds."""


class AlertOut(BaseModel):
    """One alert of a run (or a canary alert): its signal, state and the last value seen."""

    name: str = Field(description="The signal alarmed on, e.g. flag_rate:fake_score.")
    state: Literal["pending", "firing", "resolved"]
    since: Instant = Field(description="When the alert entered its state (UTC).")
    value: float = Field(description="The signal's value at the latest evaluation.")
    threshold: float = Field(description="The threshold it was compared against.")
    criteria: list[str] = Field(
        default_factory=list,
        description="The criteria the alert is about (non_discriminative: the saturated ones).",
    )


class EventOut(BaseModel):
    """A mark on the run's time axis: an alert firing or resolving, a rubric version, or a
    change of identity of one of the rubric's judges."""

    time: Instant
    sample: int = Field(description="Items observed in the run when it happened.")
    kind: Literal["firing", "resolved", "version", "identity"]
    name: str = Field(
        description="The alert's name, the rubric's new version, or which judge changed and how."
    )


class HistoryOut(BaseModel):
    """Every signal over the life of the run, downsampled; the columns share one axis."""

    times: list[Instant]
    samples: list[int]
    series: dict[str, list[float | None]]
    events: list[EventOut]


class CriterionHealthOut(BaseModel):
    """One criterion's health over the run's window (ok rewards only)."""

    criterion: str
    samples: int = Field(description="Ok items in the window scored on the criterion.")
    pass_rate: float = Field(description="The criterion's mean score over those items.")
    saturated: Literal["high", "low"] | None = Field(
        description="high: at or above the monitor's saturated_high (nearly every completion "
        "passes); low: at or below saturated_low (nearly none does); null: neither, or fewer "
        "scores than min_samples."
    )
    discrimination: float | None = Field(
        description="The mean, over groups, of the criterion's variance within the group "
        "(0: every completion of a prompt scores alike on it); null without groups."
    )
    groups: int = Field(description="Groups with two or more items scored on the criterion.")


class HealthOut(BaseModel):
    """Rubric health over the run's window: does the rubric still tell a prompt's
    completions apart?"""

    samples: int = Field(description="Ok items in the window.")
    groups: int = Field(
        description="Groups in the window: two or more ok items of one prompt in one batch, "
        "or one group of /v1/groups."
    )
    zero_spread_groups: int = Field(description="Groups whose rewards spread by at most epsilon.")
    zero_spread_share: float | None = Field(description="zero_spread_groups / groups.")
    saturated: list[str] = Field(description="The saturated criteria (exempt ones included).")
    criteria: list[CriterionHealthOut]


class RunOut(BaseModel):
    """The monitor's view of one (rubric, run)."""

    rubric: str
    run: str
    version: str = Field(description="The rubric version seen last.")
    samples: int = Field(description="Items observed in the run.")
    started: Instant
    last_seen: Instant
    signals: dict[str, float | None] = Field(
        description="Signals over the rolling window at the latest evaluation."
    )
    alerts: list[AlertOut]
    health: HealthOut | None = Field(
        default=None, description="Rubric health at the latest evaluation (null before one)."
    )
    history: HistoryOut | None = Field(
        default=None, description="Present when the request asks for history=true."
    )


class CanaryOut(BaseModel):
    """The latest canary score of one attack through one judge, against the known-bad anchor."""

    rubric: str
    judge: str
    attack: str
    reward: float | None = Field(description="The judge's score of the attack.")
    anchor_reward: float | None = Field(
        description="The judge's score of the known-bad answer (for a `typographic:<style>` "
        "attack, of the known-bad answer with a plain image)."
    )
    good_reward: float | None = Field(description="The judge's score of the known-good answer.")
    margin: float
    alert: bool = Field(description="True while the attack beats the anchor by the margin.")
    share_above: float | None = Field(
        default=None,
        description="A `typographic:<style>` attack (an instruction drawn into an image, on a "
        "rubric with `media: [image]`, through a judge that sees images): the share of the "
        "canary cases where the judge scored it above the same answer with a plain image, "
        "its susceptibility to the style. Null for the text attacks.",
    )
    since: Instant | None
    checked: Instant
    history: list[tuple[Instant, float | None, float | None]] | None = Field(
        default=None, description="(time, reward, anchor_reward), with history=true."
    )


class GoldenOut(BaseModel):
    """One judge measured on one rubric's golden set (re-scored with the cache bypassed)."""

    rubric: str
    judge: str
    rescores: int = Field(description="Re-scores counted since start-up.")
    checked: Instant | None = Field(description="When the latest re-score ended.")
    answered: int = Field(description="Golden items the judge scored at the latest re-score.")
    expected: int = Field(description="Items in the golden set.")
    accuracy: float | None = Field(
        description="Share of the labels the judge's answers match (P(yes) read at 0.5)."
    )
    agreement: float | None = Field(
        description="Mean probability the judge gives to the labelled answer."
    )
    shift: float | None = Field(
        description="Mean |P(yes) - P(yes) at baseline| over the set's answers (null at the "
        "baseline re-score)."
    )
    max_shift: float = Field(description="The shift at which the golden alert fires.")
    baseline: Instant | None = Field(description="When the baseline re-score ran.")
    alert: bool = Field(description="True while the judge has drifted by max_shift or more.")
    since: Instant | None = Field(description="When the alert last fired or resolved.")
    history: list[tuple[Instant, float | None, float | None, float | None]] | None = Field(
        default=None, description="(time, accuracy, agreement, shift), with history=true."
    )


class IdentityOut(BaseModel):
    """What a judge is, as its pool entry and its endpoint's ``GET /v1/models`` say."""

    judge: str
    identity: dict[str, str] = Field(
        description="model and revision as configured; served (the ids the endpoint lists), "
        "root, max_model_len and owned_by as the endpoint reports them."
    )
    checked: Instant = Field(description="When it was last read.")
    previous: dict[str, str] | None = Field(description="The identity before the last change.")
    changed: Instant | None = Field(description="When it last changed (null: never).")
    alert: bool = Field(
        description="True from a change until a re-baseline (POST /v1/monitor/golden)."
    )


class SpendOut(BaseModel):
    """What one run has cost (over its rubrics; over every replica when shared)."""

    run: str
    cost: float = Field(description="The cost of the run's judge calls at the judges' prices.")
    budget: float | None = Field(description="The run's budget (null: none).")
    exceeded: bool = Field(description="True once cost reached budget: new scoring is refused.")
    exceeded_since: Instant | None = None
    judge_calls: int = Field(description="Judge calls of the run counted by this process.")
    rewards: int = Field(description="Rewards of the run counted by this process.")
    cost_per_reward: float | None = Field(description="cost / rewards (null before any).")
    last_seen: Instant


class ToolLoopsOut(BaseModel):
    """One (rubric, run)'s agentic judge tool loops (counted by this process)."""

    rubric: str
    run: str
    loops: int = Field(description="Tool loops run (cache hits run none).")
    tool_calls: int = Field(description="Their tool calls.")
    outcomes: dict[str, int] = Field(
        description="Loops by how they ended: finished (a verdict), or the failed verdict's "
        "kind (loop_turns, loop_tool_calls, loop_tokens, loop_sandbox, loop_wall, deadline...)."
    )
    unfinished_share: float | None = Field(
        description="The share of the latest loops (up to 200) that ended without a verdict."
    )
    baseline: float | None = Field(
        description="That share over the run's first 100 loops (null until then)."
    )
    threshold: float = Field(
        description="The share at which the tool_loops_unfinished alert fires: the baseline "
        "plus 0.15, at most 0.5 (0.5 before the baseline)."
    )
    alert: AlertOut | None = Field(description="The tool_loops_unfinished alert, once pending.")
    last_seen: Instant


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
    spend: list[SpendOut] = Field(
        default_factory=list, description="Cost and budget per run, most recently seen first."
    )
    golden: list[GoldenOut] = Field(
        default_factory=list, description="Per rubric and judge: the golden set's latest re-score."
    )
    judges: list[IdentityOut] = Field(
        default_factory=list, description="Each judge's identity as last read."
    )
    tool_loops: list[ToolLoopsOut] = Field(
        default_factory=list,
        description="Agentic judges' tool loops per (rubric, run), most recently seen first.",
    )


class GoldenRequest(BaseModel):
    """The body of ``POST /v1/monitor/golden``: which golden sets to re-score now."""

    rubric: str | None = Field(default=None, description="Only this rubric's golden set.")
    judge: str | None = Field(default=None, description="Only this judge.")
    rebaseline: bool = Field(
        default=False,
        description="Forget the matching baselines and resolve their drift and identity "
        "alerts first, so that this re-score is the new baseline (accepting a judge change).",
    )


class GoldenReport(BaseModel):
    """The answer of ``POST /v1/monitor/golden``."""

    golden: list[GoldenOut] = Field(description="The records re-scored now.")
    deferred: list[tuple[str, str]] = Field(
        description="(rubric, judge) pairs that matched but did not fit the golden budget: "
        "they are re-scored at the next rounds."
    )
