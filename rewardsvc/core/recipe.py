"""Recipes: one reward composed of graders, rubrics and constitutions, with gates and vetoes.

A recipe (``kind: recipe``) is pure data, like a rubric: its components (each a
deterministic grader, a rubric or a constitution, by id or inline, with a weight), its
gates (a component that must reach a threshold before anything else is computed;
failing sets the reward to a floor), its vetoes (a component below a threshold caps the
reward) and the rule that combines the component scores. A routing table maps the
``data_source`` of an item to the rubric or recipe that scores it, so that one endpoint
serves a mixed dataset.

Running a recipe lives in ``rewardsvc.scoring.recipes``; the domain results it returns
are the dataclasses at the end of this module.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rewardsvc.core.base import StrictModel, check_unique_ids
from rewardsvc.core.errors import ErrorKind, FieldProblem, JudgeErrorKind, RequestError
from rewardsvc.core.graders_spec import GraderSpec
from rewardsvc.core.objectives import (
    ObjectiveName,
    RecipeObjective,
    Values,
    check_recipe_objectives,
)
from rewardsvc.core.results import JudgeOutcome, Status, Usage
from rewardsvc.core.rubric import Identifier, Rubric
from rewardsvc.core.transforms import FlagPenalties, known_flags

RecipeCombine = Literal["weighted_mean", "min", "geometric"]
Weighted = Sequence[tuple[float, float]]
"""The ``(weight, score)`` of each component with a positive weight."""


def _weighted_mean(weighted: Weighted) -> float:
    return sum(w * s for w, s in weighted) / sum(w for w, _ in weighted)


def _geometric(weighted: Weighted) -> float:
    if any(s <= 0 for _, s in weighted):
        return 0.0
    total = sum(w for w, _ in weighted)
    return math.exp(sum(w * math.log(s) for w, s in weighted) / total)


@dataclass(frozen=True)
class Combination:
    """How a recipe combines its weighted components' scores (all present)."""

    apply: Callable[[Weighted], float]
    propagates_uncertainty: bool = False
    """Whether the judged components' uncertainties carry into the reward's, with their
    weights (a weighted mean's do)."""


COMBINATIONS: dict[RecipeCombine, Combination] = {
    "weighted_mean": Combination(_weighted_mean, propagates_uncertainty=True),
    "min": Combination(lambda weighted: min(s for _, s in weighted)),
    "geometric": Combination(_geometric),
}
"""The strategy of each ``combine`` a recipe may name."""
ComponentKind = Literal["grader", "rubric", "constitution"]


def _ref_tag(value: Any) -> str:
    """A string names a library rubric; anything else is read as an inline rubric."""
    return "Identifier" if isinstance(value, str) else "Rubric"


RubricRef = Annotated[
    Annotated[Identifier, Tag("Identifier")] | Annotated[Rubric, Tag("Rubric")],
    Discriminator(_ref_tag),
]
"""A rubric by library id, or inline."""


class Component(StrictModel):
    """One part of the reward: exactly one of ``grader``, ``rubric``, ``constitution``."""

    id: Identifier = Field(description="Unique within the recipe; names it in the breakdown.")
    weight: float = Field(
        default=1.0,
        ge=0,
        description="Weight in the combination; 0 for a component that only gates or vetoes.",
    )
    grader: GraderSpec | None = Field(
        default=None, description="A deterministic grader (no judge call)."
    )
    rubric: RubricRef | None = Field(
        default=None, description="A rubric from the library by id, or inline."
    )
    constitution: RubricRef | None = Field(
        default=None,
        description="A constitution (kind: constitution) from the library by id, or inline.",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> Component:
        given = [k for k in ("grader", "rubric", "constitution") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of grader, rubric, constitution"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if isinstance(self.constitution, Rubric) and not self.constitution.is_constitution:
            raise ValueError("constitution: an inline constitution needs kind: constitution")
        if isinstance(self.rubric, Rubric) and self.rubric.is_constitution:
            raise ValueError("rubric: an inline constitution goes under constitution:")
        return self

    @property
    def kind(self) -> ComponentKind:
        """Which of grader, rubric or constitution this component is."""
        if self.grader is not None:
            return "grader"
        return "rubric" if self.rubric is not None else "constitution"

    @property
    def reference(self) -> str | Rubric | None:
        """The rubric or constitution (id or inline), None for a grader."""
        return self.rubric if self.rubric is not None else self.constitution


class Gate(StrictModel):
    """A component that must pass before anything else is computed for the item."""

    component: Identifier = Field(description="Id of a component of this recipe.")
    threshold: float = Field(
        default=1.0, ge=0, le=1, description="The gate passes when the score is at least this."
    )
    floor: float = Field(
        default=0.0, ge=0, le=1, description="The reward of an item that fails the gate."
    )


class Veto(StrictModel):
    """A component whose low score caps the reward (typically a safety constitution)."""

    component: Identifier = Field(description="Id of a component of this recipe.")
    threshold: float = Field(ge=0, le=1, description="A score below this applies the cap.")
    cap: float = Field(default=0.0, ge=0, le=1, description="The most the reward can then be.")


class Recipe(StrictModel):
    """A reward recipe: components with weights, gates, vetoes and a combination rule."""

    model_config = ConfigDict(json_schema_extra={"title": "rewardsvc recipe"})

    kind: Literal["recipe"] = Field(description="Marks the document as a recipe.")
    id: Identifier = Field(description="Recipe id used in requests, e.g. math-verified.")
    description: str = Field(default="", description="What the recipe is for.")
    components: list[Component] = Field(min_length=1)
    gates: list[Gate] = Field(
        default_factory=list,
        description="Checked in order, before the other components; the first that fails "
        "decides the item's reward (its floor) and no further judge call is made for it.",
    )
    vetoes: list[Veto] = Field(
        default_factory=list, description="Each veto that fires caps the combined reward."
    )
    flag_penalties: FlagPenalties = Field(
        default_factory=dict,
        description="Per flag its graders raise (the tamper detector's, e.g. "
        "tamper_exit_hook), the amount (>= 0) subtracted from that grader component's "
        "score, before gates and vetoes, overriding the flag's default (1.0 for every "
        "tamper flag); 0 opts a flag out. The flags of judged components are penalised by "
        "their rubrics' transforms.",
    )
    combine: RecipeCombine = Field(
        default="weighted_mean",
        description="weighted_mean: sum(w * s) / sum(w); min: the lowest weighted component; "
        "geometric: weighted geometric mean (any zero gives zero).",
    )
    objectives: dict[ObjectiveName, RecipeObjective] | None = Field(
        default=None,
        description="Named objectives returned beside the reward, each from some "
        "components, for trainers that take several rewards (GDPO); not part of the "
        "recipe's version.",
    )

    @field_validator("components")
    @classmethod
    def _check_components(cls, components: list[Component]) -> list[Component]:
        check_unique_ids(components, "component")
        if not any(c.weight > 0 for c in components):
            raise ValueError("no component has a positive weight")
        return components

    @field_validator("flag_penalties")
    @classmethod
    def _check_flags(cls, penalties: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        return known_flags(penalties, info, "grader_flag_names")

    @model_validator(mode="after")
    def _check_references(self) -> Recipe:
        ids = {c.id for c in self.components}
        named: tuple[tuple[str, Sequence[Gate | Veto]], ...] = (
            ("gates", self.gates),
            ("vetoes", self.vetoes),
        )
        for name, entries in named:
            for i, entry in enumerate(entries):
                if entry.component not in ids:
                    raise ValueError(
                        f"{name}[{i}].component: no component {entry.component!r} "
                        f"(components: {sorted(ids)})"
                    )
        check_recipe_objectives(self)
        return self

    @property
    def combination(self) -> Combination:
        """How this recipe combines its components' scores (its ``combine``)."""
        return COMBINATIONS[self.combine]

    def component(self, component_id: str) -> Component:
        """The component with this id (KeyError when there is none)."""
        for c in self.components:
            if c.id == component_id:
                return c
        raise KeyError(component_id)

    def rubric_ids(self) -> list[str]:
        """Ids of the library rubrics and constitutions the recipe refers to."""
        return [c.reference for c in self.components if isinstance(c.reference, str)]

    def version(self, rubric_versions: Mapping[str, str] | None = None) -> str:
        """Hash of the normalized recipe and of the versions of the rubrics it names, so
        that editing a referenced rubric also changes the recipe's version."""
        # Objectives change no reward and no verdict (see Rubric.version); no
        # flag_penalties leaves the versions of recipes written before them as they were.
        exclude = {"objectives"} | (set() if self.flag_penalties else {"flag_penalties"})
        content: dict[str, Any] = {
            "recipe": self.model_dump(mode="json", by_alias=True, exclude=exclude),
            "rubrics": dict(sorted((rubric_versions or {}).items())),
        }
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def resolve_components(recipe: Recipe, lookup: Callable[[str], Rubric | None]) -> dict[str, Rubric]:
    """The rubric of every judged component, library ids looked up with ``lookup``.

    Raises :class:`RequestError` naming the component when an id is unknown, or when a
    ``constitution:`` names a rubric (or a ``rubric:`` a constitution).
    """
    resolved: dict[str, Rubric] = {}
    for i, component in enumerate(recipe.components):
        ref = component.reference
        if ref is None:
            continue
        rubric = lookup(ref) if isinstance(ref, str) else ref
        loc = ("components", i, component.kind)
        if rubric is None:
            raise RequestError.at(
                loc, f"unknown {component.kind} {ref!r}", kind=ErrorKind.UNKNOWN_RUBRIC
            )
        if rubric.is_constitution != (component.constitution is not None):
            raise RequestError.at(loc, f"{rubric.id!r} is a {rubric.kind}, not a {component.kind}")
        resolved[component.id] = rubric
    return resolved


class RoutingTable(StrictModel):
    """Maps ``items[].metadata.data_source`` to the rubric or recipe that scores the item."""

    kind: Literal["routing"] = Field(description="Marks the document as a routing table.")
    id: Identifier = Field(description="Routing table id, used where a rubric id is.")
    description: str = ""
    routes: dict[str, Identifier] = Field(
        min_length=1, description="data_source -> rubric or recipe id."
    )
    default: Identifier | None = Field(
        default=None,
        description="Target of items whose data_source is missing or not listed; without "
        "one such items are rejected.",
    )

    @field_validator("routes")
    @classmethod
    def _check_sources(cls, routes: dict[str, str]) -> dict[str, str]:
        for source in routes:
            if not source or len(source) > 256:
                raise ValueError(f"data_source {source[:40]!r}: must be 1 to 256 characters")
        return routes

    def target(self, data_source: str | None) -> str | None:
        """The rubric or recipe id for ``data_source``; None when the item must be rejected."""
        if data_source is not None and data_source in self.routes:
            return self.routes[data_source]
        return self.default


# ------------------------------------------------------------------ results


@dataclass
class ComponentOutcome:
    """One component's score of one item, with its evidence or judge breakdown.

    ``score`` is None when the component was skipped (``skipped`` says why: a gate decided
    the item) or failed (``error``).
    """

    kind: ComponentKind
    weight: float
    score: float | None
    status: Status = "ok"
    evidence: dict[str, Any] | None = None
    judges: dict[str, JudgeOutcome] = field(default_factory=dict)
    uncertainty: float | None = None
    version: str | None = None
    skipped: str | None = None
    error: str | None = None
    error_kind: JudgeErrorKind | None = None
    """Why a grader component gave no score (``grader_timeout``, ...)."""
    flags: tuple[str, ...] = ()
    """The flags a grader component raised (its ``score`` is after their penalties)."""


@dataclass
class RecipeItemReward:
    """The reward of one item under a recipe, and every component's part in it."""

    id: str
    reward: float | None
    status: Status
    components: dict[str, ComponentOutcome] = field(default_factory=dict)
    decided_by: str | None = None
    vetoed_by: list[str] = field(default_factory=list)
    uncertainty: float | None = None
    flags: list[str] = field(default_factory=list)
    error: str | None = None
    objectives: Values | None = None
    """The recipe's objectives (``rewardsvc.core.objectives``); None when it declares none."""
    problems: tuple[FieldProblem, ...] = ()
    """A rejected item's problems, each placed relative to the item (``("reference",)``)."""


@dataclass
class RecipeResult:
    """Rewards for every item of a batch under one recipe, in input order."""

    recipe_id: str
    version: str
    items: list[RecipeItemReward]
    usage: Usage
