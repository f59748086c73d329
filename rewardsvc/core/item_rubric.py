"""An item's own rubric: the batch rubric as a template, with the item's criteria.

In rubric RL the rubric is a column of the dataset (RaR, HealthBench): each prompt brings
its criteria, and the batch rubric supplies the rest (instructions, judges, combine,
aggregation, transforms, monitor settings). :func:`derive` builds that rubric, which is
validated as a whole like any rubric file, so the same rules hold (weights by category,
gates, unique ids, a positive normalizer). Its version hashes the template and the
criteria together: verdicts cached for one prompt's criteria never answer another's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import ValidationError

from rewardsvc.core.errors import FieldProblem, field_problems
from rewardsvc.core.rubric import Rubric

CriteriaMode = Literal["replace", "extend"]
"""What an item's criteria do to the batch rubric's: take their place, or follow them."""

DEFAULT_ID = "c{n}"
"""The id of an item criterion written without one (``c1``, ``c2``, ... in order)."""


class InvalidCriteria(ValueError):
    """An item's criteria that cannot make a rubric; ``problems`` are located relative to
    the item's criteria list (``[2].weight``; the empty path for the list as a whole)."""

    def __init__(self, problems: Sequence[FieldProblem]):
        self.problems = list(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


def _with_ids(criteria: Sequence[Any]) -> list[Any]:
    """Criteria with the default id filled in where an object has none."""
    return [
        {"id": DEFAULT_ID.format(n=n), **c} if isinstance(c, Mapping) and "id" not in c else c
        for n, c in enumerate(criteria, start=1)
    ]


def derive(template: Rubric, criteria: Sequence[Any], mode: CriteriaMode) -> Rubric:
    """The rubric an item is scored with: ``template`` with ``criteria`` (criterion objects
    as a rubric file writes them) in place of its own (``replace``) or after them
    (``extend``). Raises :class:`InvalidCriteria` naming each problem's place."""
    if not criteria:
        raise InvalidCriteria([FieldProblem((), "at least one criterion is needed")])
    own = _with_ids(criteria)
    kept = [c.model_dump(exclude_unset=True) for c in template.criteria] if mode == "extend" else []
    doc = {**template.model_dump(exclude_unset=True), "criteria": [*kept, *own]}
    try:
        return Rubric.model_validate(doc)
    except ValidationError as exc:
        problems = field_problems(exc.errors(), doc)
    raise InvalidCriteria([_relative(p, len(kept)) for p in problems])


def _relative(problem: FieldProblem, offset: int) -> FieldProblem:
    """A problem of the derived rubric, located in the item's criteria: ``criteria[k]``
    becomes ``[k - offset]``; a clash with a template criterion is said as one."""
    loc = problem.loc
    if len(loc) >= 2 and loc[0] == "criteria" and isinstance(loc[1], int):
        at = loc[1] - offset
        if at >= 0:
            return FieldProblem((at, *loc[2:]), problem.message)
        return FieldProblem((), f"the batch rubric's criterion {loc[1]}: {problem.message}")
    if loc[:1] == ("criteria",):
        return FieldProblem(loc[1:], problem.message)
    # A rule of the whole rubric (a grader needing a reference, a step criterion under
    # combine: implicit) broken by these criteria.
    return FieldProblem((), f"{problem.path}: {problem.message}" if loc else problem.message)
