"""What a request's ``rubric`` names, and scoring a batch with it.

``rubric`` in a request is a library id (of a rubric, a recipe or a routing table), an
inline rubric, or an inline recipe (``kind: recipe``). :func:`resolve_target` turns it
into a :class:`Target` (or a 404/422 naming the field); :func:`score_target` scores raw
items with it and returns the wire response:

- a rubric goes to the engine;
- a recipe goes to the recipe runner (graders first, gates, then judged components);
- a routing table splits the batch by each item's ``metadata.data_source``, scores the
  groups concurrently with their own rubric or recipe and puts the results back in
  request order; an item whose source is not routed is rejected on its own.

The domain results of the engine and the runner become wire models here.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rewardsvc.core.errors import RequestError
from rewardsvc.core.recipe import (
    ComponentOutcome,
    Recipe,
    RecipeItemReward,
    RecipeResult,
    RoutingTable,
)
from rewardsvc.core.results import BatchResult, ItemReward, JudgeOutcome
from rewardsvc.core.rollout import ItemIn, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.explain import explain
from rewardsvc.library.recipes import RecipeEntry
from rewardsvc.library.registry import Registry
from rewardsvc.library.yamlfile import InvalidFile, validate_document
from rewardsvc.protocol.rewards import (
    ComponentScore,
    CriterionScore,
    JudgeResult,
    RewardOptions,
    RewardResponse,
    RewardResult,
    RubricRef,
    StepScore,
    Usage,
)
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.recipes import RecipeRunner, engine_scorer, plan_routes, resolve_components
from rewardsvc.server.errors import STATUS_OF_KIND, ApiError
from rewardsvc.server.items import read_item, score_options

INLINE_LABEL = "_inline"
"""The metrics label of inline rubrics and recipes, whose ids are the client's to choose."""


@dataclass(frozen=True)
class Target:
    """What scores a request: a rubric, a recipe (with the rubric of each judged
    component) or a routing table (with the target of each route)."""

    kind: Literal["rubric", "recipe", "routing"]
    id: str
    version: str
    rubric: Rubric | None = None
    recipe: Recipe | None = None
    components: Mapping[str, Rubric] = field(default_factory=dict)
    table: RoutingTable | None = None
    routes: Mapping[str, Target] = field(default_factory=dict)
    metrics_label: str | None = None

    @classmethod
    def of_rubric(cls, rubric: Rubric, metrics_label: str | None = None) -> Target:
        """A rubric as a target."""
        return cls("rubric", rubric.id, rubric.version(), rubric, metrics_label=metrics_label)

    @classmethod
    def of_recipe(cls, entry: RecipeEntry) -> Target:
        """A linked library recipe as a target."""
        recipe, components = entry.recipe, entry.rubrics
        return cls("recipe", recipe.id, entry.version, recipe=recipe, components=components)

    @property
    def ref(self) -> RubricRef:
        """The wire reference to this target."""
        return RubricRef(id=self.id, version=self.version, kind=self.kind)

    def judged_rubrics(self) -> list[Rubric]:
        """The rubrics an item may be judged with (for the work limits): the rubric, a
        recipe's judged components, or those of every route's target."""
        if self.rubric is not None:
            return [self.rubric]
        if self.recipe is not None:
            return list(self.components.values())
        return [r for t in self.routes.values() for r in t.judged_rubrics()]

    def calls_per_item(self, per_rubric: Callable[[Rubric], int]) -> int:
        """The most judge calls (or prompt bytes) one item can cost, given ``per_rubric``
        for one rubric: a recipe's components add up; a routed item goes to one target."""
        if self.rubric is not None:
            return per_rubric(self.rubric)
        if self.recipe is not None:
            return sum(per_rubric(r) for r in self.components.values())
        return max((t.calls_per_item(per_rubric) for t in self.routes.values()), default=0)


def library_target(registry: Registry, target_id: str) -> Target | None:
    """The library rubric, recipe or routing table ``target_id``; None when none is served."""
    try:
        return Target.of_recipe(registry.recipe(target_id))
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
        return Target("routing", table.id, entry.version, table=table, routes=routes)
    try:
        return Target.of_rubric(registry.get(target_id).rubric)
    except KeyError:
        return None


def resolve_target(
    registry: Registry,
    value: str | Rubric | Recipe,
    library_rubric: Callable[[str], Rubric],
    inline_rubric: Callable[[Rubric], Rubric],
) -> Target:
    """The target a request's ``rubric`` names. ``library_rubric`` and ``inline_rubric``
    are the service's (they raise the 404 or 422 for an unknown or invalid rubric)."""
    if isinstance(value, Rubric):
        return Target.of_rubric(inline_rubric(value), INLINE_LABEL)
    if isinstance(value, Recipe):
        return _inline_recipe(registry, value)
    found = library_target(registry, value)
    return found if found is not None else Target.of_rubric(library_rubric(value))


def _inline_recipe(registry: Registry, value: Recipe) -> Target:
    """An inline recipe re-validated against the judge pool, its library ids resolved."""
    doc = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    try:
        recipe = validate_document(doc, Recipe, "<request>", registry.context)
        served = {e.rubric.id: e.rubric for e in registry.entries()}
        components = resolve_components(recipe, served.get)
    except InvalidFile as exc:
        problems = [(p.path, p.message) for p in exc.problems]
        raise _invalid(problems, 422, "invalid_request") from exc
    except RequestError as exc:
        status = STATUS_OF_KIND[exc.kind]
        raise _invalid([(p.path, p.message) for p in exc.problems], status, exc.kind) from exc
    versions = {
        ref: components[c.id].version()
        for c in recipe.components
        if isinstance(ref := c.reference, str)
    }
    return Target(
        "recipe",
        recipe.id,
        recipe.version(versions),
        recipe=recipe,
        components=components,
        metrics_label=INLINE_LABEL,
    )


def check_inline_size(doc: Any, limit: int, where: str = "rubric") -> None:
    """413 when an inline rubric or recipe (``doc``, its JSON form) is larger than ``limit``
    bytes (``max_rubric_bytes``, as for a library file), naming its largest text field:
    the bound on the whole bounds ``instructions`` and every other free-text field."""
    size = len(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode())
    if size <= limit:
        return
    path, longest = _largest_text(doc, where)
    raise ApiError(
        413,
        "payload_too_large",
        f"the inline {where} is {size} bytes as JSON, more than max_rubric_bytes={limit}; "
        f"its largest field {path} is {longest} bytes",
        field=path,
    )


def _largest_text(doc: Any, path: str) -> tuple[str, int]:
    """The path of the longest string in ``doc`` and its UTF-8 size."""
    if isinstance(doc, str):
        return path, len(doc.encode())
    if isinstance(doc, dict):
        parts = [_largest_text(v, f"{path}.{k}") for k, v in doc.items()]
    elif isinstance(doc, list):
        parts = [_largest_text(v, f"{path}[{n}]") for n, v in enumerate(doc)]
    else:
        return path, 0
    return max(parts, key=lambda p: p[1], default=(path, 0))


def _invalid(problems: list[tuple[str, str]], status: int, kind: str) -> ApiError:
    paths = [f"rubric.{path}" if path else "rubric" for path, _ in problems]
    message = "; ".join(f"{p}: {m}" for p, (_, m) in zip(paths, problems, strict=True))
    return ApiError(status, kind, message, field=paths[0] if paths else "rubric")


# ------------------------------------------------------------------ scoring


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
    """Raw items scored with ``target``, as the wire response (raises RequestError for a
    request-level problem, such as ``options.judges`` naming a judge a rubric lacks);
    ``run`` names the training run the batch belongs to; ``inputs`` are the items as
    read already (by admission), else they are read here."""
    started = time.perf_counter()
    if inputs is None:
        inputs = [read_item(i, raw) for i, raw in enumerate(items)]
    inputs = list(inputs)
    opts = score_options(options or RewardOptions(), run)
    if target.table is None:
        results, usage = await _score(target, engine, inputs, opts, deadline)
        if options is not None and options.explain and target.rubric is not None:
            results = await _explained(target.rubric, engine, inputs, results, opts)
    else:
        results, usage = await _score_routed(target, engine, items, inputs, opts, deadline)
    usage.latency_ms = (time.perf_counter() - started) * 1000
    return RewardResponse(rubric=target.ref, results=results, usage=usage)


async def _explained(
    rubric: Rubric,
    engine: Engine,
    inputs: list[ItemIn],
    results: list[RewardResult],
    opts: ScoreOptions,
) -> list[RewardResult]:
    """``results`` with what each judge read (rendered again by the same pure builders,
    no judge call; off the event loop, since long items take a while to render)."""
    names = opts.judges or tuple(j.name for j in rubric.judges)
    judges = {n: engine.judges[n] for n in names}
    configs = {n: j.config for n, j in judges.items() if hasattr(j, "config")}

    def render() -> list[RewardResult]:
        return [
            result
            if item.rollout is None
            else result.model_copy(update={"explain": explain(rubric, item.rollout, configs)})
            for item, result in zip(inputs, results, strict=True)
        ]

    return await asyncio.to_thread(render)


async def _score(
    target: Target,
    engine: Engine,
    inputs: list[ItemIn],
    opts: ScoreOptions,
    deadline: float | None,
) -> tuple[list[RewardResult], Usage]:
    if target.rubric is not None:
        batch = await engine.score(target.rubric, inputs, opts, target.metrics_label, deadline)
        return [reward_result(r) for r in batch.items], batch_usage(batch)
    assert target.recipe is not None
    if engine.graders is None:
        raise RuntimeError("recipes need an engine with graders (Engine(graders=...))")
    scorer = engine_scorer(engine, deadline, target.metrics_label)
    runner = RecipeRunner(scorer, engine.graders, deadline)
    result = await runner.run(target.recipe, target.components, inputs, opts)
    return [recipe_result(r) for r in result.items], recipe_usage(result)


async def _score_routed(
    target: Target,
    engine: Engine,
    raw: Sequence[Any],
    inputs: list[ItemIn],
    opts: ScoreOptions,
    deadline: float | None,
) -> tuple[list[RewardResult], Usage]:
    assert target.table is not None
    readable = [n for n, i in enumerate(inputs) if i.rollout is not None]
    plan = plan_routes(target.table, [data_source(raw[n]) for n in readable])
    results: list[RewardResult | None] = [None] * len(inputs)
    for n, i in enumerate(inputs):
        if i.rollout is None:
            results[n] = RewardResult(id=i.id, reward=None, status="rejected", error=i.error)
    for at, message in plan.rejected.items():
        n = readable[at]
        error = message.replace(f"items[{at}]", f"items[{n}]", 1)
        results[n] = RewardResult(id=inputs[n].id, reward=None, status="rejected", error=error)
    groups: dict[str, list[int]] = {}
    for tid, positions in plan.groups.items():
        ns = [readable[at] for at in positions]
        if tid in target.routes:
            groups[tid] = ns
            continue
        for n in ns:
            error = f"items[{n}].metadata.data_source: its target {tid!r} is not served"
            results[n] = RewardResult(id=inputs[n].id, reward=None, status="rejected", error=error)
    scored = await asyncio.gather(
        *(
            _score(target.routes[tid], engine, [inputs[n] for n in ns], opts, deadline)
            for tid, ns in groups.items()
        )
    )
    usage = Usage()
    for (tid, ns), (group, group_usage) in zip(groups.items(), scored, strict=True):
        usage = _add(usage, group_usage)
        ref = target.routes[tid].ref
        for n, result in zip(ns, group, strict=True):
            results[n] = result.model_copy(update={"scored_by": ref})
    return [r for r in results if r is not None], usage


def data_source(raw: Any) -> str | None:
    """An item's ``metadata.data_source`` when it is a string (else None: not routable)."""
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    source = metadata.get("data_source") if isinstance(metadata, dict) else None
    return source if isinstance(source, str) else None


def _add(a: Usage, b: Usage) -> Usage:
    counts = ("judge_calls", "judge_calls_skipped", "grader_calls", "cache_hits")
    tokens = ("prompt_tokens", "completion_tokens")
    return Usage(**{k: getattr(a, k) + getattr(b, k) for k in (*counts, *tokens)})


# ------------------------------------------------------------------ wire forms


def judge_result(outcome: JudgeOutcome) -> JudgeResult:
    """The wire form of one judge's score of one item."""
    return JudgeResult(
        score=outcome.score,
        raw_score=outcome.raw_score,
        variance=outcome.variance,
        criteria={
            cid: CriterionScore(
                score=c.score,
                variance=c.variance,
                p=c.probs,
                error=c.error,
                error_kind=c.error_kind,
                evidence=c.evidence,
            )
            for cid, c in outcome.criteria.items()
        },
        error=outcome.error,
    )


def reward_result(item: ItemReward) -> RewardResult:
    """The wire form of one item's reward under a rubric."""
    return RewardResult(
        id=item.id,
        reward=item.reward,
        status=item.status,
        uncertainty=item.uncertainty,
        judges={name: judge_result(j) for name, j in item.judges.items()},
        flags=item.flags,
        cached=item.cached,
        error=item.error,
        steps=None
        if item.steps is None
        else [
            StepScore(
                index=s.index, reward=s.reward, status=s.status, criteria=s.criteria, error=s.error
            )
            for s in item.steps
        ],
    )


def batch_usage(batch: BatchResult) -> Usage:
    """The wire form of a rubric batch's usage."""
    u = batch.usage
    return Usage(
        judge_calls=u.judge_calls,
        grader_calls=u.grader_calls,
        cache_hits=u.cache_hits,
        prompt_tokens=u.prompt_tokens,
        completion_tokens=u.completion_tokens,
        latency_ms=u.latency_ms,
    )


def reward_response(batch: BatchResult) -> RewardResponse:
    """The wire form of a batch scored with a rubric."""
    return RewardResponse(
        rubric=RubricRef(id=batch.rubric_id, version=batch.version),
        results=[reward_result(r) for r in batch.items],
        usage=batch_usage(batch),
    )


def _component(c: ComponentOutcome) -> ComponentScore:
    return ComponentScore(
        kind=c.kind,
        weight=c.weight,
        score=c.score,
        status=c.status,
        evidence=c.evidence,
        judges={name: judge_result(j) for name, j in c.judges.items()},
        uncertainty=c.uncertainty,
        version=c.version,
        skipped=c.skipped,
        error=c.error,
        error_kind=c.error_kind,
    )


def recipe_result(item: RecipeItemReward) -> RewardResult:
    """The wire form of one item's reward under a recipe."""
    return RewardResult(
        id=item.id,
        reward=item.reward,
        status=item.status,
        uncertainty=item.uncertainty,
        flags=item.flags,
        error=item.error,
        components={cid: _component(c) for cid, c in item.components.items()},
        decided_by=item.decided_by,
        vetoed_by=item.vetoed_by,
    )


def recipe_usage(result: RecipeResult) -> Usage:
    """The wire form of a recipe batch's usage."""
    u = result.usage
    return Usage(
        judge_calls=u.judge_calls,
        judge_calls_skipped=u.judge_calls_skipped,
        grader_calls=u.grader_calls,
        cache_hits=u.cache_hits,
        prompt_tokens=u.prompt_tokens,
        completion_tokens=u.completion_tokens,
        latency_ms=u.latency_ms,
    )


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
    inputs = [read_item(i, raw) for i, raw in enumerate(items)]
    opts = score_options(options or RewardOptions(), run)
    return reward_response(await engine.score(rubric, inputs, opts, metrics_label, deadline))
