"""Items with their own criteria: each distinct criteria list becomes a rubric once.

A GRPO batch holds G completions of each prompt, and the completions of one prompt carry
the same criteria: they make one rubric, built and validated once per request, which the
engine scores as one part of the batch (``scoring.parts``). The response's ``rubric``
stays the batch rubric; each item's ``version`` says which rubric scored it.

An item's criteria are untrusted text from a dataset row (or a request): bounded before
they are read (``max_bytes``, as JSON: an inline rubric's bound), made into an
:class:`~rewardsvc.core.item_rubric.ItemRubric` whose prompts fence and defuse them, and
scanned by the detectors (:meth:`ItemRubrics.flags_of`). They make a rubric the request
wrote, as an inline rubric is: ``permit`` is the caller's check of that right (the server's
API-key scope), asked of every rubric made.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rewardsvc.core.criteria_formats import CriteriaFormatError, CriteriaFormatName, read_criteria
from rewardsvc.core.errors import FieldProblem, Loc
from rewardsvc.core.item_rubric import CriteriaMode, derive
from rewardsvc.core.rubric import Rubric
from rewardsvc.safety.detectors import dataset_flags


@dataclass
class ItemRubrics:
    """How one request's items turn their criteria into rubrics: ``template`` is the
    batch rubric (None when the request is scored by a recipe or routing table, which
    take no item criteria), ``format`` the dataset format the criteria are written in,
    ``max_criteria`` the service's limit per rubric, ``max_bytes`` the largest criteria of
    one item as JSON (UTF-8), and ``permit`` raises when the request may not score with a
    rubric made (it is asked once per distinct criteria)."""

    template: Rubric | None
    mode: CriteriaMode = "replace"
    format: CriteriaFormatName = "rewardsvc"
    max_criteria: int | None = None
    max_bytes: int | None = None
    permit: Callable[[Rubric], None] | None = None
    _made: dict[str, Rubric | CriteriaFormatError] = field(default_factory=dict)
    # The flags of each rubric made, by its id(): the rubric is held in _made meanwhile.
    _flags: dict[int, tuple[str, ...]] = field(default_factory=dict)

    def rubric_for(self, criteria: Any, loc: Loc) -> Rubric | list[FieldProblem]:
        """The rubric of an item whose criteria (at ``loc``) are ``criteria``, or why the
        item is rejected (raises what ``permit`` raises)."""
        if self.template is None:
            return [
                FieldProblem(
                    loc,
                    "item criteria need a rubric to extend or replace; "
                    "a recipe or routing table takes none",
                )
            ]
        key = json.dumps(
            criteria, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":")
        )
        size = len(key.encode("utf-8", "surrogatepass"))
        if self.max_bytes is not None and size > self.max_bytes:
            return [
                FieldProblem(
                    loc,
                    f"{size} bytes as JSON, more than max_rubric_bytes={self.max_bytes} "
                    "(the bound of an inline rubric)",
                )
            ]
        made = self._made.get(key)
        if made is None:
            made = self._make(criteria)
            if isinstance(made, Rubric):
                if self.permit is not None:
                    self.permit(made)
                # One text for all: each scan has a fixed cost, and criteria are short.
                given = "\n".join(c.text for c in made.criteria if made.from_item(c))
                self._flags[id(made)] = dataset_flags([given])
            self._made[key] = made
        if isinstance(made, CriteriaFormatError):
            return [FieldProblem((*loc, *p.loc), p.message) for p in made.problems]
        return made

    def flags_of(self, rubric: Rubric | None) -> tuple[str, ...]:
        """The ``dataset:<flag>`` names of the attack shapes in the criteria an item brought
        (``rubric``, made here; none for any other rubric), scanned once per rubric."""
        return self._flags.get(id(rubric), ())

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
