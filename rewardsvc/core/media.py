"""Images an item carries, and the markers that hold their places in its text.

An image part of a chat message (OpenAI's ``{"type": "image_url", ...}``) is read once,
when the item is read: checked and bounded by the ``media`` room, it becomes an
:class:`Image` on the :class:`~rewardsvc.core.rollout.Rollout`, and the message's text
holds an :func:`image_marker` where the part stood. Everything downstream (views, fitting,
fencing, detectors, cache keys) handles text; only the judges' prompts turn a marker back
into an image part (a judge that sees images) or a placeholder (a text-only judge).

The markers are built of Unicode private-use characters the service removes from every
untrusted text first (:func:`strip_markers`), so a policy cannot forge one to repeat an
image or point at another item's.

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARK_OPEN = "\ue000"
MARK_CLOSE = "\ue001"
_MARKER = re.compile(f"{MARK_OPEN}image:([0-9]+){MARK_CLOSE}")
_SENTINELS = re.compile(f"[{MARK_OPEN}{MARK_CLOSE}]")


@dataclass(frozen=True)
class Image:
    """One checked image: its MIME type, size, pixel dimensions, the sha256 of its bytes
    (its identity in cache keys) and the URL a vision judge is sent (the ``data:`` URL as
    received, or an ``https`` URL whose domain the pool allows, passed on untouched)."""

    media_type: str
    sha256: str
    width: int
    height: int
    nbytes: int
    url: str


def image_marker(index: int) -> str:
    """The text that stands, inside a rollout's text, for its image ``index``."""
    return f"{MARK_OPEN}image:{index}{MARK_CLOSE}"


def strip_markers(text: str) -> str:
    """``text`` without the marker characters: untrusted text cannot hold a marker."""
    return _SENTINELS.sub("", text) if MARK_OPEN in text or MARK_CLOSE in text else text


def split_markers(text: str) -> list[str | int]:
    """``text`` as its runs of text and the image indices of its markers, in order."""
    out: list[str | int] = []
    at = 0
    for m in _MARKER.finditer(text):
        if m.start() > at:
            out.append(text[at : m.start()])
        out.append(int(m.group(1)))
        at = m.end()
    if at < len(text):
        out.append(text[at:])
    return out


def has_markers(text: str) -> bool:
    """Whether ``text`` holds any image marker."""
    return MARK_OPEN in text
