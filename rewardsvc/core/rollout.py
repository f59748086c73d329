"""A Rollout: the text of one item, normalized for judging and caching.

Chat messages are rendered to a plain transcript here, once, so that prompts,
cache keys and detectors all see the same text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from rewardsvc.server.wire import Item, Message


def _content(message: Message) -> str:
    if isinstance(message.content, str):
        return message.content
    if message.content is None:
        return ""
    return "".join(str(p.get("text", "")) for p in message.content if p.get("type") == "text")


def render_text(value: str | list[Message]) -> str:
    """A string as is; chat messages as a ``role: text`` transcript (text parts only)."""
    if isinstance(value, str):
        return value
    return "\n".join(f"{m.role}: {_content(m)}" for m in value)


def render_completion(value: str | list[Message]) -> str:
    """Like ``render_text``, but a reply made only of assistant messages is its bare text.

    Judges and detectors must see the same answer whether a trainer sent it as a
    string or as a chat message: a role prefix would hide a bare ``:`` master key.
    """
    if isinstance(value, list) and all(m.role == "assistant" for m in value):
        return "\n\n".join(_content(m) for m in value)
    return render_text(value)


@dataclass(frozen=True)
class Rollout:
    """Prompt, completion and optional reference as text; all of it is untrusted."""

    prompt: str
    completion: str
    reference: str | None = None

    @classmethod
    def from_item(cls, item: Item) -> Rollout:
        """Normalize a wire item."""
        return cls(render_text(item.prompt), render_completion(item.completion), item.reference)

    def digest(self) -> str:
        """Content hash, for cache keys and in-flight deduplication."""
        h = hashlib.sha256()
        for part in (self.prompt, self.completion, self.reference):
            data = b"\x00" if part is None else b"\x01" + part.encode()
            h.update(len(data).to_bytes(8, "big") + data)
        return h.hexdigest()
