"""Images in judge prompts: the one place where an item's image markers stop being text.

An item's text holds a marker (``rewardsvc.core.media.image_marker``) where each of its
images stood; sanitizing, fencing, fitting and the prefix-cache layout all handle it as
text. When a prompt is rendered, the markers become:

- for a judge that sees images (``capabilities.vision``, chat API): OpenAI content parts,
  ``{"type": "text", ...}`` runs and ``{"type": "image_url", "image_url": {"url": ...}}``
  parts in the order the markers stood, the URL the one the item sent (a ``data:`` URL, or
  an ``https`` URL its pool allows, passed on untouched: the service fetches nothing);
- for any other judge: :data:`IMAGE_PLACEHOLDER`, the text the service has always put for
  a part a judge cannot read; that judge's result says ``without_images``.

A marker's index is into one rollout's images. A prompt that shows several rollouts (a
group's listwise or pairwise comparison) re-indexes each text's markers into one list
(:class:`Gallery`) before fencing, so each completion's images stand in its own block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardsvc.core.media import Image, has_markers, image_marker, split_markers, strip_markers
from rewardsvc.core.trajectory_events import placeholder

IMAGE_PLACEHOLDER = placeholder("image")
"""What a text-only judge reads where an image stood."""

Part = dict[str, Any]
"""One OpenAI chat content part (``text`` or ``image_url``)."""


def image_part(image: Image) -> Part:
    """The content part that shows ``image`` to a vision judge."""
    return {"type": "image_url", "image_url": {"url": image.url}}


def content_parts(text: str, images: Sequence[Image]) -> list[Part]:
    """``text`` as content parts: its runs of text and, where each marker stood, the image
    it names (a marker naming no image of ``images`` reads as the placeholder)."""
    parts: list[Part] = []
    run = ""
    for piece in split_markers(text):
        if isinstance(piece, str):
            # A marker cut by fitting leaves a lone sentinel: never shown to the judge.
            run += strip_markers(piece)
        elif piece < len(images):
            if run:
                parts.append({"type": "text", "text": run})
            parts.append(image_part(images[piece]))
            run = ""
        else:
            run += IMAGE_PLACEHOLDER
    if run:
        parts.append({"type": "text", "text": run})
    return parts


def blind(text: str) -> str:
    """``text`` with the placeholder where each marker stood (a text-only judge's)."""
    if not has_markers(text):
        return text
    return "".join(
        strip_markers(p) if isinstance(p, str) else IMAGE_PLACEHOLDER for p in split_markers(text)
    )


def seen_content(content: str, images: Sequence[Image], sees: bool) -> str | list[Part]:
    """A message's ``content`` as a judge reads it: content parts for a judge that
    ``sees`` images (when the text names any), else text with placeholders."""
    if sees and images and has_markers(content):
        return content_parts(content, images)
    return blind(content)


def part_texts(content: Any) -> list[str]:
    """The texts of a message's content: itself when text, its text parts when parts."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
    return []


def image_count(content: Any) -> int:
    """How many image parts a message's content holds."""
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")


class Gallery:
    """The images of a prompt that shows several rollouts: each text's markers re-indexed
    into :attr:`images`, each distinct image (by its bytes' hash and URL) once."""

    def __init__(self) -> None:
        self.images: list[Image] = []
        self._index: dict[tuple[str, str], int] = {}

    def take(self, text: str, images: Sequence[Image]) -> str:
        """``text`` with its markers (into ``images``) re-indexed into the gallery."""
        if not has_markers(text):
            return text
        out: list[str] = []
        for piece in split_markers(text):
            if isinstance(piece, str):
                out.append(piece)
            elif piece < len(images):
                image = images[piece]
                key = (image.sha256, image.url)
                if key not in self._index:
                    self._index[key] = len(self.images)
                    self.images.append(image)
                out.append(image_marker(self._index[key]))
            else:
                out.append(IMAGE_PLACEHOLDER)
        return "".join(out)
