"""Load a YAML file into a pydantic model, reporting every error as ``file:line: path: msg``.

ruamel.yaml's round-trip loader keeps the line of every key and list entry,
so a pydantic error location (``criteria.2.weight``) maps back to the line a
user has to fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Problem:
    """One validation error at a place in a file."""

    file: str
    line: int
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.file}:{self.line}: {where}{self.message}"


class InvalidFile(Exception):
    """A file that did not parse or validate; ``problems`` holds each error."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def format_path(loc: tuple[int | str, ...]) -> str:
    """A key path as users write it: ``criteria[2].weight``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _line_of(doc: Any, loc: tuple[int | str, ...]) -> int:
    """1-based line of the deepest node of ``loc`` that exists in the document."""
    line = 1
    node = doc
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            line = node.lc.key(part)[0] + 1
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and part < len(node):
            line = node.lc.item(part)[0] + 1
            node = node[part]
        else:
            break
    return line


_RELATIVE = re.compile(r"^((?:\[\d+\]|\.?[a-z_]+)+): ")


def split_relative(message: str) -> tuple[tuple[int | str, ...], str] | None:
    """Split a validator message that names a place relative to its own.

    Validators write ``"weight: must be negative"`` or ``"[2].id: duplicate ..."``;
    this returns ``(("weight",), "must be negative")`` or ``((2, "id"), "duplicate ...")``,
    or None when the message names no place.
    """
    match = _RELATIVE.match(message)
    if not match:
        return None
    parts = tuple(
        int(p[1:-1]) if p.startswith("[") else p.lstrip(".")
        for p in re.findall(r"\[\d+\]|\.?[a-z_]+", match.group(1))
    )
    return parts, message[match.end() :]


def _exists(doc: Any, loc: tuple[int | str, ...]) -> bool:
    node = doc
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    return True


def _clean_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    # pydantic appends validator and union-member names (e.g. "function-after[...]")
    # that are not keys of the document.
    return tuple(p for p in loc if isinstance(p, int) or ("[" not in p and "-" not in p[:1]))


def _message(error: dict[str, Any]) -> str:
    msg = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    if error["type"] == "extra_forbidden":
        msg = "unknown key (not allowed here)"
    return msg


def parse_yaml(text: str, name: str) -> Any:
    """Parse YAML text keeping line information; raise InvalidFile with the line on error."""
    yaml = YAML(typ="rt")
    try:
        return yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or str(exc)
        raise InvalidFile([Problem(name, line, "", f"YAML syntax error: {problem}")]) from exc
    except YAMLError as exc:
        raise InvalidFile([Problem(name, 1, "", f"YAML error: {exc}")]) from exc


def validate_document(
    doc: Any, model: type[M], name: str, context: dict[str, Any] | None = None
) -> M:
    """Validate a parsed document against ``model``; errors carry file, line and key path."""
    if doc is None:
        raise InvalidFile([Problem(name, 1, "", "the file is empty")])
    try:
        return model.model_validate(doc, context=context)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = _clean_loc(error["loc"])
            msg = _message(error)
            # Validators name the offending place relative to theirs ("weight: ...",
            # "[2].id: ..."); point at it when it exists in the document.
            relative = split_relative(msg)
            if relative and _exists(doc, (*loc, *relative[0])):
                loc, msg = (*loc, *relative[0]), relative[1]
            problems.append(Problem(name, _line_of(doc, loc), format_path(loc), msg))
        raise InvalidFile(problems) from exc


def load_text(text: str, model: type[M], name: str, context: dict[str, Any] | None = None) -> M:
    """Parse and validate YAML text named ``name`` (a file path or ``<request>``)."""
    return validate_document(parse_yaml(text, name), model, name, context)


def load_file(path: Path, model: type[M], context: dict[str, Any] | None = None) -> M:
    """Parse and validate one YAML file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidFile([Problem(str(path), 1, "", f"cannot read: {exc.strerror}")]) from exc
    return load_text(text, model, str(path), context)
