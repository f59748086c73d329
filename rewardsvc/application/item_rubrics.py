"""Items with their own criteria: each distinct criteria list becomes a rubric once.

A GRPO batch holds G completions of each prompt, and the completions of one prompt carry
the same criteria: they make one rubric, built and validated once per request, which the
engine scores as one part of the batch (``scoring.parts``). The response's ``rubric``
stays the batch rubric; each item's ``version`` says which rubric scored it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rewardsvc.core.criteria_formats import CriteriaFormatError, CriteriaFormatName, read_criteria
from rewardsvc.core.errors import FieldProblem, Loc
from rewardsvc.core.item_rubric import CriteriaMode, derive
from rewardsvc.core.rubric import Rubric


@dataclass
class ItemRubrics:
    """How one request's items turn their criteria into rubrics: ``template`` is the
    batch rubric (None when the request is scored by a recipe or routing table, which
    take no item criteria), ``format`` the dataset format the criteria are written in,
    ``max_criteria`` the service's limit per rubric."""

    template: Rubric | None
    mode: CriteriaMode = "replace"
    format: CriteriaFormatName = "rewardsvc"
    max_criteria: int | None = None
    _made: dict[str, Rubric | CriteriaFormatError] = field(default_factory=dict)

    def rubric_for(self, criteria: Any, loc: Loc) -> Rubric | str:
        """The rubric of an item whose criteria (at ``loc``) are ``criteria``, or why the
        item is rejected."""
        if self.template is None:
            return str(
                FieldProblem(
                    loc,
                    "item criteria need a rubric to extend or replace; "
                    "a recipe or routing table takes none",
                )
            )
        key = json.dumps(criteria, sort_keys=True, default=str)
        made = self._made.get(key)
        if made is None:
            made = self._make(criteria)
            self._made[key] = made
        if isinstance(made, CriteriaFormatError):
            return "; ".join(str(FieldProblem((*loc, *p.loc), p.message)) for p in made.problems)
        return made

    def _make(self, criteria: Any) -> Rubric | CriteriaFormatError:
        assert self.template is not None
        try:
            rubric = derive(self.template, read_criteria(self.format, criteria), self.mode)
        except CriteriaFormatError as exc:
            return exc
        if self.max_criteria is not None and len(rubric.criteria) > self.max_criteria:
            return CriteriaFormatError(
                [
                    FieldProblem(
                        (),
                        f"the item's rubric has {len(rubric.criteria)} criteria, more than "
                        f"max_criteria={self.max_criteria}",
                    )
                ]
            )
        return rubric
