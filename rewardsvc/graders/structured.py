"""JSON validity and JSON Schema conformance.

Parsing is linear. Validation against a schema without regular expressions runs in
this process; a schema that holds ``pattern`` or ``patternProperties`` is matched by
jsonschema with Python's backtracking ``re``, so it runs in a deadline worker
(:mod:`rewardsvc.graders.worker`) that is killed when a hostile string makes a pattern
backtrack.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema

from rewardsvc.core.graders_spec import JsonSpec
from rewardsvc.graders.extract import code_block
from rewardsvc.graders.result import GraderResult, clip_text
from rewardsvc.graders.worker import DeadlineExceeded, DeadlineWorkers, WorkerFailed, WorkersBusy

MAX_ERRORS = 5
SCHEMA_TIMEOUT_S = 2.0


def _has_regex(schema: Any) -> bool:
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "pattern" in node or "patternProperties" in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(schema_json))


def schema_errors(schema_json: str, value: Any) -> list[str]:
    """Up to :data:`MAX_ERRORS` messages, each prefixed by the JSON path it concerns."""
    errors: list[str] = []
    for error in _validator(schema_json).iter_errors(value):
        errors.append(f"{error.json_path}: {clip_text(error.message, 200)}")
        if len(errors) >= MAX_ERRORS:
            break
    return errors


def json_text(completion: str, spec: JsonSpec) -> tuple[str, str]:
    """The text to parse and how it was chosen (``auto``: last code block, else whole)."""
    if spec.extract in ("code_block", "auto"):
        block = code_block(completion)
        if block is not None:
            return block, "code_block"
        if spec.extract == "code_block":
            return "", "code_block"
    return completion.strip(), "none"


def json_check(
    completion: str, spec: JsonSpec, workers: DeadlineWorkers | None = None
) -> GraderResult:
    """1 for JSON that parses and (when a schema is given) conforms; 0 otherwise,
    or 0.5 for valid JSON that breaks the schema with ``partial_credit``.

    ``workers`` runs validation against a schema with regular expressions; without
    them such a schema is validated in this thread (tests and trusted schemas only).
    """
    text, extracted_by = json_text(completion, spec)
    evidence: dict[str, Any] = {"extracted_by": extracted_by}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        evidence["parse_error"] = clip_text(str(exc), 200)
        return GraderResult(0.0, evidence)
    evidence["valid_json"] = True
    if spec.json_schema is None:
        return GraderResult(1.0, evidence)
    schema_json = json.dumps(spec.json_schema, sort_keys=True)
    try:
        if workers is not None and _has_regex(spec.json_schema):
            errors = workers.run(schema_errors, (schema_json, value), SCHEMA_TIMEOUT_S)
        else:
            errors = schema_errors(schema_json, value)
    except WorkersBusy as exc:
        return GraderResult(None, evidence, f"schema validation busy: {exc}")
    except DeadlineExceeded:
        evidence["schema_errors"] = [f"validation exceeded {SCHEMA_TIMEOUT_S:g} s"]
        return GraderResult(0.0, evidence)
    except (WorkerFailed, RecursionError) as exc:
        return GraderResult(None, evidence, f"schema validation failed: {exc}")
    evidence["schema_errors"] = errors
    if not errors:
        return GraderResult(1.0, evidence)
    return GraderResult(0.5 if spec.partial_credit else 0.0, evidence)
