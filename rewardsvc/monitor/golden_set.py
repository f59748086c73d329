"""Golden sets: labelled items of a rubric, re-scored during a run to measure its judges.

A rubric's golden file (``rubrics/golden/<rubric-id>.yaml``) holds items written for the
project, each labelled per criterion (``labels``: criterion id → true when the criterion
holds for the completion) or as a whole (``label``: true when the completion deserves a
high reward, read against the judge's score at 0.5). :mod:`.golden` re-scores them and
compares each judge with the labels and with its own first answers.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import Field, model_validator

from rewardsvc.core.base import StrictModel
from rewardsvc.library.yamlfile import Problem, line_of
from rewardsvc.monitor.rubric_sets import RubricSet, load_sets

MAX_GOLDEN_ITEMS = 64
"""Most items of one golden set: a re-score is bounded work, asked of every judge."""


class GoldenItem(StrictModel):
    """One labelled item: what the policy was asked, what it answered, and the labels."""

    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")
    prompt: str = Field(min_length=1)
    completion: str
    reference: str | None = None
    labels: dict[str, bool] = Field(
        default_factory=dict,
        description="Criterion id → true when the criterion holds for this completion.",
    )
    label: bool | None = Field(
        default=None,
        description="The item as a whole: true when the completion deserves a high reward "
        "(the judge's score is read at 0.5).",
    )

    @model_validator(mode="after")
    def _labelled(self) -> Self:
        if not self.labels and self.label is None:
            raise ValueError("an item needs `labels` (per criterion) or `label` (the item)")
        return self


class GoldenSet(RubricSet):
    """The golden set of one rubric."""

    ENTRIES: ClassVar[str] = "items"

    max_shift: float = Field(
        default=0.12,
        gt=0.0,
        le=1.0,
        description="A judge whose mean absolute shift of P(yes) against its baseline reaches "
        "this raises the golden drift alert (see docs/how-to/golden-sets.md for how the "
        "default was calibrated).",
    )
    items: list[GoldenItem] = Field(min_length=1, max_length=MAX_GOLDEN_ITEMS)

    @model_validator(mode="after")
    def _unique_ids(self) -> Self:
        ids = [item.id for item in self.items]
        if len(ids) != len(set(ids)):
            raise ValueError("item ids must be unique")
        return self

    def rollouts(self) -> list[dict[str, Any]]:
        """The items to score, as the scorer takes them (id, prompt, completion, reference)."""
        out = []
        for item in self.items:
            row: dict[str, Any] = {"id": item.id, "prompt": item.prompt}
            row["completion"] = item.completion
            if item.reference is not None:
                row["reference"] = item.reference
            out.append(row)
        return out

    def rubric_problems(
        self, doc: Any, name: str, criteria: Collection[str] | None
    ) -> list[Problem]:
        """The labels that name no criterion of the rubric (whose criterion ids are
        ``criteria``; None: the rubric is not known here, nothing to check)."""
        if criteria is None:
            return []
        return [
            Problem(
                name,
                line_of(doc, ("items", n, "labels", criterion)),
                f"items[{n}].labels.{criterion}",
                f"rubric {self.rubric!r} has no criterion {criterion!r} "
                f"(its criteria: {', '.join(sorted(criteria))})",
            )
            for n, item in enumerate(self.items)
            for criterion in item.labels
            if criterion not in criteria
        ]


def load_golden(folder: Path) -> dict[str, GoldenSet]:
    """Every ``*.yaml`` golden file of ``folder``, by rubric id (raises ``InvalidFile``)."""
    return load_sets(folder, GoldenSet)
