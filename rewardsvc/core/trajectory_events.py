"""A trajectory's events as typed data, and how they group: steps, and which call each
tool result answers.

An :class:`Event` is a message, a reasoning summary, a tool call (:class:`ToolCall`) or a
tool result; non-text content stands in a message as a :func:`placeholder`. The
trajectory built of them, its views and their fitting are in ``trajectory``.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

EventKind = Literal["message", "reasoning", "call", "result"]


def placeholder(kind: str) -> str:
    """The text that stands for a non-text content part (``kind``: image, audio, ...)."""
    safe = "".join(ch for ch in kind.lower() if ch.isalnum() or ch in "_-")[:40] or "unknown"
    return f"[{safe} content omitted: the judge reads text only]"


@dataclass(frozen=True)
class ToolCall:
    """One tool call: its name and arguments as the policy wrote them, and its id."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class Event:
    """One event of a trajectory.

    ``message``: ``role`` and ``text`` (text parts joined, placeholders in place);
    ``reasoning``: a reasoning summary's text; ``call``: ``call``; ``result``: the tool's
    output in ``text`` and ``call_id``, the id of the call it answers.
    """

    kind: EventKind
    role: str = "assistant"
    text: str = ""
    call: ToolCall | None = None
    call_id: str | None = None
    non_text: int = 0

    @property
    def by_assistant(self) -> bool:
        """Whether the policy produced this event (not a tool, user or system)."""
        return self.kind in ("reasoning", "call") or (
            self.kind == "message" and self.role == "assistant"
        )


def split_steps(events: Sequence[Event]) -> tuple[tuple[int, ...], ...]:
    """The positions of each step's events: a step starts at an assistant event that
    follows anything else, and holds the results of its own calls."""
    steps: list[list[int]] = []
    open_calls: dict[str, int] = {}
    previous_by_assistant = False
    for i, e in enumerate(events):
        if e.by_assistant:
            if not previous_by_assistant or not steps:
                steps.append([])
            steps[-1].append(i)
            if e.call is not None and e.call.id is not None:
                open_calls[e.call.id] = len(steps) - 1
        elif e.kind == "result" and e.call_id in open_calls:
            steps[open_calls[e.call_id]].append(i)
        elif steps:
            steps[-1].append(i)
        previous_by_assistant = e.by_assistant
    return tuple(tuple(sorted(s)) for s in steps)


def call_numbers(events: Sequence[Event]) -> dict[int, int]:
    """By position: each call's number (1-based, in order) and, for each result, the
    number of the call it answers: by id, or, without ids, the oldest call unanswered."""
    numbers: dict[int, int] = {}
    by_id: dict[str, int] = {}
    unanswered: list[int] = []
    count = 0
    for i, e in enumerate(events):
        if e.kind == "call" and e.call is not None:
            count += 1
            numbers[i] = count
            if e.call.id is not None:
                by_id.setdefault(e.call.id, count)
            unanswered.append(count)
        elif e.kind == "result":
            if e.call_id is not None and e.call_id in by_id:
                number = by_id[e.call_id]
            elif e.call_id is None and unanswered:
                number = unanswered[0]
            else:
                continue
            numbers[i] = number
            if number in unanswered:
                unanswered.remove(number)
    return numbers
