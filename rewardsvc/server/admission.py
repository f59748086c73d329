"""The work a request plans, checked before it is admitted (413 naming the limit).

The service calls these once per request: the rubric's size (criteria, judges), the
judge calls, prompt bytes and sandbox seconds its plan costs (counted by the plan itself:
the application plans, the server checks, then the same plan runs), and an inline
rubric's or recipe's size.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from rewardsvc.core.errors import ErrorKind, TooLarge
from rewardsvc.core.rubric import Rubric
from rewardsvc.sandbox.waiting import WALL_CAP
from rewardsvc.server.ledger import Ledger
from rewardsvc.settings import Settings


def check_work(settings: Settings, calls: int, prompt_bytes: int, sandbox_s: float = 0.0) -> None:
    """413 when a request's planned judge calls exceed max_inflight_calls, their
    ``prompt_bytes`` exceed max_prompt_bytes_per_request or its code graders' runs
    (``sandbox_s``, each run's wall-clock limit) at the busy host's cap (``WALL_CAP`` times:
    a run starved of CPU may run that long, :mod:`rewardsvc.sandbox.waiting`) exceed
    max_sandbox_seconds."""
    capped = sandbox_s * WALL_CAP
    if capped > settings.max_sandbox_seconds:
        raise TooLarge(
            f"the request plans {sandbox_s:g} s of sandboxed runs (each run's wall_s), "
            f"{capped:g} s at the busy host's cap of {WALL_CAP:g} times, more than "
            f"max_sandbox_seconds={settings.max_sandbox_seconds:g}; split it",
            kind=ErrorKind.TOO_MUCH_WORK,
            field="max_sandbox_seconds",
        )
    bound = settings.max_prompt_bytes_per_request
    if prompt_bytes > bound:
        raise TooLarge(
            f"the request plans {prompt_bytes} bytes of judge prompts over {calls} calls, "
            f"more than max_prompt_bytes_per_request={bound}; split it",
            kind=ErrorKind.TOO_MUCH_WORK,
            field="max_prompt_bytes_per_request",
        )
    if calls > settings.max_inflight_calls:
        raise TooLarge(
            f"the request plans {calls} judge calls, more than "
            f"max_inflight_calls={settings.max_inflight_calls}; split it",
            kind=ErrorKind.TOO_MUCH_WORK,
            field="max_inflight_calls",
        )


def check_explain(settings: Settings, prompt_bytes: int) -> None:
    """413 naming ``options.explain`` when a request asks to see more prompt bytes than
    max_explain_bytes (explain returns every prompt it plans)."""
    if prompt_bytes > settings.max_explain_bytes:
        raise TooLarge(
            f"options.explain would return {prompt_bytes} bytes of judge prompts, more than "
            f"max_explain_bytes={settings.max_explain_bytes}; explain fewer items",
            kind=ErrorKind.TOO_MUCH_WORK,
            field="options.explain",
        )


@contextlib.contextmanager
def explaining(ledger: Ledger, explain: bool, prompt_bytes: int) -> Iterator[None]:
    """Explain's output (at most the ``prompt_bytes`` planned) held in ``ledger`` until the
    answer is sent, as held work (nothing is held when ``explain`` is off)."""
    if not explain:
        yield
        return
    held = ledger.hold(prompt_bytes, "the explain output", "options.explain")
    try:
        yield
    finally:
        held.release()


def check_rubric_size(settings: Settings, rubric: Rubric) -> None:
    """413 when ``rubric`` exceeds the limits of criteria or judges per rubric."""
    limits = (
        ("max_criteria", len(rubric.criteria), settings.max_criteria, "criteria"),
        ("max_judges", len(rubric.judges), settings.max_judges, "judges"),
    )
    for name, count, limit, part in limits:
        if count > limit:
            raise TooLarge(
                f"the rubric has {count} {part}, more than {name}={limit}",
                kind=ErrorKind.TOO_MUCH_WORK,
                field=f"rubric.{part}",
            )


def check_inline_size(doc: Any, limit: int, where: str = "rubric") -> None:
    """413 when an inline rubric or recipe (``doc``, its JSON form) is larger than ``limit``
    bytes (``max_rubric_bytes``, as for a library file), naming its largest text field:
    the bound on the whole bounds ``instructions`` and every other free-text field."""
    size = len(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode())
    if size <= limit:
        return
    path, longest = _largest_text(doc, where)
    raise TooLarge(
        f"the inline {where} is {size} bytes as JSON, more than max_rubric_bytes={limit}; "
        f"its largest field {path} is {longest} bytes",
        kind=ErrorKind.PAYLOAD_TOO_LARGE,
        field=path,
    )


def _largest_text(doc: Any, path: str) -> tuple[str, int]:
    """The path of the longest string in ``doc`` and its UTF-8 size."""
    if isinstance(doc, str):
        return path, len(doc.encode())
    if isinstance(doc, dict):
        parts = [_largest_text(v, f"{path}.{k}") for k, v in doc.items()]
    elif isinstance(doc, list):
        parts = [_largest_text(v, f"{path}[{n}]") for n, v in enumerate(doc)]
    else:
        return path, 0
    return max(parts, key=lambda p: p[1], default=(path, 0))
