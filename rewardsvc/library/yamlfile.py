"""Load a YAML file into a pydantic model, reporting every error as ``file:line: path: msg``.

ruamel.yaml's round-trip loader keeps the line of every key and list entry,
so a pydantic error location (``criteria.2.weight``) maps back to the line a
user has to fix. Locations are turned into key paths by the one formatter,
:func:`rewardsvc.core.errors.field_problems`.

Text is bounded before it is parsed (``max_bytes``) and the parsed document after
(``max_values``, counting values as often as aliases repeat them), because rubric
YAML also arrives from HTTP clients: a large document costs seconds of parsing, and a
few lines of nested aliases ("billion laughs") expand to billions of values.
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
from ruamel.yaml.reader import ReaderError

from rewardsvc.core.errors import Loc, field_problems

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_BYTES = 64 * 1024
"""Largest YAML text accepted (UTF-8 bytes); the shipped rubrics are a few KiB."""

DEFAULT_MAX_VALUES = 100_000
"""Most values (mappings, sequences, scalars) a document may hold once aliases are expanded."""

MAX_BRACKET_DEPTH = 64
"""Deepest nesting of ``[`` and ``{`` accepted. ruamel reads nested brackets in time
quadratic in their depth (5,000 take 17 s) and cannot build more than about 200 levels."""


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


def _refuse(name: str, line: int, message: str) -> InvalidFile:
    return InvalidFile([Problem(name, line, "", message)])


def check_size(size: int, name: str, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Refuse a YAML text of ``size`` UTF-8 bytes above ``max_bytes`` (raise InvalidFile)."""
    if size > max_bytes:
        raise _refuse(name, 1, f"the YAML is {size} bytes; at most {max_bytes} bytes are accepted")


def decode(data: bytes, name: str) -> str:
    """UTF-8 text of a file's bytes; a byte that is not UTF-8 is refused at its line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise _refuse(
            name,
            line,
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} "
            "(save the file as UTF-8)",
        ) from exc


def read_text(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The text of a YAML file, refused (InvalidFile at a line) when unreadable,
    larger than ``max_bytes`` or not UTF-8."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _refuse(str(path), 1, f"cannot read: {exc.strerror or exc}") from exc
    check_size(len(data), str(path), max_bytes)
    return decode(data, str(path))


def _syntax_message(exc: MarkedYAMLError) -> str:
    """ruamel's problem, and, when the construct it was reading started elsewhere (an
    unclosed bracket or quote lines above), where that construct started."""
    problem = exc.problem or exc.context or str(exc)
    stop, start = exc.problem_mark, exc.context_mark
    if stop is not None:
        problem += f" (column {stop.column + 1})"
    moved = stop is None or (
        start is not None and (start.line, start.column) != (stop.line, stop.column)
    )
    if exc.context and exc.problem and start is not None and moved:
        # ruamel says "while parsing a flow sequence": keep the construct's name.
        what = re.sub(r"^while \w+ ", "", exc.context)
        problem += f"; {what} started at line {start.line + 1}, column {start.column + 1}"
    return f"YAML syntax error: {problem}"


def _count_values(doc: Any, limit: int) -> int | None:
    """Values in ``doc`` counting each alias use in full, up to just past ``limit``;
    None when an alias refers to a node that contains it."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, dict | list):
            continue
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else list(node)
        key = id(node)
        if done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(
                sizes[id(c)] if isinstance(c, dict | list) else 1 for c in children
            )
            if sizes[key] > limit:
                return sizes[key]
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            return None
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children)
    return sizes.get(id(doc), 1)


def _check_brackets(text: str, name: str) -> None:
    """Refuse text whose brackets nest deeper than MAX_BRACKET_DEPTH, before ruamel reads it.

    Brackets inside quoted or plain text count too, so this over-counts: it only runs
    when the text holds that many opening brackets at all, and no rubric nests them.
    """
    if text.count("[") + text.count("{") <= MAX_BRACKET_DEPTH:
        return
    depth = 0
    for index, char in enumerate(text):
        if char in "[{":
            depth += 1
            if depth > MAX_BRACKET_DEPTH:
                line = text.count("\n", 0, index) + 1
                raise _refuse(
                    name,
                    line,
                    f"YAML error: brackets [ {{ nest more than {MAX_BRACKET_DEPTH} deep",
                )
        elif char in "]}" and depth:
            depth -= 1


def parse_yaml(text: str, name: str, max_values: int = DEFAULT_MAX_VALUES) -> Any:
    """Parse YAML text keeping line information; raise InvalidFile with the line on error."""
    _check_brackets(text, name)
    yaml = YAML(typ="rt")
    try:
        doc = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise _refuse(name, line, _syntax_message(exc)) from exc
    except ReaderError as exc:
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        raise _refuse(
            name, line, f"YAML error: character #x{exc.character:04x} is not allowed in YAML"
        ) from exc
    except YAMLError as exc:
        raise _refuse(name, 1, f"YAML error: {exc}") from exc
    except RecursionError as exc:
        raise _refuse(name, 1, "YAML error: the document is nested too deeply") from exc
    count = _count_values(doc, max_values)
    if count is None:
        raise _refuse(name, 1, "YAML error: an alias (*name) refers to a node that contains it")
    if count > max_values:
        raise _refuse(
            name,
            1,
            f"YAML error: the document holds more than {max_values} values once its "
            "aliases (*name) are expanded",
        )
    return doc


def line_of(doc: Any, loc: Loc) -> int:
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


def _as_yaml_error(error: Any) -> Any:
    # In a file the author wrote a key, not a "field" (the API's word).
    if error.get("type") == "extra_forbidden":
        return {**error, "type": "unknown_key", "msg": "unknown key (not allowed here)"}
    return error


def validate_document(
    doc: Any, model: type[M], name: str, context: dict[str, Any] | None = None
) -> M:
    """Validate a parsed document against ``model``; errors carry file, line and key path."""
    if doc is None:
        raise _refuse(name, 1, "the file is empty")
    try:
        return model.model_validate(doc, context=context)
    except ValidationError as exc:
        errors = [_as_yaml_error(e) for e in exc.errors()]
        raise InvalidFile(
            [
                Problem(name, line_of(doc, p.loc), p.path, p.message)
                for p in field_problems(errors, doc)
            ]
        ) from exc


def load_text(
    text: str,
    model: type[M],
    name: str,
    context: dict[str, Any] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> M:
    """Parse and validate YAML text named ``name`` (a file path or ``<request>``),
    refusing text of more than ``max_bytes`` UTF-8 bytes before parsing it."""
    # A str holds at most 4 UTF-8 bytes per character: skip encoding when it cannot be over.
    if len(text) * 4 > max_bytes:
        check_size(len(text.encode("utf-8", "surrogatepass")), name, max_bytes)
    return validate_document(parse_yaml(text, name), model, name, context)


def load_file(
    path: Path,
    model: type[M],
    context: dict[str, Any] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> M:
    """Parse and validate one YAML file."""
    return validate_document(
        parse_yaml(read_text(path, max_bytes), str(path)), model, str(path), context
    )


def load_folder(folder: Path, model: type[M]) -> list[M]:
    """Every ``*.yaml`` file of ``folder`` (not its subfolders) as ``model``, by file name;
    none when the folder does not exist (raises ``InvalidFile`` for a bad file)."""
    if not folder.is_dir():
        return []
    return [load_file(path, model) for path in sorted(folder.glob("*.yaml"))]
