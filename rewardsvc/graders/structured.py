"""JSON validity and JSON Schema conformance.

Parsing is linear, but validation is not: jsonschema runs ``pattern`` with Python's
backtracking ``re``, and an ``anyOf`` that refers back to its own schema doubles its work
per level of nesting. So :func:`json_check` runs in a deadline worker like every grader
(:mod:`rewardsvc.graders.registry`). ``uniqueItems`` is checked here in linear time (jsonschema
compares every pair of objects: 3,000 objects took 10 s).

A schema never reaches outside itself: a ``$ref`` resolves only inside the schema (the
spec refuses any other when it loads, and the registry here refuses to fetch or read
anything, should one get through), so a grader cannot be made to read a file or call a URL.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
from jsonschema import validators
from referencing import Registry
from referencing.exceptions import Unresolvable

from rewardsvc.core.graders_spec import JsonSpec
from rewardsvc.graders.extract import code_block
from rewardsvc.graders.result import GraderResult, clip_text

MAX_ERRORS = 5


# A registry retrieves nothing unless given a ``retrieve`` function: every URI not in it
# raises NoSuchResource. The draft 2020-12 meta-schemas are added by jsonschema itself.
NO_RETRIEVAL: Registry[Any] = Registry()


def _canonical(value: Any) -> Any:
    """A hashable form of a JSON value under JSON Schema's equality (1 == 1.0, true != 1,
    objects unordered)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _canonical(v)) for k, v in value.items()))
    return (type(value).__name__, value)


def _unique_items(
    validator: Any, unique: bool, instance: Any, schema: dict[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for n, item in enumerate(instance):
        key = _canonical(item)
        if key in seen:
            yield jsonschema.ValidationError(f"item {n} repeats an earlier item (uniqueItems)")
            return
        seen.add(key)


# No ``version``: that would register this class as the one for draft 2020-12 everywhere.
_Validator = validators.extend(jsonschema.Draft202012Validator, {"uniqueItems": _unique_items})


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str) -> Any:
    return _Validator(json.loads(schema_json), registry=NO_RETRIEVAL)


def schema_errors(schema_json: str, value: Any) -> list[str]:
    """Up to :data:`MAX_ERRORS` messages, each prefixed by the JSON path it concerns."""
    errors: list[str] = []
    for error in _validator(schema_json).iter_errors(value):
        errors.append(f"{error.json_path}: {clip_text(error.message, 200)}")
        if len(errors) >= MAX_ERRORS:
            break
    return errors


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"key {clip_text(key, 80)!r} repeats in an object")
        seen.add(key)
    return dict(pairs)


def parse_json(text: str) -> Any:
    """``text`` as strict JSON: ``NaN`` and ``Infinity`` refused, and an object whose key
    repeats refused (the schema would see only the last value, while another reader may
    take the first: ``{"age": -1, "age": 5}`` passed ``minimum: 0``). Raises ValueError."""
    return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)


def json_text(completion: str, spec: JsonSpec) -> tuple[str, str]:
    """The text to parse and how it was chosen (``auto``: last code block, else whole)."""
    if spec.extract in ("code_block", "auto"):
        block = code_block(completion)
        if block is not None:
            return block, "code_block"
        if spec.extract == "code_block":
            return "", "code_block"
    return completion.strip(), "none"


def json_check(completion: str, spec: JsonSpec) -> GraderResult:
    """1 for JSON that parses and (when a schema is given) conforms; 0 otherwise, or 0.5
    for valid JSON that breaks the schema with ``partial_credit``. No score (kind
    ``grader_failed``) when the schema cannot be applied: a reference it does not hold,
    or nesting too deep to validate. Unbounded in time on a hostile schema: callers run
    it under a deadline."""
    text, extracted_by = json_text(completion, spec)
    evidence: dict[str, Any] = {"extracted_by": extracted_by}
    try:
        value = parse_json(text)
    except (ValueError, RecursionError) as exc:
        evidence["parse_error"] = clip_text(str(exc), 200)
        return GraderResult(0.0, evidence)
    evidence["valid_json"] = True
    if spec.json_schema is None:
        return GraderResult(1.0, evidence)
    try:
        errors = schema_errors(json.dumps(spec.json_schema, sort_keys=True), value)
    except Unresolvable as exc:
        message = f"schema reference {clip_text(str(exc.ref), 200)!r} is not inside the schema"
        return GraderResult(None, evidence, message, "grader_failed")
    except RecursionError:
        return GraderResult(None, evidence, "the value nests too deep to validate", "grader_failed")
    evidence["schema_errors"] = errors
    if not errors:
        return GraderResult(1.0, evidence)
    return GraderResult(0.5 if spec.partial_credit else 0.0, evidence)
