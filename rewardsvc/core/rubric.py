"""Rubric and constitution models: the schema of a rubric YAML file.

These models are pure data with validation; they do no I/O. Loading a file
(with file:line errors) lives in ``rewardsvc.library.yamlfile``; the library on disk
in ``rewardsvc.library.registry``. The JSON Schema that editors use is generated
from ``Rubric``. Validators that need to know the deployment read it from the
pydantic validation context: ``judge_names`` (the judge pool's names), ``judge_unable``
(why a pool judge cannot score: its method needs what its endpoint cannot do),
``judge_vision`` (the pool judges that see images: a rubric with ``media: [image]`` needs
one) and ``flag_names`` (the detectors' flags); a check whose key is absent is skipped.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, Self

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rewardsvc.core.base import StrictModel, check_unique_ids
from rewardsvc.core.cascade import Cascade, check_in_rubric
from rewardsvc.core.criterion import Category as Category
from rewardsvc.core.criterion import Criterion as Criterion
from rewardsvc.core.criterion import Identifier as Identifier
from rewardsvc.core.criterion import View as View
from rewardsvc.core.judge_tools import ToolName
from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.core.objectives import ObjectiveName, RubricObjective, check_rubric_objectives
from rewardsvc.core.transforms import Transforms

Combine = Literal["explicit", "implicit", "worst"]
JudgeRule = Literal["mean", "min", "uwo", "median", "softmin"]
StepCombine = Literal["min", "mean", "last", "discounted"]
Calibration = Literal["none", "zscore", "rank"]
Media = Literal["image"]


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
    media: list[Media] = Field(
        default_factory=list,
        exclude_if=lambda media: not media,  # unset, the rubric's version is unchanged
        description="Media its items carry besides text: [image] says they carry images, "
        "so at least one of its judges must see them (capabilities.vision in the judge "
        "pool), else the rubric is refused. Its text-only judges still score, reading a "
        "placeholder where each image stood, flagged without_images.",
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
    tools: list[ToolName] | None = Field(
        default=None,
        min_length=1,
        exclude_if=lambda tools: tools is None,  # unset, the rubric's version is unchanged
        description="Judge tools allowed for every criterion the judges score that does not "
        "set its own tools (see the criterion's tools).",
    )
    cascade: Cascade | None = Field(
        default=None,
        exclude_if=lambda cascade: cascade is None,  # unset, the rubric's version is unchanged
        description="Judges in stages, cheapest first: a criterion goes on to the next "
        "stage only when the previous one is unsure (see docs/how-to/cascades.md).",
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

    @field_validator("media")
    @classmethod
    def _check_media(cls, media: list[Media], info: ValidationInfo) -> list[Media]:
        if len(set(media)) != len(media):
            raise ValueError("a medium is listed twice")
        seeing = (info.context or {}).get("judge_vision")
        judges = info.data.get("judges")
        if seeing is None or judges is None or "image" not in media:
            return media
        if not any(j.name in seeing for j in judges):
            names = ", ".join(repr(j.name) for j in judges)
            raise ValueError(
                f"the rubric's items carry images, but none of its judges ({names}) sees "
                "images: list a judge whose pool entry says capabilities: {vision: true}"
            )
        return media

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

    # Once per rubric object, as its version: every scored item reads them, and a rubric's
    # judges and pool weights never change once it is validated.
    @functools.cached_property
    def judge_weights(self) -> Mapping[str, float]:
        """Each listed judge's weight when judge scores combine: the rubric's ``weight``
        times the pool's (``JudgeConfig.weight``, 1 when validated without a pool); a
        cascade's one row weighs 1."""
        weights = {j.name: j.weight * self._pool_weights.get(j.name, 1.0) for j in self.judges}
        if self.cascade is not None:
            weights[self.cascade.name] = 1.0
        return MappingProxyType(weights)

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
        tooled = self.tools is not None or any(c.tools is not None for c in self.criteria)
        if tooled and self.implicit_combine:
            raise ValueError("tools: combine implicit asks one holistic question, without tools")
        step = self.step_criteria
        if step and self.implicit_combine:
            raise ValueError("combine: criteria with scope: step need explicit or worst")
        if step and not any(c.weight > 0 for c in step):
            raise ValueError("criteria: the criteria with scope: step need a positive weight")
        if self.cascade is not None:
            names = [j.name for j in self.judges]
            by_judges = any(o.judges for o in (self.objectives or {}).values())
            implicit = self.implicit_combine
            check_in_rubric(self.cascade, names, implicit, bool(step), tooled, by_judges)
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

    def tools_of(self, criterion: Criterion) -> tuple[str, ...]:
        """The judge tools allowed for ``criterion``: its own, else the rubric's (none for
        a criterion the judges do not score once per episode)."""
        if not criterion.asks_judges:
            return ()
        tools = criterion.tools if criterion.tools is not None else self.tools
        return tuple(tools or ())

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
            copied.__dict__.pop("judge_weights", None)
        return copied
