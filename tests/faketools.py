"""The fake judge's tool calling (tests/fakejudge.py): which scripted tool calls answer a
request, and the chat reply that makes them, in vLLM's shape."""

from __future__ import annotations

import json
import time
from collections import deque
from typing import Any


def next_tool_calls(
    turns: deque[list[tuple[str, Any]]], forever: tuple[str, Any] | None, body: dict[str, Any]
) -> list[tuple[str, Any]] | None:
    """The tool calls answering ``body``: the next of ``turns``, else ``forever``, else the
    tool a named ``tool_choice`` names; None (answer without any) for a request that offers
    no tools, or when none of those says one."""
    if not body.get("tools"):
        return None
    if turns:
        return turns.popleft()
    if forever is not None:
        return [forever]
    named = body.get("tool_choice")
    if isinstance(named, dict):
        return [(named["function"]["name"], {})]
    return None


def tool_reply(body: dict[str, Any], calls: list[tuple[str, Any]]) -> dict[str, Any]:
    """A chat reply whose message calls ``calls`` (vLLM's shape)."""
    tool_calls = [
        {
            "id": f"call_{k}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            },
        }
        for k, (name, arguments) in enumerate(calls)
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return {
        "id": "fake-tools",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }
