"""The base of every configuration model: strict, immutable, finite.

Rubric and judge pool files are written by hand, so a misspelt key must be an error
rather than silently ignored (``extra="forbid"``), a loaded model must not change under
the scorer that holds it (``frozen``), and no number may be NaN or infinite: YAML spells
them ``.nan`` and ``.inf``, and one NaN weight turns every reward into 0.0 with status ok.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A frozen model that refuses unknown keys and non-finite numbers."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


def check_unique_ids(entries: Sequence[_HasId], what: str) -> None:
    """Refuse a list in which two entries share an id, naming the second (``[i].id``)."""
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        if entry.id in seen:
            raise ValueError(f"[{i}].id: duplicate {what} id {entry.id!r}")
        seen.add(entry.id)
