"""An item's own rubric: the batch rubric as a template, with the item's criteria.

In rubric RL the rubric is a column of the dataset (RaR, HealthBench): each prompt brings
its criteria (read from the dataset's format by ``core.criteria_formats``), and the batch
rubric supplies the rest (instructions, judges, combine, aggregation, transforms, monitor
settings). :func:`derive` builds that rubric, which is validated as a whole like any
rubric file, so the same rules hold (weights by category, gates, unique ids, a positive
normalizer). Its version hashes the template and the criteria together: verdicts cached
for one prompt's criteria never answer another's.

The item's criteria are untrusted text, as its prompt and reference are: the rubric made
is an :class:`ItemRubric`, which names them (``given``), so every judge prompt shows them
fenced and defused (``Rubric.from_item``) while the template's own stay as written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, ValidationError

from rewardsvc.core.criteria_formats import CriteriaFormatError
from rewardsvc.core.errors import FieldProblem, field_problems
from rewardsvc.core.rubric import Criterion, Rubric

CriteriaMode = Literal["replace", "extend"]
"""What an item's criteria do to the batch rubric's: take their place, or follow them."""


class ItemRubric(Rubric):
    """A rubric made with an item's own criteria; ``given`` are their ids (the template's
    criteria are not among them). Part of its content, so of its version: verdicts of the
    same criteria written by the rubric's author, asked unfenced, are never served for it."""

    given: tuple[str, ...] = Field(
        default=(), description="The ids of the criteria that came with the item."
    )

    def from_item(self, criterion: Criterion) -> bool:
        """Whether ``criterion`` came with the item (untrusted, fenced in prompts)."""
        return criterion.id in self.given


def derive(
    template: Rubric, criteria: Sequence[Mapping[str, Any]], mode: CriteriaMode
) -> ItemRubric:
    """The rubric an item is scored with: ``template`` with ``criteria`` (criterion dicts,
    as :func:`~rewardsvc.core.criteria_formats.read_criteria` reads them) in place of its
    own (``replace``) or after them (``extend``). Raises
    :class:`~rewardsvc.core.criteria_formats.CriteriaFormatError` naming each problem's
    place in ``criteria``."""
    if not criteria:
        raise CriteriaFormatError([FieldProblem((), "at least one criterion is needed")])
    kept = [c.model_dump(exclude_unset=True) for c in template.criteria] if mode == "extend" else []
    doc = {**template.model_dump(exclude_unset=True), "criteria": [*kept, *criteria]}
    if template.objectives and mode == "replace":
        # A criterion group names the template's criteria, which these replace.
        doc["objectives"] = {
            name: o.model_dump(exclude_unset=True)
            for name, o in template.objectives.items()
            if o.criteria is None
        } or None
    try:
        # The pool's judge weights were bound to the template when it was validated.
        made = ItemRubric.model_validate(doc, context={"judge_weights": template.pool_weights})
    except ValidationError as exc:
        problems = field_problems(exc.errors(), doc)
        raise CriteriaFormatError([_relative(p, len(kept)) for p in problems]) from None
    return made.model_copy(update={"given": tuple(c.id for c in made.criteria[len(kept) :])})


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
