"""What scores a request: a :class:`Target`, one class per kind, each scoring its own way.

``rubric`` in a request is a library id (of a rubric, a recipe or a routing table), an
inline rubric, or an inline recipe (``kind: recipe``). :func:`resolve_target` turns it
into a target (or raises :class:`RequestError` naming the field). :func:`plan_request`
plans raw items with it (a :class:`RequestPlan`, whose cost admission weighs) and
:meth:`RequestPlan.run` runs that plan into the wire response; :func:`score_target` does
both, for callers that admit nothing in between:

- a :class:`RubricTarget` plans with the engine;
- a :class:`RecipeTarget` plans each judged component with the engine, run by the recipe
  runner (graders first, gates, then judged components);
- a :class:`RoutingTarget` splits the batch by each item's ``metadata.data_source``
  (see :mod:`.routed`), planning each part with the target of its route.
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from rewardsvc.core.errors import ErrorKind, FieldProblem, RequestError
from rewardsvc.core.recipe import Recipe, RoutingTable
from rewardsvc.core.rollout import ItemIn, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.recipes import RecipeEntry
from rewardsvc.library.registry import Registry
from rewardsvc.library.yamlfile import InvalidFile, validate_document
from rewardsvc.protocol.rewards import RewardOptions, RewardResponse, RubricRef
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.planning import Cost
from rewardsvc.scoring.recipe_plan import ComponentPlans
from rewardsvc.scoring.recipes import resolve_components

from .item_rubrics import ItemRubrics
from .items import read_item, score_options
from .plans import RecipePlan, RubricPlan, TargetPlan
from .wire import usage_out

INLINE_LABEL = "_inline"
"""The metrics label of inline rubrics and recipes, whose ids are the client's to choose."""


@dataclass(frozen=True, kw_only=True)
class Scoring:
    """One batch to plan, as every target needs it; ``places`` holds each item's position
    in the request, for a part of it (None: the batch is the request's items)."""

    engine: Engine
    raw: Sequence[Any]
    inputs: list[ItemIn]
    opts: ScoreOptions
    explain: bool = False
    places: tuple[int, ...] | None = None

    @property
    def positions(self) -> Sequence[int]:
        """Each item's position in the request."""
        return self.places if self.places is not None else range(len(self.inputs))


@dataclass(frozen=True)
class Target(ABC):
    """What scores a request; ``kind`` is its wire name (``RubricRef.kind``)."""

    kind: ClassVar[Literal["rubric", "recipe", "routing"]]
    id: str
    version: str

    @property
    def metrics_label(self) -> str | None:
        """The label of its batches in metrics (``INLINE_LABEL`` for an inline one)."""
        return None

    @property
    def ref(self) -> RubricRef:
        """The wire reference to this target."""
        return RubricRef(id=self.id, version=self.version, kind=self.kind)

    @property
    def template(self) -> Rubric | None:
        """The rubric items with their own criteria extend or replace (None: this target
        takes no item criteria)."""
        return None

    @abstractmethod
    def judged_rubrics(self) -> list[Rubric]:
        """The rubrics an item may be judged with (for the work limits)."""

    @abstractmethod
    async def plan(self, batch: Scoring) -> TargetPlan:
        """The plan of ``batch`` with this target (nothing judged yet), and its cost."""


@dataclass(frozen=True)
class RubricTarget(Target):
    """A rubric: scored by the engine."""

    kind: ClassVar[Literal["rubric"]] = "rubric"
    rubric: Rubric
    label: str | None = None

    @classmethod
    def of(cls, rubric: Rubric, metrics_label: str | None = None) -> RubricTarget:
        """A rubric as a target."""
        return cls(rubric.id, rubric.version(), rubric, metrics_label)

    @property
    def metrics_label(self) -> str | None:
        """The label given at resolution."""
        return self.label

    @property
    def template(self) -> Rubric:
        """The rubric: items' own criteria extend or replace its criteria."""
        return self.rubric

    def judged_rubrics(self) -> list[Rubric]:
        """The rubric itself."""
        return [self.rubric]

    async def plan(self, batch: Scoring) -> RubricPlan:
        """The engine's plan (items with their own rubric included)."""
        engine = batch.engine
        plan = await engine.plan(self.rubric, batch.inputs, batch.opts, self.metrics_label)
        return RubricPlan(engine, plan, batch.positions, batch.explain)


@dataclass(frozen=True)
class RecipeTarget(Target):
    """A recipe, with the rubric of each judged component: scored by the recipe runner."""

    kind: ClassVar[Literal["recipe"]] = "recipe"
    recipe: Recipe
    components: Mapping[str, Rubric] = field(default_factory=dict)
    label: str | None = None

    @classmethod
    def of(cls, entry: RecipeEntry) -> RecipeTarget:
        """A linked library recipe as a target."""
        return cls(entry.recipe.id, entry.version, entry.recipe, entry.rubrics)

    @property
    def metrics_label(self) -> str | None:
        """The label given at resolution."""
        return self.label

    def judged_rubrics(self) -> list[Rubric]:
        """The judged components' rubrics."""
        return list(self.components.values())

    async def plan(self, batch: Scoring) -> RecipePlan:
        """Each judged component's engine plan over the items the recipe reads."""
        engine = batch.engine
        if engine.graders is None:
            raise RuntimeError("recipes need an engine with graders (Engine(graders=...))")
        plans = await ComponentPlans.of(
            engine, self.recipe, self.components, batch.inputs, batch.opts, self.metrics_label
        )
        return RecipePlan(
            engine.graders, self.recipe, self.components, batch.inputs, plans, batch.positions
        )


@dataclass(frozen=True)
class RoutingTarget(Target):
    """A routing table, with the target of each route: the batch is split by source."""

    kind: ClassVar[Literal["routing"]] = "routing"
    table: RoutingTable
    routes: Mapping[str, Target] = field(default_factory=dict)

    def judged_rubrics(self) -> list[Rubric]:
        """Those of every route's target."""
        return [r for t in self.routes.values() for r in t.judged_rubrics()]

    async def plan(self, batch: Scoring) -> TargetPlan:
        """Each route's part planned with its target."""
        from .routed import plan_routed  # the splitting lives beside, it needs Scoring

        return await plan_routed(self.table, self.routes, batch)


def library_target(registry: Registry, target_id: str) -> Target | None:
    """The library rubric, recipe or routing table ``target_id``; None when none is served."""
    try:
        return RecipeTarget.of(registry.recipe(target_id))
    except KeyError:
        pass
    try:
        entry = registry.routing(target_id)
    except KeyError:
        pass
    else:
        table = entry.table
        ids = {*table.routes.values(), *([table.default] if table.default else [])}
        routes = {i: t for i in ids if (t := library_target(registry, i)) is not None}
        return RoutingTarget(table.id, entry.version, table, routes)
    try:
        return RubricTarget.of(registry.get(target_id).rubric)
    except KeyError:
        return None


def resolve_target(
    registry: Registry,
    value: str | Rubric | Recipe,
    library_rubric: Callable[[str], Rubric],
    inline_rubric: Callable[[Rubric], Rubric],
) -> Target:
    """The target a request's ``rubric`` names. ``library_rubric`` and ``inline_rubric``
    are the caller's (they raise for an unknown or invalid rubric); an invalid inline
    recipe raises :class:`RequestError` naming its field."""
    if isinstance(value, Rubric):
        return RubricTarget.of(inline_rubric(value), INLINE_LABEL)
    if isinstance(value, Recipe):
        return _inline_recipe(registry, value)
    found = library_target(registry, value)
    return found if found is not None else RubricTarget.of(library_rubric(value))


def _inline_recipe(registry: Registry, value: Recipe) -> RecipeTarget:
    """An inline recipe re-validated against the judge pool, its library ids resolved."""
    doc = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    try:
        recipe = validate_document(doc, Recipe, "<request>", registry.context)
        served = {e.rubric.id: e.rubric for e in registry.entries()}
        components = resolve_components(recipe, served.get)
    except InvalidFile as exc:
        raise under_rubric([(p.path, p.message) for p in exc.problems]) from exc
    except RequestError as exc:
        raise under_rubric([(p.path, p.message) for p in exc.problems], exc.kind) from exc
    versions = {
        ref: components[c.id].version()
        for c in recipe.components
        if isinstance(ref := c.reference, str)
    }
    return RecipeTarget(recipe.id, recipe.version(versions), recipe, components, label=INLINE_LABEL)


def under_rubric(
    problems: list[tuple[str, str]], kind: ErrorKind = ErrorKind.INVALID_REQUEST
) -> RequestError:
    """The request error of an inline rubric's or recipe's problems (``(path, message)``),
    their paths under ``rubric`` (each path is one key of the problem's location: it is
    already written out)."""
    found = [FieldProblem((f"rubric.{path}" if path else "rubric",), m) for path, m in problems]
    return RequestError.of(found or [FieldProblem(("rubric",), "invalid")], kind)


@dataclass(frozen=True)
class RequestPlan:
    """A request's batch planned with its target: admit its :attr:`cost`, then :meth:`run`."""

    target: Target
    plan: TargetPlan
    started: float  # ``time.perf_counter()`` when planning began, for the latency

    @property
    def cost(self) -> Cost:
        """The judge calls and prompt bytes the batch plans."""
        return self.plan.cost

    async def run(self, deadline: float | None = None) -> RewardResponse:
        """The plan run (once) into the wire response; judge work ends by ``deadline``."""
        results, usage = await self.plan.run(deadline)
        usage = dataclasses.replace(usage, latency_ms=(time.perf_counter() - self.started) * 1000)
        ref = self.target.ref
        return RewardResponse(rubric=ref, results=results, usage=usage_out(usage, len(results)))


async def plan_request(
    target: Target,
    engine: Engine,
    items: Sequence[Any],
    options: RewardOptions | None = None,
    run: str | None = None,
    *,
    inputs: Sequence[ItemIn] | None = None,
) -> RequestPlan:
    """Raw items planned with ``target`` (raises RequestError for a request-level problem,
    such as ``options.judges`` naming a judge a rubric lacks); ``run`` names the training
    run the batch belongs to; ``inputs`` are the items as read already (by the server),
    else they are read here. Nothing is judged: the plan runs once admitted."""
    started = time.perf_counter()
    if inputs is None:
        o = options or RewardOptions()
        rubrics = ItemRubrics(target.template, o.criteria_mode, o.criteria_format)
        inputs = [read_item(i, raw, rubrics) for i, raw in enumerate(items)]
    batch = Scoring(
        engine=engine,
        raw=items,
        inputs=list(inputs),
        opts=score_options(options or RewardOptions(), run),
        explain=options is not None and options.explain,
    )
    return RequestPlan(target, await target.plan(batch), started)


async def score_target(
    target: Target,
    engine: Engine,
    items: Sequence[Any],
    options: RewardOptions | None = None,
    deadline: float | None = None,
    run: str | None = None,
    *,
    inputs: Sequence[ItemIn] | None = None,
) -> RewardResponse:
    """Raw items planned with ``target`` and run at once (:func:`plan_request`, then
    :meth:`RequestPlan.run`), as the wire response, for callers that admit nothing."""
    planned = await plan_request(target, engine, items, options, run, inputs=inputs)
    return await planned.run(deadline)


async def score_batch(
    engine: Engine,
    rubric: Rubric,
    items: Sequence[Any],
    options: RewardOptions | None = None,
    metrics_label: str | None = None,
    deadline: float | None = None,
    run: str | None = None,
) -> RewardResponse:
    """Raw items scored with one rubric, as the wire response (raises RequestError)."""
    target = RubricTarget.of(rubric, metrics_label)
    return await score_target(target, engine, items, options, deadline, run)
