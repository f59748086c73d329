"""Reading one entry of a dataset's rubric value: an object, a text, a number, each
checked, a problem located relative to the entry (:class:`EntryProblem`); what a JSON
value is, for messages; criterion ids kept within their bound and unique in a rubric.
The formats of ``criteria_formats`` read their entries with these. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rewardsvc.core.errors import Loc

ID_MAX = 64  # the Identifier pattern's length bound


class EntryProblem(Exception):
    """A problem with one entry, at ``loc`` relative to the entry."""

    def __init__(self, loc: Loc, message: str):
        self.loc, self.message = loc, message
        super().__init__(message)


_KINDS = {str: "a string", list: "a list", dict: "an object", bool: "a boolean", int: "a number"}


def kind_of(value: Any) -> str:
    """What a JSON value is, for messages."""
    names = {**_KINDS, float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def entry_object(entry: Any, expects: str) -> Mapping[str, Any]:
    """The entry as an object (``expects`` says what it should be, for the message)."""
    if not isinstance(entry, dict):
        raise EntryProblem((), f"expected {expects}, got {kind_of(entry)}")
    return entry


def entry_text(entry: Mapping[str, Any], key: str) -> str:
    """The entry's text under ``key``: a string of at least 3 characters."""
    if key not in entry:
        raise EntryProblem((key,), "missing")
    value = entry[key]
    if not isinstance(value, str):
        raise EntryProblem((key,), f"must be text, got {kind_of(value)}")
    if len(value.strip()) < 3:
        raise EntryProblem((key,), "must be text of at least 3 characters")
    return value.strip()


def entry_number(entry: Mapping[str, Any], key: str) -> float:
    """The entry's number under ``key``: finite and not 0 (it could not change a score)."""
    if key not in entry:
        raise EntryProblem((key,), "missing")
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EntryProblem((key,), f"must be a number, got {kind_of(value)}")
    if not math.isfinite(value):
        raise EntryProblem((key,), "must be a finite number")
    if value == 0:
        raise EntryProblem((key,), "must not be 0: such a criterion cannot change the score")
    return float(value)


def unique_id(base: str, used: set[str]) -> str:
    """``base``, or ``base-2``, ``base-3``, ... the first not in ``used``."""
    candidate, n = base, 2
    while candidate in used:
        candidate, n = f"{base[: ID_MAX - 1 - len(str(n))]}-{n}", n + 1
    return candidate
