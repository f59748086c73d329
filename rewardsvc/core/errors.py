"""One error vocabulary for every room: field paths, request errors, judge error kinds.

A problem with a request or a rubric is a :class:`FieldProblem` (the place, as users
write it, ``items[3].completion``, and what is wrong); a refusal raised anywhere is a
:class:`ServiceError` (:class:`RequestError`, :class:`TooLarge`, :class:`Refused`,
:class:`Unavailable`) carrying its :class:`ErrorKind`, which each protocol of the server
renders from its own table keyed by kind (an HTTP status and body) without parsing any
string. :func:`field_problems` is the one formatter of pydantic error locations, used by
the API, the engine and the YAML loader.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal, Self

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
    "sandbox_timeout",
    "sandbox_memory",
    "sandbox_busy",
    "sandbox_unavailable",
    "sandbox_failed",
    "loop_turns",
    "loop_tool_calls",
    "loop_tokens",
    "loop_sandbox",
    "loop_wall",
]
"""Why a judge call (or a grader) produced no score: the ``error_kind`` of a failed
verdict. A grader's: ``grader_timeout`` (it ran past its time limit and was killed),
``grader_busy`` (no grader worker was free before the request's deadline: it never ran),
``grader_failed`` (it raised, refused its spec, or has no library); ``deadline`` when the
request's deadline or a shutdown cut it. A sandboxed run's (:data:`SandboxFailureKind`):
``sandbox_timeout`` (killed at its wall clock or CPU limit), ``sandbox_memory`` (it ran out
of its address space, or the kernel's OOM killer killed it), ``sandbox_busy`` (the sandbox's
queue was full, or it shut down: it never ran; or a busy host starved it: killed at its wall
clock having waited for a CPU longer than it ran), ``sandbox_unavailable`` (no working
sandbox backend: nothing ran, never unsandboxed), ``sandbox_failed`` (the sandbox itself
failed to start it).
``reasoning_budget``: a reasoning judge whose reply did not end its reasoning within its
budget, so it has no answer to read. An agentic judge's tool loop
(``rewardsvc.judges.toolloop``) that reached one of its limits before its verdict:
``loop_turns`` (it still called tools after its last turn), ``loop_tool_calls`` (more tool
calls than allowed), ``loop_tokens`` (its turns used more tokens than allowed),
``loop_sandbox`` (its tools used more sandbox seconds than allowed), ``loop_wall`` (it ran
past its wall time); each is no score, never 0."""

SandboxFailureKind = Literal[
    "sandbox_timeout", "sandbox_memory", "sandbox_busy", "sandbox_unavailable", "sandbox_failed"
]
"""Why a sandboxed run has no usable outcome: the subset of :data:`JudgeErrorKind` that a
grader running code reports as its error kind (no score, never 0)."""

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


def placed(prefix: Loc, problems: Iterable[FieldProblem]) -> str:
    """``problems`` as one message, each placed under ``prefix``: a rejected item's
    problems (relative to the item) as the request names them, ``items[3].reference: ...``."""
    return "; ".join(str(FieldProblem((*prefix, *p.loc), p.message)) for p in problems)


class ErrorKind(StrEnum):
    """Why the service refuses a request, machine-readable: the ``error`` of its answer.

    Each protocol renders a kind its own way from one table per protocol (the server's
    ``STATUS_OF_KIND`` for HTTP, ORS's beside it; the trainer routes' bodies): code below
    the server raises a :class:`ServiceError` carrying its kind and never names a status.
    """

    INVALID_REQUEST = "invalid_request"
    INVALID_JSON = "invalid_json"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    UNKNOWN_RUBRIC = "unknown_rubric"
    UNKNOWN_ENVIRONMENT = "unknown_environment"
    UNKNOWN_SESSION = "unknown_session"
    NOT_FOUND = "not_found"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    TOO_MANY_ITEMS = "too_many_items"
    TOO_MUCH_WORK = "too_much_work"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    BUDGET_EXCEEDED = "budget_exceeded"
    OVERLOADED = "overloaded"
    TOO_MANY_SESSIONS = "too_many_sessions"
    SHUTTING_DOWN = "shutting_down"
    JUDGE_ERROR = "judge_error"
    UNAVAILABLE = "unavailable"
    INTERNAL_ERROR = "internal_error"


class ServiceError(Exception):
    """A request the service refuses: its :class:`ErrorKind`, a message for people, the
    field at fault (as users write it, ``items[3].completion``, or a header or limit name)
    and, for a refusal that passes, the seconds to wait before retrying.

    The tree says what the client can do: fix the request (:class:`RequestError`, of which
    :class:`TooLarge`: split it), get the right (:class:`Refused`), or retry later
    (:class:`Unavailable`). Each class takes only its own kinds (``KINDS``, the first the
    default); the kind alone decides the answer's status.
    """

    KINDS: ClassVar[tuple[ErrorKind, ...]] = (ErrorKind.INTERNAL_ERROR,)

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind | None = None,
        field: str | None = None,
        retry_after: int | None = None,
    ):
        kind = kind or self.KINDS[0]
        if kind not in self.KINDS:
            raise ValueError(f"{type(self).__name__} is not raised as {kind}")
        super().__init__(message)
        self.kind = kind
        self.field = field
        self.retry_after = retry_after

    @property
    def message(self) -> str:
        """What is wrong, for people."""
        return str(self)


class RequestError(ServiceError):
    """A request that cannot be served as sent: its ``problems`` name the places at fault
    (paths relative to the request body), the first is the ``field``."""

    KINDS: ClassVar[tuple[ErrorKind, ...]] = (
        ErrorKind.INVALID_REQUEST,
        ErrorKind.INVALID_JSON,
        ErrorKind.UNSUPPORTED_MEDIA_TYPE,
        ErrorKind.UNKNOWN_RUBRIC,
        ErrorKind.UNKNOWN_ENVIRONMENT,
        ErrorKind.UNKNOWN_SESSION,
        ErrorKind.NOT_FOUND,
    )

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind | None = None,
        field: str | None = None,
        problems: Sequence[FieldProblem] = (),
    ):
        super().__init__(message, kind=kind, field=field)
        # A problem's loc holds document keys: a written field is one key, whole.
        self.problems = list(problems) or [FieldProblem((field,) if field else (), message)]

    @classmethod
    def of(cls, problems: Sequence[FieldProblem], kind: ErrorKind | None = None) -> Self:
        """A request error for ``problems``: all of them in the message, the first's path
        as the field."""
        message = "; ".join(str(p) for p in problems)
        field = problems[0].path or None if problems else None
        return cls(message, kind=kind, field=field, problems=problems)

    @classmethod
    def at(cls, path: Loc, message: str, kind: ErrorKind | None = None) -> Self:
        """A request error with one problem at ``path``."""
        return cls.of([FieldProblem(path, message)], kind)


class TooLarge(RequestError):
    """A request larger than one of the service's limits (the field names the limit, or
    the largest part): split it or send less."""

    KINDS: ClassVar[tuple[ErrorKind, ...]] = (
        ErrorKind.PAYLOAD_TOO_LARGE,
        ErrorKind.TOO_MANY_ITEMS,
        ErrorKind.TOO_MUCH_WORK,
    )


class Refused(ServiceError):
    """A request its API key may not make, or a run that spent its budget: retrying the
    same request cannot help until an operator changes the key or the budget."""

    KINDS: ClassVar[tuple[ErrorKind, ...]] = (
        ErrorKind.FORBIDDEN,
        ErrorKind.UNAUTHORIZED,
        ErrorKind.BUDGET_EXCEEDED,
    )


class Unavailable(ServiceError):
    """A request the service cannot serve now (full, draining, judges down): retry after
    ``retry_after`` seconds."""

    KINDS: ClassVar[tuple[ErrorKind, ...]] = (
        ErrorKind.OVERLOADED,
        ErrorKind.TOO_MANY_SESSIONS,
        ErrorKind.SHUTTING_DOWN,
        ErrorKind.JUDGE_ERROR,
        ErrorKind.UNAVAILABLE,
    )


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
