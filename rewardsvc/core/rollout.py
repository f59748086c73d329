"""A Rollout: the text of one item, normalized for judging and caching.

Chat messages are rendered to a plain transcript here, once, so that prompts,
cache keys and detectors all see the same text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rewardsvc.core.rubric import JudgeRule


class Message(Protocol):
    """A chat message as the wire models hold it: a role and text or content parts."""

    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str | list[dict[str, Any]] | None: ...


def _content(message: Message) -> str:
    if isinstance(message.content, str):
        return message.content
    if message.content is None:
        return ""
    return "".join(str(p.get("text", "")) for p in message.content if p.get("type") == "text")


def render_text(value: str | Sequence[Message]) -> str:
    """A string as is; chat messages as a ``role: text`` transcript (text parts only)."""
    if isinstance(value, str):
        return value
    return "\n".join(f"{m.role}: {_content(m)}" for m in value)


def render_completion(value: str | Sequence[Message]) -> str:
    """Like ``render_text``, but a reply made only of assistant messages is its bare text.

    Judges and detectors must see the same answer whether a trainer sent it as a
    string or as a chat message: a role prefix would hide a bare ``:`` master key.
    """
    if not isinstance(value, str) and all(m.role == "assistant" for m in value):
        return "\n\n".join(_content(m) for m in value)
    return render_text(value)


@dataclass(frozen=True)
class Rollout:
    """Prompt, completion and optional reference as text; all of it is untrusted."""

    prompt: str
    completion: str
    reference: str | None = None

    def digest(self) -> str:
        """Content hash, for cache keys and in-flight deduplication."""
        h = hashlib.sha256()
        for part in (self.prompt, self.completion, self.reference):
            data = b"\x00" if part is None else b"\x01" + part.encode()
            h.update(len(data).to_bytes(8, "big") + data)
        return h.hexdigest()


@dataclass(frozen=True)
class ItemIn:
    """One item of a batch as the engine receives it: its id and its rollout, or, for an
    item the server could not read, the reason it is rejected."""

    id: str
    rollout: Rollout | None
    error: str | None = None


@dataclass(frozen=True)
class ScoreOptions:
    """Per-request overrides of a rubric's settings (``None``: the rubric's own)."""

    judges: tuple[str, ...] | None = None
    rule: JudgeRule | None = None
    min_judges: int | None = None
    use_cache: bool = True
