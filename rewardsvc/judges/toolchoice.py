"""How each turn of an agentic judge's loop asks for tool calls, and reads them back.

A :class:`ToolChoice` gives turn by turn: its ``named`` tools first (one forced call each),
then up to ``auto`` turns where the judge chooses (``tool_choice: "auto"``, which vLLM
serves only with ``--enable-auto-tool-choice`` and a tool parser), then no more turns.

A named call is forced by a :class:`Forcing` strategy. :data:`BY_TOOL_CHOICE` sends the
OpenAI form (``tools`` and a named ``tool_choice``) and reads the reply's ``tool_calls``;
vLLM 0.32 serves it only with a ``--tool-call-parser``. :data:`BY_SCHEMA` asks for the
tool's arguments as the reply itself, constrained by the tool's parameter schema
(``structured_outputs.json``: what vLLM does inside for a named tool choice), so that a
judge served without any tool flags (the small CPU judges) still calls the tool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from rewardsvc.judges.shapes import Reply, choices


@dataclass(frozen=True)
class Asked:
    """One tool call a judge asked for: its id, tool name and raw arguments."""

    id: str
    name: str
    arguments: str


def tool_calls(reply: Reply) -> list[Asked]:
    """The tool calls of a chat reply's first choice (malformed entries dropped)."""
    message = choices(reply)[0].get("message")
    found = message.get("tool_calls") if isinstance(message, dict) else None
    out: list[Asked] = []
    for n, entry in enumerate(found if isinstance(found, list) else []):
        function = entry.get("function") if isinstance(entry, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        arguments = function.get("arguments")
        call_id = entry.get("id")
        out.append(
            Asked(
                call_id[:64] if isinstance(call_id, str) and call_id else f"call_{n}",
                function["name"][:64],
                arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
        )
    return out


class Forcing(Protocol):
    """How a named tool call is forced."""

    def fields(self, schema: dict[str, Any], schemas: list[dict[str, Any]]) -> dict[str, Any]:
        """The request fields forcing the tool of ``schema`` (``schemas``: every tool's)."""
        ...

    def note(self, name: str) -> str | None:
        """A line telling the judge to call ``name`` now, when the request does not say it."""
        ...

    def read(self, reply: Reply, name: str, turn: int) -> list[Asked]:
        """The call of ``name`` in ``reply`` (turn ``turn``)."""
        ...


class _ByToolChoice:
    """``tools`` and a named ``tool_choice``; the reply's ``tool_calls``."""

    def fields(self, schema: dict[str, Any], schemas: list[dict[str, Any]]) -> dict[str, Any]:
        """Every tool offered, the named one chosen."""
        named = {"type": "function", "function": {"name": schema["function"]["name"]}}
        return {"tools": schemas, "tool_choice": named}

    def note(self, name: str) -> str | None:
        """None: the request names the tool."""
        return None

    def read(self, reply: Reply, name: str, turn: int) -> list[Asked]:
        """The reply's tool calls."""
        return tool_calls(reply)


class _BySchema:
    """The tool's arguments as the reply, constrained by its parameter schema."""

    def fields(self, schema: dict[str, Any], schemas: list[dict[str, Any]]) -> dict[str, Any]:
        """``structured_outputs.json``: the tool's parameters; for a tool without any, the
        one answer ``{}`` (a choice: the whitespace a JSON grammar allows filled a small
        judge's budget, even with ``disable_any_whitespace``, on vLLM 0.32)."""
        parameters = schema["function"]["parameters"]
        if not parameters.get("properties"):
            return {"structured_outputs": {"choice": ["{}"]}}
        return {"structured_outputs": {"json": parameters, "disable_any_whitespace": True}}

    def note(self, name: str) -> str | None:
        """Call ``name`` now: its arguments as one JSON object."""
        return f"Call the tool {name} now: reply with its arguments as one JSON object."

    def read(self, reply: Reply, name: str, turn: int) -> list[Asked]:
        """The reply's text as the arguments of one call of ``name``."""
        message = choices(reply)[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        text = content if isinstance(content, str) else ""
        return [Asked(f"call_{turn}", name, text)]


BY_TOOL_CHOICE: Forcing = _ByToolChoice()
BY_SCHEMA: Forcing = _BySchema()
FORCINGS: dict[str, Forcing] = {"tool_choice": BY_TOOL_CHOICE, "schema": BY_SCHEMA}
"""The strategy of each ``forcing`` setting of a judge's ``tools`` (``core.judge_tools``)."""


@dataclass(frozen=True)
class Turn:
    """One turn's request fields, the line the judge is told first (if any), and how its
    calls are read."""

    fields: dict[str, Any]
    note: str | None
    named: str | None
    forcing: Forcing


@dataclass(frozen=True)
class ToolChoice:
    """The tool choice of each turn: ``named`` tools first, one forced call each (forced
    ``forcing``'s way), then up to ``auto`` turns where the judge chooses."""

    named: tuple[str, ...] = ()
    auto: int = 3
    forcing: Forcing = BY_TOOL_CHOICE

    def of(self, turn: int, schemas: dict[str, dict[str, Any]]) -> Turn | None:
        """Turn ``turn`` (0-based) over the tools' ``schemas`` by name; None when there is no
        such turn. A named tool that is not offered is a ``ValueError``."""
        offered = list(schemas.values())
        if turn < len(self.named):
            name = self.named[turn]
            if name not in schemas:
                raise ValueError(f"tool_choice: {name!r} is not one of the judge's tools")
            fields = self.forcing.fields(schemas[name], offered)
            return Turn(fields, self.forcing.note(name), name, self.forcing)
        if turn < len(self.named) + self.auto:
            return Turn({"tools": offered, "tool_choice": "auto"}, None, None, BY_TOOL_CHOICE)
        return None

    def read(self, spec: Turn, reply: Reply, turn: int) -> list[Asked]:
        """The calls ``reply`` asks for in turn ``turn`` asked as ``spec``."""
        if spec.named is None:
            return tool_calls(reply)
        return spec.forcing.read(reply, spec.named, turn)
