"""Per-prompt rubrics: a dataset's rubric column as the request fields the service reads.

In rubric-based RL (HealthBench, Rubrics as Rewards, the Tinker cookbook's rubric recipe)
each prompt brings its own criteria. The service takes them per item (``items[].criteria``,
as the dataset writes them), with ``options.criteria_format`` naming the dataset's format
and ``options.criteria_mode`` saying whether they replace (the default) or extend the
template rubric's criteria; its trainer routes read the same from a label
``{"criteria": [...], "reference": "..."}`` and from ``?criteria_format=`` /
``?criteria_mode=`` in the URL. This module is the client's one place for all of it: every
adapter reads its trainer's field (a TRL column, veRL's ``extra_info``, an OpenRLHF or slime
label, verifiers' ``info``, ART's metadata) and hands the value here.

The service validates the criteria (a bad one rejects its item only, naming the field); the
client only brings them into JSON shape: arrays (veRL keeps dataset values in numpy) become
lists, and a JSON text (a rubric column stored as a string, an ART metadata value) is parsed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

LABEL_KEY = "criteria"
"""The key of a label that carries the sample's own rubric (as the service reads it)."""

MODES = ("replace", "extend")
"""``criteria_mode`` values: the item's criteria instead of the template's, or after them."""

ENV_FORMAT = "REWARDSVC_CRITERIA_FORMAT"
ENV_MODE = "REWARDSVC_CRITERIA_MODE"


@dataclass(frozen=True)
class CriteriaOptions:
    """How the service reads the items' criteria: the dataset's format and the mode. None
    leaves the service's default (format ``rewardsvc``, mode ``replace``)."""

    format: str | None = None
    mode: str | None = None

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"criteria_mode must be one of {MODES}, not {self.mode!r}")
        if self.format is not None and not self.format:
            raise ValueError("criteria_format must not be empty")

    @classmethod
    def resolve(cls, format: str | None = None, mode: str | None = None) -> CriteriaOptions:
        """The given values, else REWARDSVC_CRITERIA_FORMAT / REWARDSVC_CRITERIA_MODE."""
        format = format or os.environ.get(ENV_FORMAT) or None
        return cls(format, mode or os.environ.get(ENV_MODE) or None)

    def fields(self) -> dict[str, str]:
        """The set values under their request names (options keys and route query names)."""
        out = {}
        if self.format is not None:
            out["criteria_format"] = self.format
        if self.mode is not None:
            out["criteria_mode"] = self.mode
        return out

    def merged(self, options: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A request's ``options`` with these fields added (what the caller set wins)."""
        out = {**self.fields(), **dict(options or {})}
        return out or None


def _jsonable(value: Any) -> Any:
    """``value`` with arrays (numpy, pandas) and tuples as lists, recursively."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def criteria_value(value: Any) -> Any:
    """A dataset's rubric value as the request's ``criteria``: None (and "" or an empty
    text) for none; a JSON text parsed; arrays as lists. Anything else is sent as it is:
    the service validates it and rejects the item alone, naming the field."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text[0] in "[{":
            try:
                return json.loads(text)
            except ValueError:
                return value  # not JSON after all: the service says what is wrong with it
        return value
    return _jsonable(value)


def with_criteria(entry: dict[str, Any], value: Any) -> dict[str, Any]:
    """``entry`` (an item, a group) with ``criteria`` set when ``value`` holds some."""
    criteria = criteria_value(value)
    if criteria is not None:
        entry["criteria"] = criteria
    return entry


def rubric_label(criteria: Any, reference: Any = None) -> str:
    """A trainer label carrying the sample's own rubric, as JSON text: what an OpenRLHF
    dataset's label column (``--data.label_key``) or a slime ``label`` should hold. The
    service's trainer routes and this package's adapters read it back."""
    label: dict[str, Any] = {LABEL_KEY: _jsonable(criteria)}
    if reference is not None:
        label["reference"] = reference
    return json.dumps(label, ensure_ascii=False)


def split_label(label: Any) -> tuple[Any, Any]:
    """(reference label, criteria) of a trainer label: a rubric label (``rubric_label``,
    as an object or its JSON text) gives its reference and criteria; any other label is the
    reference, with no criteria."""
    value = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            value = json.loads(label)
        except ValueError:
            value = label  # a reference that merely starts with a brace
    if isinstance(value, Mapping) and LABEL_KEY in value:
        return value.get("reference"), value[LABEL_KEY]
    return label, None


ROUTES = {
    "openrlhf": "/openrlhf/{rubric}",
    "slime": "/slime/{rubric}",
    "nemo-gym": "/nemo-gym/{rubric}/verify",
}
"""The service's trainer routes, by trainer."""


def route_url(
    base: str,
    trainer: str,
    rubric: str,
    *,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
    **params: str | None,
) -> str:
    """The service's route for ``trainer`` (a key of ``ROUTES``) and ``rubric``, with the
    criteria options and the other query parameters that are not None (``run``, slime's
    ``format``, NeMo Gym's ``criteria_field``...)."""
    query = CriteriaOptions(criteria_format, criteria_mode).fields()
    query.update({k: v for k, v in params.items() if v is not None})
    url = base.rstrip("/") + ROUTES[trainer].format(rubric=quote(rubric, safe=""))
    return f"{url}?{urlencode(query)}" if query else url


__all__ = [
    "LABEL_KEY",
    "MODES",
    "ROUTES",
    "CriteriaOptions",
    "criteria_value",
    "route_url",
    "rubric_label",
    "split_label",
    "with_criteria",
]
