"""Probes and the reference check of the JSON grader (with a JSON Schema).

The reference parses RFC 8259 JSON only (no ``NaN``/``Infinity``, no repeated key in an
object), takes the completion's only code block (several blocks are in doubt, none means
the whole text) and checks the schema below with its own code: an object with a string
``name`` and an integer ``age`` of at least 0, an integer being a JSON number written
without a fraction or exponent.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from rewardsvc.fuzzing.answers import Probe, probe_rounds

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
}
_BLOCK = re.compile(r"^```[\w-]*\n(.*?)^```", re.M | re.S)


def _objects(rng: random.Random) -> dict[str, str]:
    """Objects that conform, break the schema or break JSON, in the ways a policy can."""
    name, age = rng.choice(["Ada", "Alan", "Grace"]), rng.randint(0, 99)
    good = json.dumps({"name": name, "age": age})
    return {
        "valid": good,
        "valid_in_block": f"```json\n{good}\n```",
        "nan_age": f'{{"name": "{name}", "age": NaN}}',
        "infinity_age": f'{{"name": "{name}", "age": Infinity}}',
        "repeated_key": f'{{"name": "{name}", "age": -1, "age": {age}}}',
        "float_age": f'{{"name": "{name}", "age": {age}.0}}',
        "exponent_age": f'{{"name": "{name}", "age": {age}e0}}',
        "bool_age": f'{{"name": "{name}", "age": true}}',
        "string_age": f'{{"name": "{name}", "age": "{age}"}}',
        "trailing_junk": good + " and that is all",
        "truncated": good[: rng.randint(1, len(good) - 1)],
        "prose_around": f"Here it is: {good} done.",
        "bad_block_then_good": f"```json\n{{broken\n```\n```json\n{good}\n```",
        "good_block_then_bad": f"```json\n{good}\n```\n```json\n{{broken\n```",
        "single_quotes": good.replace('"', "'"),
        "comment_inside": good[:-1] + " // ok\n}",
    }


json_probes = probe_rounds("json_tricks", _objects)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key repeats")
    return dict(pairs)


def strict_parse(text: str) -> tuple[bool, Any]:
    """(parsed, value) under RFC 8259 with unique keys; integers keep their Python type."""
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_repeats)
    except (ValueError, RecursionError):
        return False, None
    return True, value


def _value(probe: Probe) -> tuple[bool, Any]:
    blocks = _BLOCK.findall(probe.completion)
    if len(blocks) > 1:
        return False, None
    return strict_parse(blocks[0] if blocks else probe.completion.strip())


def parses(probe: Probe) -> bool:
    """Reference of the JSON grader without a schema: the one JSON text is strict JSON."""
    return _value(probe)[0]


def conforms(probe: Probe) -> bool:
    """Reference of the JSON grader with :data:`SCHEMA`."""
    parsed, value = _value(probe)
    if not parsed or not isinstance(value, dict):
        return False
    name, age = value.get("name"), value.get("age")
    return isinstance(name, str) and type(age) is int and age >= 0
