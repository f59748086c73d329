"""A Rollout: the text of one item, normalized for judging and caching.

Chat messages are rendered to a plain transcript here, once, so that prompts,
cache keys and detectors all see the same text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from rewardsvc.protocol import Item, Message


def render_text(value: str | list[Message]) -> str:
    """A string as is; chat messages as a ``role: text`` transcript (text parts only)."""
    if isinstance(value, str):
        return value
    lines = []
    for m in value:
        if isinstance(m.content, str):
            text = m.content
        elif m.content is None:
            text = ""
        else:
            text = "".join(str(p.get("text", "")) for p in m.content if p.get("type") == "text")
        lines.append(f"{m.role}: {text}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Rollout:
    """Prompt, completion and optional reference as text; all of it is untrusted."""

    prompt: str
    completion: str
    reference: str | None = None

    @classmethod
    def from_item(cls, item: Item) -> Rollout:
        """Normalize a wire item."""
        return cls(render_text(item.prompt), render_text(item.completion), item.reference)

    def digest(self) -> str:
        """Content hash, for cache keys and in-flight deduplication."""
        h = hashlib.sha256()
        for part in (self.prompt, self.completion, self.reference):
            data = b"\x00" if part is None else b"\x01" + part.encode()
            h.update(len(data).to_bytes(8, "big") + data)
        return h.hexdigest()
