"""Agent trajectories: what the policy did, step by step, as typed data, and its views.

A :class:`Trajectory` is the task (what came before the policy acted: system and user
messages, earlier turns) and the policy's events: messages, reasoning summaries, tool
calls (id, name, arguments) and tool results tied to the call they answer. Non-text
content (an image, audio, a file) is never dropped silently: it stays in place as a
placeholder text and raises the ``non_text_part`` flag.

Steps: an assistant *step* starts at an assistant event (message, reasoning or tool call)
that follows anything else; the tool results of its calls belong to it. Steps are
numbered from 0 over the policy's events only (the task is context, not graded).

Views say what a judge sees of the policy's events:

* ``final``: the last assistant message (the answer);
* ``trace``: every step, with its messages, calls and results;
* ``tools``: only the tool calls and their results.

A view is rendered to :class:`Segment`\\ s: a header written here (trusted: it names
what the block is, never quotes the policy) and a body (untrusted: the prompt builders
fence each body on its own, so no part can close another's fence or fake a step).

Fitting policy (``fit``), deterministic and flagged (``trajectory_cut``), never silent:

1. every body longer than a quarter of the budget keeps its first two thirds and last
   third of that quarter; its header says how many characters were cut;
2. the task keeps its first segment and as many of its last segments as fit half the
   budget; the segments in between are replaced by a note;
3. the policy's events keep the last step whole (it holds the final answer, or the
   step being graded), then as many earlier steps as fit, newest first; the oldest
   steps that do not fit are replaced by one note naming them and what they held.

The events and their grouping into steps are in ``trajectory_events``. Pure: no I/O. The
server reads wire items into events (``rewardsvc.application.items``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from rewardsvc.core.rubric import View
from rewardsvc.core.trajectory_events import Event, call_numbers, split_steps

NON_TEXT_FLAG = "non_text_part"
CUT_FLAG = "trajectory_cut"
NOTE_FLAGS: tuple[str, ...] = (NON_TEXT_FLAG, CUT_FLAG)
"""Flags a trajectory itself raises (beside the detectors' flags)."""

DEFAULT_FIT_CHARS = 4_000
"""Characters of headers and bodies a view may take when the caller gives no budget:
sized for the small local judges (2048-token context) after the rubric and question."""

_MIN_PART_CHARS = 200
_KNOWN_ROLES = ("system", "developer", "user", "assistant", "tool")


def step_key(criterion_id: str, step: int) -> str:
    """The breakdown key of a criterion scored at one step (``@`` is not in criterion ids)."""
    return f"{criterion_id}@step{step}"


@dataclass(frozen=True)
class Segment:
    """One rendered part: a trusted ``header`` and an untrusted ``body`` to fence under
    ``label``; an empty label marks a note with no body (written by the fitting)."""

    header: str
    label: str
    body: str = ""


@dataclass(frozen=True)
class Rendered:
    """A view of a trajectory, ready for the prompt: task and graded segments."""

    task: tuple[Segment, ...]
    body: tuple[Segment, ...]
    cut: bool = False


@dataclass(frozen=True)
class Trajectory:
    """The task and the policy's events (see the module docstring)."""

    task: tuple[Event, ...]
    events: tuple[Event, ...]
    _steps: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_steps", split_steps(self.events))

    @property
    def rich(self) -> bool:
        """Whether anything here is more than role and text (calls, results, reasoning,
        non-text parts, unusual roles): only then does a judge need the structured view."""
        return any(
            e.kind != "message" or e.non_text or e.role not in ("system", "user", "assistant")
            for e in (*self.task, *self.events)
        )

    @property
    def step_count(self) -> int:
        """Number of assistant steps of the policy."""
        return len(self._steps)

    def notes(self) -> tuple[str, ...]:
        """Flags raised by the trajectory's content (``non_text_part``)."""
        return (NON_TEXT_FLAG,) if any(e.non_text for e in (*self.task, *self.events)) else ()

    def upto(self, step: int) -> Trajectory:
        """The trajectory cut after assistant step ``step`` (0-based), its results kept."""
        if not 0 <= step < len(self._steps):
            raise IndexError(f"step {step} of a trajectory with {len(self._steps)} steps")
        last = self._steps[step][-1]
        return Trajectory(self.task, self.events[: last + 1])

    def final_text(self) -> str | None:
        """The text of the last assistant message, or None when the policy wrote none."""
        for e in reversed(self.events):
            if e.kind == "message" and e.role == "assistant":
                return e.text
        return None

    def fingerprint(self) -> str:
        """A hash of the whole content, for cache keys."""
        data = [
            [e.kind, e.role, e.text, e.call_id, e.non_text]
            + ([e.call.name, e.call.arguments, e.call.id] if e.call else [])
            for part in (self.task, self.events)
            for e in (*part, None)
            if e is not None
        ]
        marks = [len(self.task), len(self.events)]
        text = json.dumps([marks, data], ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def render(self, view: View, budget: int = DEFAULT_FIT_CHARS) -> Rendered:
        """``view`` as segments fitted to ``budget`` characters (see the fitting policy)."""
        numbers = call_numbers((*self.task, *self.events))
        cap = max(_MIN_PART_CHARS, budget // 4)
        first = [_segment(e, numbers.get(i), None) for i, e in enumerate(self.task)]
        task, task_cut = _fit_task(first, budget, cap)
        if view == "final":
            text = self.final_text()
            if text is None:
                body = [Segment("The assistant wrote no final message.", "")]
            else:
                body = [Segment("The assistant's final message:", "response", text)]
            groups = [body]
        else:
            groups = []
            for n, indices in enumerate(self._steps):
                at = len(self.task)
                groups.append(
                    [
                        _segment(self.events[i], numbers.get(at + i), n)
                        for i in indices
                        if view == "trace" or self.events[i].kind in ("call", "result")
                    ]
                )
            if view == "tools" and not any(groups):
                groups = [[Segment("The assistant made no tool calls.", "")]]
        clipped = [[_clip(s, cap) for s in g] for g in groups]
        cut = task_cut or any(
            s is not o
            for g, og in zip(clipped, groups, strict=True)
            for s, o in zip(g, og, strict=True)
        )
        kept, dropped = _fit_steps(clipped, budget - _size(task))
        body_segments: list[Segment] = []
        if dropped:
            cut = True
            body_segments.append(_drop_note(dropped, groups, len(groups)))
        for g in kept:
            body_segments.extend(g)
        return Rendered(tuple(task), tuple(body_segments), cut)

    def plain(self, part: Literal["task", "events"] = "events") -> str:
        """The task or the policy's events as plain text, every part in full.

        Message-only text renders as before trajectories existed (``role: text`` lines;
        the policy's assistant-only reply as its bare text), so that detectors, cache keys
        and old prompts see the same bytes; anything richer as one line per event.
        """
        events = self.task if part == "task" else self.events
        if (
            part == "events"
            and events
            and all(e.kind == "message" and e.role == "assistant" for e in events)
        ):
            return "\n\n".join(e.text for e in events)
        numbers = call_numbers((*self.task, *self.events))
        at = 0 if part == "task" else len(self.task)
        return "\n".join(_plain_line(e, numbers.get(at + i)) for i, e in enumerate(events))


def _segment(e: Event, number: int | None, step: int | None) -> Segment:
    where = "" if step is None else f"Step {step + 1}, "
    if e.kind == "call" and e.call is not None:
        body = f"name: {e.call.name}\narguments: {e.call.arguments}"
        if e.call.id is not None:
            body += f"\nid: {e.call.id}"
        return Segment(f"{where}tool call {number} (name and arguments):", "call", body)
    if e.kind == "result":
        if number is None:
            head = f"{where}a tool result that answers no call shown (its call id: see below):"
            body = f"call id: {e.call_id}\n{e.text}" if e.call_id is not None else e.text
            return Segment(head, "result", body)
        return Segment(f"{where}result of tool call {number}:", "result", e.text)
    if e.kind == "reasoning":
        return Segment(f"{where}the assistant's reasoning summary:", "reasoning", e.text)
    if e.role in _KNOWN_ROLES:
        article = "an" if e.role == "assistant" else "a"
        return Segment(f"{where}{article} {e.role} message:", e.role, e.text)
    return Segment(f"{where}a message (its role first):", "message", f"role: {e.role}\n{e.text}")


def _plain_line(e: Event, number: int | None) -> str:
    if e.kind == "call" and e.call is not None:
        return f"assistant: [tool call {number}] {e.call.name}({e.call.arguments})"
    if e.kind == "result":
        if number:
            return f"tool: [result of tool call {number}] {e.text}"
        if e.call_id:
            return f"tool: [tool result for {e.call_id}] {e.text}"
        # A tool message tied to no call reads as it always did in a plain transcript.
        return f"tool: {e.text}"
    if e.kind == "reasoning":
        return f"assistant: [reasoning] {e.text}"
    return f"{e.role}: {e.text}"


def _size(segments: Sequence[Segment]) -> int:
    # A fence adds two bars, a label and newlines: about 16 characters per body.
    return sum(len(s.header) + len(s.body) + 16 for s in segments)


def _clip(s: Segment, cap: int) -> Segment:
    if len(s.body) <= cap:
        return s
    head = cap * 2 // 3
    tail = cap - head
    cut = len(s.body) - head - tail
    header = (
        f"{s.header[:-1]} (characters {head + 1}-{head + cut} of {len(s.body)} cut to fit "
        "the judge's context):"
    )
    return Segment(header, s.label, s.body[:head] + "\n" + s.body[len(s.body) - tail :])


def _fit_task(segments: list[Segment], budget: int, cap: int) -> tuple[list[Segment], bool]:
    clipped = [_clip(s, cap) for s in segments]
    cut = any(c is not s for c, s in zip(clipped, segments, strict=True))
    if len(clipped) <= 2 or _size(clipped) <= budget // 2:
        return clipped, cut
    kept_tail: list[Segment] = []
    room = budget // 2 - _size(clipped[:1])
    for s in reversed(clipped[1:]):
        if _size([s]) > room and kept_tail:
            break
        kept_tail.insert(0, s)
        room -= _size([s])
    dropped = len(clipped) - 1 - len(kept_tail)
    if dropped == 0:
        return clipped, cut
    note = Segment(f"[{dropped} earlier task messages cut to fit the judge's context]", "")
    return [clipped[0], note, *kept_tail], True


def _fit_steps(
    groups: list[list[Segment]], room: int
) -> tuple[list[list[Segment]], list[list[Segment]]]:
    if not groups:
        return [], []
    kept = [groups[-1]]
    room -= _size(groups[-1]) + 120  # the note about cut steps, if one is needed
    for g in reversed(groups[:-1]):
        if _size(g) > room:
            break
        kept.insert(0, g)
        room -= _size(g)
    return kept, groups[: len(groups) - len(kept)]


def _drop_note(dropped: list[list[Segment]], groups: list[list[Segment]], total: int) -> Segment:
    n = len(dropped)
    calls = sum(1 for g in groups[:n] for s in g if s.label == "call")
    chars = sum(len(s.body) for g in groups[:n] for s in g)
    which = "step 1" if n == 1 else f"steps 1-{n}"
    return Segment(
        f"[{which} of {total} cut to fit the judge's context: {calls} tool calls, "
        f"{chars} characters]",
        "",
    )
