"""Rubric and constitution models: the schema of a rubric YAML file.

These models are pure data with validation; they do no I/O. Loading a file
(with file:line errors) lives in ``rewardsvc.library.yamlfile``; the library on disk
in ``rewardsvc.library.registry``. The JSON Schema that editors use is generated
from ``Rubric``. Validators that need to know the deployment read it from the
pydantic validation context: ``judge_names`` (the judge pool's names), ``judge_unable``
(why a pool judge cannot score: its method needs what its endpoint cannot do) and
``flag_names`` (the detectors' flags); a check whose key is absent is skipped.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict

from rewardsvc.core.base import StrictModel, check_unique_ids
from rewardsvc.core.graders_spec import GraderSpec
from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.core.objectives import ObjectiveName, RubricObjective, check_rubric_objectives
from rewardsvc.core.transforms import Transforms

Category = Literal["essential", "important", "optional", "pitfall"]
ScaleKind = Literal["binary", "likert"]
Combine = Literal["explicit", "implicit", "worst"]
JudgeRule = Literal["mean", "min", "uwo", "median", "softmin"]
View = Literal["final", "trace", "tools"]
Scope = Literal["episode", "step"]
StepCombine = Literal["min", "mean", "last", "discounted"]
Calibration = Literal["none", "zscore", "rank"]

Identifier = Annotated[
    str,
    Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$", description="Lower-case id: a-z 0-9 _ . -"),
]


def _drop_schema_default(schema: JsonDict) -> None:
    """Remove the advertised default from a field's JSON Schema."""
    schema.pop("default", None)


class Criterion(StrictModel):
    """One checkable statement about a response (or, in a constitution, one principle)."""

    id: Identifier = Field(description="Unique within the rubric; used in reward breakdowns.")
    text: str = Field(
        default="",
        description="The statement the judge checks, phrased so that 'yes' is what the weight "
        "describes: for a pitfall, 'yes' means the pitfall is present. At least 3 characters "
        "unless a grader scores the criterion.",
    )
    grader: GraderSpec | None = Field(
        default=None,
        description="A deterministic grader that scores this criterion instead of the judges "
        "(no judge call).",
    )
    category: Category = Field(
        default="important",
        description="essential (may gate), important, optional, or pitfall (weight must be < 0).",
    )
    weight: float = Field(
        default=1.0,
        description="Contribution to the judge score; negative for pitfalls. "
        "Defaults by category when omitted: essential 5, important 3, optional 1, pitfall -3.",
        # The real default depends on the category (set before validation), so the
        # schema must not advertise a single one.
        json_schema_extra=_drop_schema_default,
    )
    scale: ScaleKind = Field(
        default="binary",
        description="binary: the judge answers yes/no; likert: a digit in `likert_range`.",
    )
    likert_range: tuple[int, int] = Field(
        default=(1, 5),
        description="Lowest and highest Likert value (single digits, 0..9), for scale: likert.",
    )
    gate: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Essential criteria only: a score below this caps the judge score at `cap`.",
    )
    cap: float = Field(
        default=0.0, ge=0.0, le=1.0, description="The cap applied when the gate fails."
    )
    view: View | None = Field(
        default=None,
        description="What the judge sees of an agent trajectory for this criterion: final "
        "(the last assistant message), trace (every step, call and result) or tools (only "
        "the tool calls and their results); default the rubric's view.",
    )
    scope: Scope = Field(
        default="episode",
        description="episode: scored once per item; step: scored for each assistant step, "
        "the judge seeing the trajectory up to and including that step (process reward).",
    )

    @property
    def per_step(self) -> bool:
        """Scored for each assistant step (process reward), not once per episode."""
        return self.scope == "step"

    @property
    def asks_judges(self) -> bool:
        """Scored by the judges once per episode (no grader, not per step)."""
        return self.grader is None and not self.per_step

    @model_validator(mode="before")
    @classmethod
    def _default_weight(cls, data: object) -> object:
        if isinstance(data, dict) and "weight" not in data:
            defaults = {"essential": 5.0, "important": 3.0, "optional": 1.0, "pitfall": -3.0}
            data = {**data, "weight": defaults.get(data.get("category", "important"), 1.0)}
        return data

    @field_validator("likert_range")
    @classmethod
    def _check_range(cls, value: tuple[int, int]) -> tuple[int, int]:
        low, high = value
        if not 0 <= low < high <= 9:
            raise ValueError("must be two single digits with low < high (0..9)")
        return value

    @model_validator(mode="after")
    def _check_category(self) -> Criterion:
        if self.category == "pitfall" and self.weight >= 0:
            raise ValueError("weight: a pitfall must have a negative weight")
        if self.category != "pitfall" and self.weight < 0:
            raise ValueError("weight: only a pitfall may have a negative weight")
        if self.gate is not None and self.category != "essential":
            raise ValueError("gate: only an essential criterion may have a gate")
        if self.grader is None and len(self.text) < 3:
            raise ValueError("text: at least 3 characters (or give a grader)")
        if self.grader is not None and self.scale != "binary":
            raise ValueError("scale: a grader criterion has no judge scale")
        return self

    def scale_values(self) -> list[int]:
        """The answer values the judge may give: [0, 1] for binary (no, yes)."""
        if self.scale == "binary":
            return [0, 1]
        low, high = self.likert_range
        return list(range(low, high + 1))


class JudgeRef(StrictModel):
    """A judge from the judge pool that scores this rubric."""

    name: Identifier = Field(description="A judge name defined in the judge pool file.")
    weight: float = Field(default=1.0, gt=0, description="Relative weight of this judge.")


class Aggregation(StrictModel):
    """How the scores of several judges combine into one reward."""

    rule: JudgeRule = Field(
        default="mean",
        description="mean, min (worst case), uwo (mean - lambda * variance across judges), "
        "median, or softmin (-beta * log mean exp(-r / beta)).",
    )
    uwo_lambda: float = Field(default=0.5, ge=0, description="lambda for rule: uwo.")
    softmin_beta: float = Field(default=0.1, gt=0, description="beta for rule: softmin.")
    calibration: Calibration = Field(
        default="none",
        description="Per-judge calibration over a rolling window of its recent scores on "
        "this rubric, so that a harsh judge does not dominate min.",
    )
    calibration_window: int = Field(default=512, ge=8, le=100_000)


class Rubric(StrictModel):
    """A rubric (criteria) or constitution (principles), scored by LLM judges."""

    model_config = ConfigDict(json_schema_extra={"title": "rewardsvc rubric"})

    id: Identifier = Field(description="Rubric id used in requests, e.g. helpful-answer.")
    kind: Literal["rubric", "constitution"] = Field(
        default="rubric",
        description="constitution: criteria are principles checked for compliance.",
    )
    description: str = Field(default="", description="What the rubric is for (not sent to judges).")
    instructions: str = Field(
        default="",
        description="Task context for the judge, shared by every item (prefix-cache friendly).",
    )
    requires_reference: bool = Field(
        default=False, description="Items must carry a reference answer."
    )
    combine: Combine = Field(
        default="explicit",
        description="explicit: weighted sum of per-criterion scores; implicit: one holistic "
        "Likert call that sees all criteria; worst: the lowest criterion (constitutions).",
    )
    criteria: list[Criterion] = Field(min_length=1, description="Criteria or principles.")
    judges: list[JudgeRef] = Field(
        min_length=1,
        description="Judges that score this rubric: names, or {name, weight}.",
        json_schema_extra={"minItems": 1},
    )
    aggregation: Aggregation = Field(default_factory=Aggregation)
    min_judges: int = Field(
        default=1,
        ge=1,
        description="Fewer successful judges than this gives reward null, status judge_error.",
    )
    transforms: Transforms = Field(default_factory=Transforms)
    monitor: MonitorConfig | None = Field(
        default=None,
        description="Reward monitor settings for this rubric's runs (windows, alert "
        "thresholds); not part of the rubric's version.",
    )
    view: View | None = Field(
        default=None,
        description="What the judge sees of an agent trajectory (final, trace or tools); "
        "unset: the whole completion, as plain items always were.",
    )
    step_combine: StepCombine = Field(
        default="mean",
        description="How the rewards of the steps of criteria with scope: step combine: "
        "min, mean, last, or discounted (sum of gamma^k r_k over sum of gamma^k, k the step).",
    )
    gamma: float = Field(
        default=0.9, gt=0.0, le=1.0, description="Discount per step, for step_combine: discounted."
    )
    objectives: dict[ObjectiveName, RubricObjective] | None = Field(
        default=None,
        description="Named objectives returned beside the reward, each from a criterion "
        "group and/or some judges, for trainers that take several rewards (GDPO); not part "
        "of the rubric's version.",
    )

    @field_validator("judges", mode="before", json_schema_input_type=list[JudgeRef | Identifier])
    @classmethod
    def _judge_shorthand(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("criteria")
    @classmethod
    def _check_criteria(cls, criteria: list[Criterion]) -> list[Criterion]:
        check_unique_ids(criteria, "criterion")
        if sum(c.weight for c in criteria if c.weight > 0) <= 0:
            raise ValueError("no criterion has a positive weight, so the normalizer is zero")
        return criteria

    @field_validator("judges")
    @classmethod
    def _check_judges(cls, judges: list[JudgeRef], info: ValidationInfo) -> list[JudgeRef]:
        known = (info.context or {}).get("judge_names")
        unable = (info.context or {}).get("judge_unable", {})
        seen: set[str] = set()
        for i, j in enumerate(judges):
            if j.name in seen:
                raise ValueError(f"[{i}]: judge {j.name!r} is listed twice")
            if known is not None and j.name not in known:
                raise ValueError(
                    f"[{i}]: unknown judge {j.name!r}; the judge pool defines {sorted(known)}"
                )
            if j.name in unable:
                raise ValueError(f"[{i}]: {unable[j.name]}")
            seen.add(j.name)
        return judges

    _pool_weights: dict[str, float] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _bind_pool_weights(self, info: ValidationInfo) -> Rubric:
        # How far the pool trusts each judge belongs to the pool (JudgeConfig.weight), not
        # to the rubric's content: it stays out of the version, like the pool's URLs.
        self._pool_weights = dict((info.context or {}).get("judge_weights", {}))
        return self

    @property
    def pool_weights(self) -> dict[str, float]:
        """The pool's weight of each judge, as bound when this rubric was validated."""
        return dict(self._pool_weights)

    @property
    def judge_weights(self) -> dict[str, float]:
        """Each listed judge's weight when judge scores combine: the rubric's ``weight``
        times the pool's (``JudgeConfig.weight``, 1 when validated without a pool)."""
        return {j.name: j.weight * self._pool_weights.get(j.name, 1.0) for j in self.judges}

    @model_validator(mode="after")
    def _check_counts(self) -> Rubric:
        if self.min_judges > len(self.judges):
            raise ValueError(
                f"min_judges: {self.min_judges} is more than the {len(self.judges)} judges listed"
            )
        if self.implicit_combine and self.is_constitution:
            raise ValueError("combine: a constitution is scored per principle, not implicit")
        graded = [c for c in self.criteria if c.grader is not None]
        if graded and self.implicit_combine:
            raise ValueError("combine: criteria with a grader need explicit or worst")
        for c in graded:
            if c.per_step:
                raise ValueError(f"criteria: {c.id!r} has a grader, which scores the episode")
            needs = c.grader is not None and c.grader.needs_reference
            if needs and not self.requires_reference:
                raise ValueError(
                    f"requires_reference: criterion {c.id!r} is graded against the "
                    "reference; set requires_reference: true"
                )
        step = self.step_criteria
        if step and self.implicit_combine:
            raise ValueError("combine: criteria with scope: step need explicit or worst")
        if step and not any(c.weight > 0 for c in step):
            raise ValueError("criteria: the criteria with scope: step need a positive weight")
        check_rubric_objectives(self)
        return self

    @property
    def is_constitution(self) -> bool:
        """A constitution: its criteria are principles, scored per principle."""
        return self.kind == "constitution"

    @property
    def implicit_combine(self) -> bool:
        """The judges give one holistic score for the whole rubric (one call per judge),
        not one verdict per criterion."""
        return self.combine == "implicit"

    @property
    def worst_combine(self) -> bool:
        """The reward is the lowest criterion's (a pitfall's as its absence), no mean."""
        return self.combine == "worst"

    def from_item(self, criterion: Criterion) -> bool:
        """Whether ``criterion`` came with an item (a dataset row), not from the rubric's
        author: untrusted text, which judge prompts fence and defuse. A rubric file's or an
        inline rubric's criteria never did (see ``core.item_rubric.ItemRubric``)."""
        return False

    @property
    def step_criteria(self) -> list[Criterion]:
        """The criteria scored for each assistant step, in rubric order."""
        return [c for c in self.criteria if c.per_step]

    @property
    def has_episode_criteria(self) -> bool:
        """Whether any criterion is scored once per episode (not per step)."""
        return any(not c.per_step for c in self.criteria)

    def version(self) -> str:
        """Hash of the normalized content: comments and key order do not change it."""
        return self._content_version

    # Hashed once per rubric object: every request asks, and a rubric never changes (the
    # model is frozen; an edited file is loaded as a new object). Not a field: it takes
    # no part in equality or dumps.
    @functools.cached_property
    def _content_version(self) -> str:
        # The monitor's thresholds and the objectives do not change a reward or a verdict:
        # editing them must not reset the verdict cache, calibration windows or baseline.
        content = self.model_dump(mode="json", exclude={"monitor", "objectives"})
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, as pydantic's; with ``update`` its content, so its version, is new."""
        copied = super().model_copy(update=update, deep=deep)
        if update:
            copied.__dict__.pop("_content_version", None)
        return copied
