"""One error vocabulary for every room: field paths, request errors, judge error kinds.

A problem with a request or a rubric is a :class:`FieldProblem` (the place, as users
write it, ``items[3].completion``, and what is wrong); a request-level refusal raised
below the server is a :class:`RequestError` carrying its kind and problems, which the
server turns into its protocol's error (an HTTP status and body) without parsing any
string. :func:`field_problems` is the one formatter of pydantic error locations, used by
the API, the engine and the YAML loader.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Self

JudgeErrorKind = Literal[
    "timeout",
    "connection",
    "rate_limited",
    "http_4xx",
    "http_5xx",
    "context_overflow",
    "unavailable",
    "unparseable",
    "deadline",
    "internal",
    "reasoning_budget",
    "grader_timeout",
    "grader_busy",
    "grader_failed",
]
"""Why a judge call (or a grader) produced no score: the ``error_kind`` of a failed
verdict. A grader's: ``grader_timeout`` (it ran past its time limit and was killed),
``grader_busy`` (no grader worker was free before the request's deadline: it never ran),
``grader_failed`` (it raised, refused its spec, or has no library); ``deadline`` when the
request's deadline or a shutdown cut it. ``reasoning_budget``: a reasoning judge whose
reply did not end its reasoning within its budget, so it has no answer to read."""

Loc = tuple[int | str, ...]


def format_path(loc: Iterable[int | str]) -> str:
    """A key path as users write it: ``criteria[2].weight``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def join_path(prefix: str, path: str) -> str:
    """``prefix`` followed by a relative ``path`` (``items[3]`` + ``prompt``)."""
    if not path:
        return prefix
    if not prefix or path.startswith("["):
        return prefix + path
    return f"{prefix}.{path}"


_RELATIVE = re.compile(r"^((?:\[\d+\]|\.?[a-z_][a-z0-9_]*)+): ")


def split_relative(message: str) -> tuple[Loc, str] | None:
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
        for p in re.findall(r"\[\d+\]|\.?[a-z_][a-z0-9_]*", match.group(1))
    )
    return parts, message[match.end() :]


@dataclass(frozen=True)
class FieldProblem:
    """What is wrong, and where: ``loc`` holds document keys only, ``path`` is its text."""

    loc: Loc
    message: str

    @property
    def path(self) -> str:
        """The place as users write it, ``criteria[2].weight`` (empty for the whole)."""
        return format_path(self.loc)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.loc else self.message


RequestErrorKind = Literal["invalid_request", "unknown_rubric", "budget_exceeded"]
"""What is wrong with a refused request, machine-readable: the ``error`` of its answer
(the server alone decides how that reads in its protocol, e.g. an HTTP status)."""


class RequestError(Exception):
    """A request that cannot be served as asked (raised below the server).

    ``kind`` is the machine-readable error (``invalid_request``, ``unknown_rubric``),
    ``problems`` the places at fault, with paths relative to the request body.
    """

    def __init__(self, kind: RequestErrorKind, problems: Sequence[FieldProblem]):
        self.kind: RequestErrorKind = kind
        self.problems = list(problems)
        super().__init__("; ".join(str(p) for p in self.problems))

    @classmethod
    def at(cls, path: Loc, message: str, kind: RequestErrorKind = "invalid_request") -> Self:
        """A request error with one problem at ``path``."""
        return cls(kind, [FieldProblem(path, message)])

    @property
    def field(self) -> str | None:
        """The first offending field's path, or None when the whole request is at fault."""
        return self.problems[0].path or None if self.problems else None


# ---------------------------------------------------------------- pydantic locations

_TYPE_TAGS: dict[str, type | tuple[type, ...]] = {
    "str": str,
    "int": int,
    "float": (int, float),
    "bool": bool,
    "none": type(None),
    "list": list,
    "dict": dict,
}
_MISSING = object()


def _is_tag(part: str) -> bool:
    """pydantic's names for union members and validators in a location (not document keys)."""
    return part in _TYPE_TAGS or "[" in part or part[:1].isupper() or part[:1] == "-"


def _tag_fits(tag: str, node: Any) -> bool:
    """Whether the union member ``tag`` is the one meant for the input ``node``."""
    # A validated model shows as "function-after[_validator(), Model]": the member is Model.
    if tag.startswith("function-") and tag.endswith("]"):
        tag = tag[:-1].rsplit(",", 1)[-1].strip()
    base = tag.split("[", 1)[0]
    if base in _TYPE_TAGS:
        if base == "int" and isinstance(node, bool):
            return False
        return isinstance(node, _TYPE_TAGS[base])
    if tag[:1].isupper():  # a model class name
        return isinstance(node, dict)
    return True  # other validator names: not a union choice


def _exists(doc: Any, loc: Loc) -> bool:
    node = doc
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    return True


def _message(error: Mapping[str, Any]) -> str:
    msg = str(error.get("msg", "invalid"))
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    if error.get("type") == "extra_forbidden":
        msg = "unknown field (not allowed here)"
    return msg


def _walk(loc: Sequence[Any], doc: Any) -> tuple[Loc, Loc | None, bool]:
    """(document keys of ``loc``, location of the union the error is in, whether the union
    member the error belongs to does not fit the input's type)."""
    node: Any = doc
    keys: list[int | str] = []
    union: Loc | None = None
    misfit = False
    for part in loc:
        if isinstance(part, int):
            keys.append(part)
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else _MISSING
        elif isinstance(node, dict) and part in node:
            keys.append(part)
            node = node[part]
        elif _is_tag(part):
            if union is None:
                union = tuple(keys)
                misfit = node is not _MISSING and not _tag_fits(part, node)
        else:
            keys.append(part)
            node = _MISSING
    return tuple(keys), union, misfit


def field_problems(
    errors: Iterable[Mapping[str, Any]], doc: Any, prefix: Loc = ()
) -> list[FieldProblem]:
    """pydantic ``errors()`` of validating ``doc`` as problems at document paths.

    Union members and validator names are dropped from locations; of a union's members,
    only the errors of the member meant for the input's type are kept (a rubric given as
    an object is not also "not a valid string"); a validator message naming a place
    relative to its own (``"[2].id: duplicate"``) points at that place when it exists.
    Paths are prefixed with ``prefix`` (``("items", 3)``).
    """
    located: list[tuple[Loc, Loc | None, bool, str]] = []
    for error in errors:
        loc, union, misfit = _walk(tuple(error.get("loc", ())), doc)
        msg = _message(error)
        relative = split_relative(msg)
        if relative is not None and (_exists(doc, (*loc, *relative[0])) or doc is None):
            loc, msg = (*loc, *relative[0]), relative[1]
        located.append((loc, union, misfit, msg))
    fitting = {u for _, u, misfit, _ in located if u is not None and not misfit}
    problems: list[FieldProblem] = []
    for loc, union, misfit, msg in located:
        if misfit and union in fitting:
            continue
        problem = FieldProblem((*prefix, *loc), msg)
        if problem not in problems:
            problems.append(problem)
    return problems
