"""Wire models of the comparative routes: ``POST /v1/groups`` (rewards relative within groups
of completions) and ``POST /v1/preferences`` (P(a better) for pairs, asked in both orders).

A request's groups and pairs travel as raw objects and are read one at a time with
:class:`GroupItem` and :class:`PairIn`, so that a malformed one is rejected alone.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rewardsvc.core import comparative as cmp
from rewardsvc.core.errors import JudgeErrorKind
from rewardsvc.core.results import Status
from rewardsvc.core.rubric import JudgeRule, Rubric
from rewardsvc.protocol.items import REFERENCE, WORKSPACE, ItemCriteria, Text, Workspace
from rewardsvc.protocol.rewards import CriteriaOptions, OwnVersion, RubricRef

# ------------------------------------------------------------------ requests


class GroupItem(BaseModel):
    """One group: completions of one prompt, compared with each other."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, max_length=256, description="Defaults to the index.")
    prompt: Text = Field(description="What the policy was asked: a string or chat messages.")
    completions: list[Text] = Field(
        min_length=2, description="The group's completions (untrusted), strings or messages."
    )
    reference: Text | None = Field(
        default=None, description=f"Reference answer or label: {REFERENCE}"
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    criteria: ItemCriteria = None
    files: list[Workspace] | None = Field(
        default=None,
        description="Agent groups: each completion's workspace (untrusted), in the order of "
        f"`completions`, one per completion; each {WORKSPACE}. A code grader criterion "
        "(unit_tests) runs each completion's own workspace in a sandbox of its own, with the "
        "task's test files and runner configuration restored over it, and its tamper flags "
        "are that completion's. Never shown to a judge.",
    )

    @model_validator(mode="after")
    def _one_workspace_per_completion(self) -> GroupItem:
        if self.files is not None and len(self.files) != len(self.completions):
            raise ValueError(
                f"files: {len(self.files)} workspaces for {len(self.completions)} completions "
                "(one per completion, in order)"
            )
        return self


class ComparativeOptions(CriteriaOptions):
    """What both comparative routes' options hold."""

    model_config = ConfigDict(extra="forbid")

    explain: bool = Field(
        default=False,
        description="Return, in each result, what every judge read for each question it "
        "asked of one completion alone (an essential gate, a criterion an agentic judge "
        "checks with tools): its chat messages, fences included, and an agentic judge's "
        "tool calls, their results as shown and its verdict. Comparisons are not shown.",
    )


class GroupOptionsIn(ComparativeOptions):
    """How to compare the completions of each group."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["listwise", "pairwise"] = Field(
        default="listwise",
        description="listwise: one call per order sees the whole group; pairwise: a "
        "tournament of pairs, each asked in both orders.",
    )
    tournament: cmp.Tournament = Field(
        default="circular",
        description="pairwise: circular (each against the next), all_pairs, or sample "
        "(a random connected set of `pairs` pairs).",
    )
    orders: int = Field(
        default=2, ge=1, le=8, description="listwise: shuffled presentation orders asked."
    )
    pairs: int | None = Field(
        default=None, ge=1, description="tournament sample: pairs per group (default n)."
    )
    judges: list[str] | None = Field(default=None, min_length=1)
    rule: JudgeRule | None = Field(default=None, description="Override the judge rule.")
    min_judges: int | None = Field(default=None, ge=1)
    seed: int | None = Field(
        default=None, description="Changes the shuffles (default: seeded by the content)."
    )


class GroupRequest(BaseModel):
    """Groups of completions scored relative to each other against one rubric."""

    model_config = ConfigDict(extra="forbid")

    rubric: str | Rubric = Field(description="A library rubric id or an inline rubric.")
    groups: list[Any] = Field(min_length=1, description="Groups (see GroupItem).")
    options: GroupOptionsIn = Field(default_factory=GroupOptionsIn)
    run: str | None = Field(default=None, max_length=128, description="The training run.")


class PairIn(BaseModel):
    """Two completions of one prompt to compare."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, max_length=256)
    prompt: Text
    a: Text = Field(description="The first completion (untrusted).")
    b: Text = Field(description="The second completion (untrusted).")
    reference: Text | None = Field(
        default=None, description=f"Reference answer or label: {REFERENCE}"
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    criteria: ItemCriteria = None


class PreferenceOptionsIn(ComparativeOptions):
    """Overrides and the label margin."""

    model_config = ConfigDict(extra="forbid")

    judges: list[str] | None = Field(default=None, min_length=1)
    rule: JudgeRule | None = None
    min_judges: int | None = Field(default=None, ge=1)
    margin: float = Field(
        default=cmp.DEFAULT_MARGIN,
        ge=0.0,
        lt=0.5,
        description="label a when p_a_better > 0.5 + margin, b when < 0.5 - margin, else tie.",
    )


class PreferenceRequest(BaseModel):
    """Pairs judged in both orders against one rubric."""

    model_config = ConfigDict(extra="forbid")

    rubric: str | Rubric
    pairs: list[Any] = Field(min_length=1, description="Pairs (see PairIn).")
    options: PreferenceOptionsIn = Field(default_factory=PreferenceOptionsIn)
    run: str | None = Field(default=None, max_length=128, description="The training run.")


# ------------------------------------------------------------------ responses


Seen = dict[str, dict[str, list[dict[str, Any]] | str]]
"""What each judge read per criterion (``options.explain``), as ``/v1/rewards`` shows it: a
vision judge's message content as parts, an image sent as a data: URL by its sha256."""


class ComparisonOut(BaseModel):
    """One judge call: criterion, order name, completions shown (input indices, in the
    order shown) and P(each shown label), or why it failed."""

    criterion: str
    order: str = Field(description="ab / ba for a pair; order1, order2 ... for listwise.")
    shown: list[int]
    p: list[float] | None = None
    error: str | None = None
    error_kind: JudgeErrorKind | None = Field(
        default=None, description="Why the call failed, as a fixed kind (null when it answered)."
    )


class GroupJudgeOut(BaseModel):
    """One judge on one group."""

    rewards: list[float] | None = Field(
        description="This judge's score of each completion in input order: its criteria "
        "combined (a completion below an essential gate capped at the gate's cap), calibrated "
        "when the rubric asks; null on failure."
    )
    position_consistency: float | None = None
    criteria: dict[str, list[float]] = Field(
        default_factory=dict,
        description="Per criterion: each completion's win rate, or, for a grader's criterion "
        "or an essential gate's (asked of each completion alone), its score.",
    )
    comparisons: list[ComparisonOut] = Field(default_factory=list)
    without_images: bool = Field(
        default=False,
        description="True when the group carries images and this judge reads text only "
        "(no capabilities.vision): it compared with a placeholder where each image stood.",
    )
    error: str | None = None
    error_kind: JudgeErrorKind | None = Field(
        default=None,
        description="Why this judge has no rewards for the group, as a fixed kind: that of "
        "its first failed question, a grader's failure first (e.g. sandbox_unavailable, "
        "grader_timeout, timeout); null when it scored.",
    )


class GroupResultOut(BaseModel):
    """Rewards of one group, in input order."""

    id: str
    rewards: list[float | None] = Field(
        description="Each in [0, 1]: the expected win rate against the rest of the group, "
        "combined over the criteria (graded and gated criteria by their scores, a completion "
        "below an essential gate capped) and the judges."
    )
    position_consistency: float | None = Field(
        description="Share of compared pairs whose verdict survived the change of order."
    )
    status: Status
    uncertainty: list[float] | None = None
    judges: dict[str, GroupJudgeOut] = Field(default_factory=dict)
    flags: list[list[str]] = Field(default_factory=list, description="Per completion.")
    error: str | None = None
    version: OwnVersion = None
    error_kind: JudgeErrorKind | None = Field(
        default=None,
        description="Why a judge failed on this group, as a fixed kind: the first failed "
        "judge's (see judges.*.error_kind). Set whenever a judge failed: with rewards null "
        "(status judge_error) or without it (degraded); null when every judge scored or "
        "the group was rejected.",
    )
    explain: list[Seen] | None = Field(
        default=None,
        description="options.explain: per completion, per judge, per criterion asked of it "
        "alone, what the judge read (an agentic judge's transcript: its tool calls, their "
        "results and its verdict).",
    )


class ComparativeUsageOut(BaseModel):
    """Judge work of the request, with calls per presentation order (cache hits and
    deduplicated comparisons cost nothing and are not calls)."""

    judge_calls: int = 0
    cache_hits: int = Field(default=0, description="Comparisons served from the verdict cache.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    calls_by_order: dict[str, int] = Field(default_factory=dict)
    cached_tokens: int = Field(default=0, description="Prompt tokens served from prompt caches.")
    cost: float | None = Field(
        default=None, description="What the judge calls cost at the judges' prices (or null)."
    )


class GroupResponse(BaseModel):
    """Rewards of every group, in request order."""

    rubric: RubricRef
    method: str
    results: list[GroupResultOut]
    usage: ComparativeUsageOut


class JudgePreferenceOut(BaseModel):
    """One judge on one pair."""

    p_a_better: float | None
    orders: dict[str, float] | None = None
    consistent: bool | None = None
    criteria: dict[str, dict[str, float]] = Field(default_factory=dict)
    without_images: bool = Field(
        default=False,
        description="True when the pair carries images and this judge reads text only "
        "(no capabilities.vision): it compared with a placeholder where each image stood.",
    )
    error: str | None = None
    error_kind: JudgeErrorKind | None = Field(
        default=None,
        description="Why this judge has no P(a better), as a fixed kind: that of its first "
        "failed question, a grader's failure first; null when it answered.",
    )


class PreferenceResultOut(BaseModel):
    """The verdict on one pair."""

    id: str
    p_a_better: float | None = Field(description="P(a better), the mean of both orders.")
    orders: dict[str, float] | None = Field(
        description="ab: P(a better) with a shown first; ba: with b shown first."
    )
    consistent: bool | None = Field(description="orders.ab and orders.ba on one side of 0.5.")
    label: Literal["a", "b", "tie"] | None
    status: Status
    uncertainty: float | None = None
    judges: dict[str, JudgePreferenceOut] = Field(default_factory=dict)
    flags: dict[str, list[str]] = Field(default_factory=dict)
    error: str | None = None
    version: OwnVersion = None
    error_kind: JudgeErrorKind | None = Field(
        default=None,
        description="Why a judge failed on this pair, as a fixed kind: the first failed "
        "judge's (see judges.*.error_kind). Set whenever a judge failed: with p_a_better "
        "null (status judge_error) or without it (degraded); null when every judge answered "
        "or the pair was rejected.",
    )
    explain: dict[str, Seen] | None = Field(
        default=None,
        description="options.explain: per side (a, b), per judge, per criterion asked of "
        "that side alone, what the judge read (an agentic judge's transcript).",
    )


class PreferenceResponse(BaseModel):
    """Verdicts on every pair, in request order."""

    rubric: RubricRef
    results: list[PreferenceResultOut]
    usage: ComparativeUsageOut
