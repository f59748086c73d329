"""Checking a generated rubric: parse, validate against the schema and the rubric model,
de-duplicate.

A reply is refused (:class:`Refused`, with a reason that names the place, such as
``criteria[2].weight``) when it is not JSON, was cut at the token budget, holds text that
cannot be written or graded (a lone surrogate from a ``\\ud800`` escape, or a NUL), breaks
the schema it was asked for (``generation_prompt.criteria_schema``), or does not make a valid
rubric (:class:`~rewardsvc.core.rubric.Criterion` and :class:`~rewardsvc.core.rubric.Rubric`:
categories, weight signs, a positive weight). Criteria whose normalized text repeats an
earlier one are dropped; a repeated id is renamed (``id_2``). Too few criteria left after
that is a refusal too: never a silently short or empty rubric.

Reasons quote no generated text: they go back to the generator in the retry's prompt,
outside any fence, so they hold only paths and the schema's own values.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError
from jsonschema.exceptions import best_match
from pydantic import ValidationError

from rewardsvc.application.items import unreadable_text
from rewardsvc.authoring.generation_prompt import WEIGHTS, Limits, criteria_schema
from rewardsvc.core.errors import field_problems, format_path
from rewardsvc.core.rubric import Criterion, Rubric

# What a generated rubric is validated as: a rubric of the generated criteria (the id and
# judge are placeholders; only the criteria's own rules are checked).
_PLACEHOLDER_ID = "generated"
_WORD = re.compile(r"[^\W_]+")
_ID_MAX = 64


class Refused(ValueError):
    """A reply that is not a valid rubric; the message says why and where."""


@dataclass(frozen=True)
class Checked:
    """A valid generated rubric: its criteria, and what de-duplication changed."""

    criteria: list[Criterion]
    duplicates_dropped: int = 0
    ids_renamed: int = 0
    dropped_ids: list[str] = field(default_factory=list)


def normalized(text: str) -> str:
    """A criterion's text for comparison: its words, case-folded, punctuation ignored."""
    return " ".join(_WORD.findall(text.casefold()))


def _schema_reason(error: SchemaError) -> str:
    """Where a reply breaks the schema and which rule, without quoting the reply."""
    if error.validator == "anyOf" and isinstance(error.instance, dict):
        # A criterion that fits no category's branch: the branch of the category it claims
        # says what is wrong with it; claiming none, its category is.
        claimed = error.instance.get("category")
        if claimed not in WEIGHTS:
            where = format_path([*error.absolute_path, "category"])
            return f"{where}: not one of the categories {', '.join(WEIGHTS)}"
        branch = list(WEIGHTS).index(claimed)
        inner = [e for e in error.context or () if e.schema_path[0] == branch]
        error = best_match(inner) or error
    if "prefixItems" in error.schema_path:
        low, high = WEIGHTS["essential"]
        where = format_path(list(error.absolute_path)[:2])
        return f"{where}: the first criterion must be essential, weight {low} to {high}"
    where = format_path(error.absolute_path) or "the reply"
    return f"{where}: breaks the schema's {error.validator} {json.dumps(error.validator_value)}"


class Checker:
    """The check of replies for one run's :class:`Limits` (the schema compiled once)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self._validator = Draft202012Validator(criteria_schema(limits))

    def check(self, raw: str, truncated: bool = False) -> Checked:
        """The rubric in ``raw``; raises :class:`Refused`. ``truncated``: the reply stopped
        at the token budget (finish_reason ``length``)."""
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            if truncated:
                raise Refused(
                    "the reply was cut at the token budget before its JSON ended"
                ) from exc
            where = f" at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
            raise Refused(f"not JSON{where}") from exc
        bad = unreadable_text(doc)
        if bad is not None:
            # Such text has no UTF-8 encoding: OUTPUT could not hold the row.
            raise Refused(str(bad))
        error = best_match(self._validator.iter_errors(doc))
        if error is not None:
            raise Refused(_schema_reason(error))
        kept, dropped = _distinct(doc["criteria"])
        renamed = _rename(kept)
        if len(kept) < self.limits.min_criteria:
            raise Refused(
                f"criteria: only {len(kept)} distinct criteria (others repeat one), fewer "
                f"than the {self.limits.min_criteria} asked for"
            )
        criteria = _validated(kept)
        return Checked(criteria, len(dropped), renamed, dropped)


def _distinct(entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The entries whose normalized text is new, and the ids of those dropped."""
    seen: set[str] = set()
    kept: list[dict[str, Any]] = []
    dropped: list[str] = []
    for entry in entries:
        key = normalized(entry["text"])
        if key in seen:
            dropped.append(entry["id"])
            continue
        seen.add(key)
        kept.append(dict(entry))
    return kept, dropped


def _rename(entries: list[dict[str, Any]]) -> int:
    """Give each repeated id a numbered form (``id_2``, ``id_3``) free in the rubric;
    the number of ids renamed."""
    taken = {e["id"] for e in entries}
    seen: set[str] = set()
    renamed = 0
    for entry in entries:
        ident = entry["id"]
        if ident in seen:
            n = 2
            while (new := f"{ident[: _ID_MAX - 1 - len(str(n))]}_{n}") in taken:
                n += 1
            entry["id"] = new
            taken.add(new)
            renamed += 1
        seen.add(entry["id"])
    return renamed


def _validated(entries: list[dict[str, Any]]) -> list[Criterion]:
    """The entries as criteria of a valid rubric; raises :class:`Refused`."""
    doc = {"id": _PLACEHOLDER_ID, "criteria": entries, "judges": [_PLACEHOLDER_ID]}
    try:
        rubric = Rubric.model_validate(doc)
    except ValidationError as exc:
        problems = field_problems(exc.errors(), doc)
        raise Refused("; ".join(str(p) for p in problems)) from exc
    return list(rubric.criteria)


def criterion_row(criterion: Criterion) -> dict[str, Any]:
    """A criterion as an output row holds it: the fields a per-prompt rubric carries."""
    return criterion.model_dump(mode="json", include={"id", "text", "category", "weight"})
