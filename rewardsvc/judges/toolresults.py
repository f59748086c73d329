"""What an agentic judge's tools give and how it is shown: a tool's :class:`ToolOutput`, the
:class:`Tool` protocol the loop (``rewardsvc.judges.toolloop``) calls, and the loop's
:class:`Transcript` of :class:`Step` s.

A tool's output is untrusted (a program's output, a file the policy wrote): :func:`shown`
cuts it to its tool's bound (head and tail kept, the cut marked and flagged), sanitizes it
with the judge's defuser and fences it (``fencing.untrusted``), so that no text in it can
close its block, break a turn with a chat control token or pass for the grader's words,
and the text detectors' flags on it go to the transcript.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardsvc.judges.fencing import untrusted
from rewardsvc.safety import detectors
from rewardsvc.safety.defuse import Defuser

CUT_FLAG = "tool_output_cut"
"""The flag of a tool result longer than its tool's bound (it was cut)."""


@dataclass(frozen=True)
class ToolOutput:
    """What one tool call gave: its text (untrusted), whether it is an error, and the
    sandbox seconds it took."""

    text: str
    error: bool = False
    sandbox_s: float = 0.0


class Tool(Protocol):
    """A judge tool bound to one item: its name, OpenAI function ``schema``, the most
    characters of its output shown (``output_chars``), and ``run``."""

    @property
    def name(self) -> str:
        """The name the judge calls it by."""
        ...

    @property
    def output_chars(self) -> int:
        """The most characters of one output the judge is shown."""
        ...

    def schema(self) -> dict[str, Any]:
        """``{"type": "function", "function": {name, description, parameters}}``."""
        ...

    async def run(self, arguments: dict[str, Any], sandbox_s: float) -> ToolOutput:
        """The output of a call with ``arguments``, running at most ``sandbox_s`` seconds in
        the sandbox; a failure is an error output, never raised."""
        ...


@dataclass(frozen=True)
class Step:
    """One tool call of the transcript: what was called, what the judge was shown."""

    turn: int
    tool: str
    arguments: str
    shown: str
    error: bool
    flags: tuple[str, ...]
    sandbox_s: float

    def as_json(self) -> dict[str, Any]:
        """The step as explain shows it."""
        return {
            "turn": self.turn,
            "tool": self.tool,
            "arguments": self.arguments,
            "result": self.shown,
            "error": self.error,
            "flags": list(self.flags),
            "sandbox_s": round(self.sandbox_s, 3),
        }


@dataclass
class Transcript:
    """A loop so far: its steps, turns, tokens and sandbox seconds."""

    steps: list[Step] = field(default_factory=list)
    turns: int = 0
    calls: int = 0  # the judge requests sent: the turns, and a last one without a tool call
    prompt_tokens: int = 0
    completion_tokens: int = 0
    sandbox_s: float = 0.0

    @property
    def flags(self) -> tuple[str, ...]:
        """Every flag a tool result raised, once each."""
        return tuple(sorted({f for s in self.steps for f in s.flags}))

    def text(self) -> str:
        """The transcript as JSON (a verdict's ``raw``)."""
        steps = [s.as_json() for s in self.steps]
        return json.dumps({"turns": self.turns, "steps": steps, "flags": list(self.flags)})


def shown(
    tool: str, output: ToolOutput, limit: int, defuser: Defuser
) -> tuple[str, tuple[str, ...]]:
    """A tool result as the judge reads it, and its flags: cut to ``limit`` characters (its
    head and tail kept), sanitized and fenced; flagged by the text detectors."""
    text = output.text
    flags: list[str] = []
    if len(text) > limit:
        head, tail = text[: limit * 3 // 4], text[len(text) - limit // 4 :]
        text = (
            f"{head}\n[... {len(output.text) - len(head) - len(tail)} characters cut ...]\n{tail}"
        )
        flags.append(CUT_FLAG)
    flags.extend(detectors.flags_of(text))
    status = "an error" if output.error else "its output"
    content = f"Result of {tool} ({status}):\n{untrusted(text, 'output', defuser)}"
    return content, tuple(sorted(set(flags)))
