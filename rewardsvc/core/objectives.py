"""Named objectives: several rewards of one item, each from parts of its breakdown.

A rubric or recipe may declare ``objectives``: named parts of its reward that a trainer
takes as separate reward dimensions (TRL: one reward function each; veRL's GDPO manager:
one key each), so that a group-relative trainer can normalize each dimension within the
group before it combines them (GDPO) instead of normalizing one scalar in which a dense
judged part drowns a sparse verified one.

- In a rubric an objective is a criterion group (``criteria``), a set of judges
  (``judges``), or a criterion group as scored by some judges (both).
- In a recipe an objective is a set of components (``components``).

Values are computed from what scoring already produced (verdicts, judge scores, component
scores: no judge call of their own), each in [0, 1], and None when its parts could not be
scored: a failed criterion, a judge that gave no score, a component skipped by a gate.
Never 0 as a stand-in. This module is pure (no I/O); the models are validated where the
rubric or recipe is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from rewardsvc.core.base import StrictModel

if TYPE_CHECKING:
    from rewardsvc.core.recipe import ComponentOutcome, Recipe, RecipeItemReward
    from rewardsvc.core.results import CriterionOutcome, ItemReward, JudgeOutcome
    from rewardsvc.core.rubric import Rubric

ObjectiveName = Annotated[
    str,
    Field(
        pattern=r"^[a-z][a-z0-9_]{0,39}$",
        description="Objective name: a-z 0-9 _, starting with a letter (it names a reward "
        "function and a metric in the trainer's logs).",
    ),
]
Values = dict[str, float | None]
"""Objective name -> value in [0, 1], None when its parts could not be scored."""


class RubricObjective(StrictModel):
    """One objective of a rubric: a criterion group, some judges, or both."""

    criteria: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Criterion ids of the group: the objective is their combination (the rubric's "
        "combine: explicit weighted sum over the group's positive weights, or worst), "
        "gates not applied. Omitted: the judges' whole scores.",
    )
    judges: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Judge names of the rubric whose scores make the objective (their "
        "weighted mean). Omitted: every judge of the request.",
    )


class RecipeObjective(StrictModel):
    """One objective of a recipe: the weighted mean of some of its components."""

    components: list[str] = Field(
        min_length=1,
        description="Component ids; the objective is the mean of their scores weighted by "
        "the components' weights (equal weights when all are 0).",
    )


# ------------------------------------------------------------------ validation


def _duplicate(names: Sequence[str]) -> str | None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def check_rubric_objectives(rubric: Rubric) -> None:
    """Refuse objectives that name unknown or unscorable parts (``ValueError`` whose
    message starts with the key path, ``objectives.<name>.criteria[i]: ...``)."""
    criteria = {c.id: c for c in rubric.criteria}
    judges = {j.name for j in rubric.judges}
    for name, objective in (rubric.objectives or {}).items():
        at = f"objectives.{name}"
        if objective.criteria is None and objective.judges is None:
            raise ValueError(f"{at}: give criteria, judges, or both")
        for i, cid in enumerate(objective.criteria or []):
            if cid not in criteria:
                raise ValueError(f"{at}.criteria[{i}]: no criterion {cid!r} ({sorted(criteria)})")
            if criteria[cid].per_step:
                raise ValueError(f"{at}.criteria[{i}]: {cid!r} is scored per step, not once")
        for i, judge in enumerate(objective.judges or []):
            if judge not in judges:
                raise ValueError(f"{at}.judges[{i}]: judge {judge!r} does not score this rubric")
        for key, names in (("criteria", objective.criteria), ("judges", objective.judges)):
            if names and (twice := _duplicate(names)) is not None:
                raise ValueError(f"{at}.{key}: {twice!r} is listed twice")
        if objective.criteria is not None:
            if rubric.implicit_combine:
                raise ValueError(f"{at}.criteria: combine: implicit gives no criterion scores")
            group = [criteria[c] for c in objective.criteria]
            if not rubric.worst_combine and not any(c.weight > 0 for c in group):
                raise ValueError(f"{at}.criteria: no criterion of the group has a positive weight")


def check_recipe_objectives(recipe: Recipe) -> None:
    """Refuse objectives that name unknown components (``ValueError`` with the key path)."""
    ids = {c.id for c in recipe.components}
    for name, objective in (recipe.objectives or {}).items():
        for i, cid in enumerate(objective.components):
            if cid not in ids:
                raise ValueError(
                    f"objectives.{name}.components[{i}]: no component {cid!r} ({sorted(ids)})"
                )
        if (twice := _duplicate(objective.components)) is not None:
            raise ValueError(f"objectives.{name}.components: {twice!r} is listed twice")


# ------------------------------------------------------------------ values


def group_score(
    rubric: Rubric, ids: Sequence[str], criteria: Mapping[str, CriterionOutcome]
) -> float | None:
    """One judge's score of the criterion group ``ids`` by the rubric's combine, None when
    any of them has no score. explicit: ``Σ wᵢ sᵢ / Σ_{wᵢ>0} wᵢ`` over the group, clipped;
    worst: the group's lowest compliance (a pitfall counts as ``1 - s``)."""
    by_id = {c.id: c for c in rubric.criteria}
    scores: dict[str, float] = {}
    for cid in ids:
        outcome = criteria.get(cid)
        if outcome is None or outcome.score is None:
            return None
        scores[cid] = outcome.score
    if rubric.worst_combine:
        return min(1.0 - s if by_id[cid].category == "pitfall" else s for cid, s in scores.items())
    norm = sum(by_id[cid].weight for cid in ids if by_id[cid].weight > 0)
    total = sum(by_id[cid].weight * s for cid, s in scores.items())
    return min(1.0, max(0.0, total / norm))


def _mean(weighted: Sequence[tuple[float, float]]) -> float:
    """``Σ wᵢ vᵢ / Σ wᵢ`` kept inside [min, max] (one value's mean is that value, exactly)."""
    values = [v for _, v in weighted]
    mean = sum(w * v for w, v in weighted) / sum(w for w, _ in weighted)
    return min(max(values), max(min(values), mean))


def _judge_value(rubric: Rubric, objective: RubricObjective, outcome: JudgeOutcome) -> float | None:
    if objective.criteria is None:
        return outcome.score
    return group_score(rubric, objective.criteria, outcome.criteria)


def rubric_objective(
    rubric: Rubric, objective: RubricObjective, judges: Mapping[str, JudgeOutcome]
) -> float | None:
    """The objective's value from the judges' outcomes of one item: the weighted mean
    (the rubric's judge weights) over its judges that scored it, None when none did."""
    weights = rubric.judge_weights
    names = objective.judges if objective.judges is not None else list(judges)
    scored: list[tuple[float, float]] = []
    for name in names:
        outcome = judges.get(name)
        value = _judge_value(rubric, objective, outcome) if outcome is not None else None
        if value is not None:
            scored.append((weights.get(name, 1.0), value))
    if not scored:
        return None
    return _mean(scored)


def rubric_objectives(
    rubric: Rubric, item: ItemReward, names: Iterable[str] | None = None
) -> ItemReward:
    """``item`` with the values of the rubric's objectives set (left None when it declares
    none). ``names`` (default the rubric's) are the objectives the item must carry: an item
    scored with its own criteria has only its template's objectives that it could keep;
    the others are None. A rejected item has no judge outcomes: every value is None."""
    declared = rubric.objectives or {}
    wanted = list(declared) if names is None else list(names)
    if wanted:
        item.objectives = {
            name: rubric_objective(rubric, declared[name], item.judges)
            if name in declared
            else None
            for name in wanted
        }
    return item


def with_objectives(rubric: Rubric, items: Sequence[ItemReward | None]) -> list[ItemReward]:
    """The batch's items, in order; those without objectives yet (rejected before judging)
    get the rubric's declared ones, all None."""
    return [
        rubric_objectives(rubric, item) if item.objectives is None else item
        for item in items
        if item is not None
    ]


def recipe_objective(
    recipe: Recipe, objective: RecipeObjective, components: Mapping[str, ComponentOutcome]
) -> float | None:
    """The weighted mean of the objective's component scores; None when any is missing."""
    parts: list[tuple[float, float]] = []
    for cid in objective.components:
        outcome = components.get(cid)
        if outcome is None or outcome.score is None:
            return None
        parts.append((recipe.component(cid).weight, outcome.score))
    if sum(w for w, _ in parts) <= 0:
        parts = [(1.0, s) for _, s in parts]
    return _mean(parts)


def recipe_objectives(recipe: Recipe, item: RecipeItemReward) -> RecipeItemReward:
    """``item`` with the values of the recipe's objectives set (None when it declares none)."""
    if recipe.objectives:
        item.objectives = {
            name: recipe_objective(recipe, objective, item.components)
            for name, objective in recipe.objectives.items()
        }
    return item
