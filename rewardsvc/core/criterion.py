"""A rubric's criterion: one checkable statement about a response, and the names its
fields are typed with. Pure data with validation, like the rest of the rubric
(:mod:`rewardsvc.core.rubric`, which holds the criteria)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic.config import JsonDict

from rewardsvc.core.base import StrictModel
from rewardsvc.core.graders_spec import GraderSpec
from rewardsvc.core.judge_tools import JUDGE_TOOLS, ToolName

Category = Literal["essential", "important", "optional", "pitfall"]
ScaleKind = Literal["binary", "likert"]
View = Literal["final", "trace", "tools"]
Scope = Literal["episode", "step"]

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
    tools: list[ToolName] | None = Field(
        default=None,
        min_length=1,
        max_length=len(JUDGE_TOOLS),
        # Unset, it is left out of dumps: a rubric without tools keeps its version.
        exclude_if=lambda tools: tools is None,
        description="Judge tools allowed for this criterion (run_tests, run_code, read_file, "
        "list_files, grader_evidence); default the rubric's tools. A judge whose pool entry "
        "declares tools answers it after a bounded tool loop with those it is allowed of "
        "these; a judge without tools answers it from the text, as any criterion.",
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
        if self.tools is not None and not self.asks_judges:
            raise ValueError("tools: only a criterion the judges score once per episode")
        if self.tools is not None and len(set(self.tools)) != len(self.tools):
            raise ValueError("tools: a tool is listed twice")
        return self

    def scale_values(self) -> list[int]:
        """The answer values the judge may give: [0, 1] for binary (no, yes)."""
        if self.scale == "binary":
            return [0, 1]
        low, high = self.likert_range
        return list(range(low, high + 1))
