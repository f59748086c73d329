"""Wire models of ``POST /v1/rewards``: its request (the items of ``items``), its
options, and the rewards it returns.

The result shapes (:class:`RewardResult`, :class:`RubricRef`, :data:`Status`) are shared
by the other routes, as are the item shapes of ``items``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

from rewardsvc.core.criteria_formats import CriteriaFormatName
from rewardsvc.core.errors import JudgeErrorKind
from rewardsvc.core.item_rubric import CriteriaMode
from rewardsvc.core.recipe import ComponentKind, Recipe
from rewardsvc.core.results import Status
from rewardsvc.core.rubric import JudgeRule, Rubric

RUN_NAME_PATTERN = r"^[A-Za-z0-9._:/@+-]+$"
RUN_NAME_MAX = 128
RunName = Annotated[str, Field(min_length=1, max_length=RUN_NAME_MAX, pattern=RUN_NAME_PATTERN)]
"""A training run's name, as trainers and dashboards show it."""

OwnVersion = Annotated[
    str | None,
    Field(
        description="The version of the rubric this result was scored with, when the item's "
        "own criteria made it differ from the response's rubric.version (that rubric with "
        "the item's criteria); null otherwise."
    ),
]
"""A result's own rubric version."""


class CriteriaOptions(BaseModel):
    """How items' own criteria (a dataset's rubric column) meet the batch rubric."""

    model_config = ConfigDict(extra="forbid")

    criteria_mode: CriteriaMode = Field(
        default="replace",
        description="What an item's own criteria do to the batch rubric's criteria: replace "
        "them (the batch rubric is a template: instructions, judges, combine, aggregation, "
        "transforms, monitor) or extend them (its criteria first, then the item's).",
    )
    criteria_format: CriteriaFormatName = Field(
        default="rewardsvc",
        description="The format items' criteria are written in, as the dataset ships them: "
        "rewardsvc criterion objects, healthbench ({criterion, points}), rar ({title, "
        "description, weight}), strings, or tinker (rubric_items).",
    )


class RewardOptions(CriteriaOptions):
    """Per-request overrides of the rubric's settings."""

    model_config = ConfigDict(extra="forbid")

    judges: list[str] | None = Field(
        default=None, min_length=1, description="Score with only these judges of the rubric."
    )
    rule: JudgeRule | None = Field(default=None, description="Override the aggregation rule.")
    min_judges: int | None = Field(default=None, ge=1, description="Override min_judges.")
    use_cache: bool = Field(default=True, description="Read and write the verdict cache.")
    explain: bool = Field(
        default=False,
        description="Return, in each result, what every judge read for each criterion (or "
        "step): its chat messages or completion prompt, fences included.",
    )


def _scorer_kind(value: Any) -> str:
    """An inline recipe (``kind: recipe``), an inline rubric (another object), or else an
    id (a string; other types are refused as not one)."""
    if isinstance(value, dict):
        kind = value.get("kind")
    elif isinstance(value, Rubric | Recipe):
        kind = value.kind
    else:
        return "str"
    # Union members are named by class, so that error locations read as a union choice.
    return "Recipe" if kind == "recipe" else "Rubric"


Scorer = Annotated[
    Annotated[str, Tag("str")]
    | Annotated[Rubric, Tag("Rubric")]
    | Annotated[Recipe, Tag("Recipe")],
    Discriminator(_scorer_kind),
]


class RewardRequest(BaseModel):
    """A batch of rollouts scored against one rubric, recipe or routing table."""

    model_config = ConfigDict(extra="forbid")

    rubric: Scorer = Field(
        description="The id of a library rubric, recipe or routing table, or an inline "
        "rubric or recipe (kind: recipe) object."
    )
    items: list[Any] = Field(
        min_length=1,
        description="Rollouts (see Item). Each is validated on its own: a malformed item is "
        "returned with status rejected and does not fail the batch.",
    )
    options: RewardOptions = Field(default_factory=RewardOptions)
    run: RunName | None = Field(
        default=None,
        description="The training run these rewards belong to; the reward monitor keeps its "
        "statistics and alerts per (rubric, run). Without it: the run 'default'.",
    )


class CriterionScore(BaseModel):
    """One judge's verdict on one criterion."""

    score: float | None = Field(description="In [0, 1]; null when the call failed.")
    variance: float = Field(default=0.0, description="Within-judge variance of the score.")
    p: dict[str, float] | None = Field(
        default=None, description="logprob method: probability of each scale answer."
    )
    error: str | None = None
    error_kind: JudgeErrorKind | None = Field(
        default=None, description="Why the call failed, as a fixed kind (null when it scored)."
    )
    evidence: dict[str, Any] | None = Field(
        default=None,
        description="A grader criterion: what the grader extracted and compared (no judge call).",
    )
    reasoning: str | None = Field(
        default=None,
        description="options.explain: a reasoning judge's reasoning before its answer "
        "(null otherwise).",
    )
    stage: int | None = Field(
        default=None,
        description="A cascaded rubric (under the cascade's name among the judges): the "
        "stage, 1 the first, whose answer this is; its score, variance and p are that "
        "stage's (the mean over an ensemble stage's judges). Null for a plain judge.",
    )


class JudgeResult(BaseModel):
    """One judge's score for one item, with its per-criterion breakdown."""

    score: float | None = Field(description="Judge score in [0, 1]; null when the judge failed.")
    raw_score: float | None = Field(default=None, description="Score before per-judge calibration.")
    variance: float = Field(default=0.0, description="Within-judge variance of the score.")
    criteria: dict[str, CriterionScore] = Field(default_factory=dict)
    error: str | None = None
    without_images: bool = Field(
        default=False,
        description="True when the item carries images and this judge reads text only "
        "(its pool entry lacks capabilities.vision): it scored the item with a placeholder "
        "where each image stood. A judge that sees images, or an item without any: false.",
    )


class RubricRef(BaseModel):
    """The rubric, recipe or routing table, and exact version, that produced the rewards."""

    id: str
    version: str
    kind: Literal["rubric", "recipe", "routing"] = Field(
        default="rubric", description="What ``id`` names."
    )


class ComponentScore(BaseModel):
    """One component of a recipe for one item: its score, and its evidence (a grader) or
    judges (a rubric or constitution), or why it was not computed."""

    kind: ComponentKind
    weight: float
    score: float | None = Field(description="In [0, 1]; null when skipped or failed.")
    status: Status = "ok"
    evidence: dict[str, Any] | None = Field(
        default=None, description="A grader: what it extracted and compared."
    )
    judges: dict[str, JudgeResult] = Field(default_factory=dict)
    uncertainty: float | None = None
    version: str | None = Field(default=None, description="The rubric's version.")
    skipped: str | None = Field(
        default=None, description="Why it was not computed (a gate decided the item)."
    )
    error: str | None = None
    error_kind: JudgeErrorKind | None = Field(
        default=None,
        description="Why a grader gave no score: grader_timeout, grader_busy, grader_failed "
        "or deadline (null when it scored).",
    )


class StepScore(BaseModel):
    """One assistant step's process reward."""

    index: int = Field(description="The 0-based assistant step.")
    reward: float | None = Field(description="In [0, 1]; null when no judge scored the step.")
    status: Status
    criteria: dict[str, float | None] = Field(
        default_factory=dict, description="Each step criterion's mean score over the judges."
    )
    error: str | None = None


class ItemProblem(BaseModel):
    """What is wrong with a rejected item, and where within the item."""

    loc: list[str | int] = Field(
        description="The place of the field at fault within the item, as keys: "
        '["reference"], ["criteria", 2, "text"], ["metadata", "data_source"]; empty for '
        "the item as a whole."
    )
    message: str = Field(description="What is wrong, without the place.")


class RewardResult(BaseModel):
    """The reward for one item."""

    id: str
    reward: float | None = Field(description="In [0, 1]; null unless status is ok or degraded.")
    status: Status = Field(
        description="ok: all judges scored; degraded: fewer than all but at least min_judges; "
        "judge_error: fewer than min_judges (mask this sample); rejected: malformed item."
    )
    uncertainty: float | None = Field(
        default=None,
        description="sqrt(variance between judges + mean variance within judges).",
    )
    judges: dict[str, JudgeResult] = Field(default_factory=dict)
    flags: list[str] = Field(
        default_factory=list, description="Attack shapes found (dataset:<flag>: in its data)."
    )
    cached: bool = Field(default=False, description="Every verdict came from the cache.")
    error: str | None = Field(default=None, description="Why the item was rejected or failed.")
    problems: list[ItemProblem] | None = Field(
        default=None,
        description="A rejected item: its problems as data, each placed within the item "
        "(error writes them placed in the request, items[3].reference: ...); null otherwise.",
    )
    version: OwnVersion = None
    components: dict[str, ComponentScore] | None = Field(
        default=None, description="A recipe: every component's part (null for a rubric)."
    )
    decided_by: str | None = Field(
        default=None, description="A recipe: the gate that failed and set the reward (its floor)."
    )
    vetoed_by: list[str] = Field(
        default_factory=list, description="A recipe: the vetoes that capped the reward."
    )
    scored_by: RubricRef | None = Field(
        default=None, description="A routing table: the rubric or recipe that scored the item."
    )
    steps: list[StepScore] | None = Field(
        default=None,
        description="Process rewards (criteria with scope: step): one reward per assistant "
        "step; the item's reward combines them by the rubric's step_combine.",
    )
    explain: dict[str, dict[str, list[dict[str, Any]] | str]] | None = Field(
        default=None,
        description="options.explain: per judge, per criterion (or criterion@stepK; method "
        "batched: the criteria of one call joined by +), the messages or prompt it read (a "
        "judge that sees images: its message's content parts, an image sent as a data: URL "
        'shown as {"type": "image_url", "image_url": {"url": "sha256:<hex of its bytes>", '
        '"bytes": <their count>}}, never the URL; one from a media_domains URL by that URL).',
    )
    objectives: dict[str, float | None] | None = Field(
        default=None,
        description="The objectives the rubric or recipe declares, by name: each in [0, 1], "
        "null when its parts could not be scored; null when it declares none.",
    )

    @field_validator("problems", mode="before")
    @classmethod
    def _none_when_empty(cls, value: Any) -> Any:
        # A domain result's empty tuple of problems is read as null, not [].
        return value or None


class StageUsage(BaseModel):
    """One cascade stage's work for this request."""

    judges: list[str] = Field(description="The stage's judges.")
    questions: int = Field(default=0, description="Questions (item, criterion) the stage answered.")
    judge_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = Field(default=None, description="The stage's calls at their prices.")


class Usage(BaseModel):
    """Judge work done for this request (cache hits and deduplicated calls cost nothing)."""

    judge_calls: int = 0
    judge_calls_skipped: int = Field(
        default=0, description="Judge calls a recipe's gates made unnecessary."
    )
    grader_calls: int = Field(default=0, description="Deterministic grader runs.")
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cached_tokens: int = Field(
        default=0,
        description="Prompt tokens the judges' providers served from their prompt caches "
        "(part of prompt_tokens; OpenAI's usage.prompt_tokens_details.cached_tokens).",
    )
    cost: float | None = Field(
        default=None,
        description="What the judge calls of this request cost at the judges' prices (input, "
        "cached input and output per million tokens, in the pool file); null when no judge "
        "called has prices. Cache hits cost nothing.",
    )
    cost_per_reward: float | None = Field(
        default=None, description="cost divided by the number of results."
    )
    stages: list[StageUsage] = Field(
        default_factory=list,
        description="A cascaded rubric: the work of each stage, the first first; a later "
        "stage's questions over the first's is the share escalated. Empty otherwise.",
    )


class RewardResponse(BaseModel):
    """Rewards for every item of a request, in request order."""

    rubric: RubricRef
    results: list[RewardResult]
    usage: Usage
