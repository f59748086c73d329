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

What the images add to a call is counted before anything is rendered (:func:`sent_bytes`),
and ``options.explain`` shows an image the item sent inline by the SHA-256 of its bytes and
its size, never its ``data:`` URL (:func:`explained_messages`): the URL is the image itself,
up to ``max_image_bytes`` in base64, in every call that shows it.
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

PART_BYTES = 128
"""The most one image part takes in a prompt beside its URL: its JSON as a vision judge is
sent it, or as explain shows it (:func:`explained_part`: a 64-digit hash and a size)."""

_PLACEHOLDER_BYTES = len(IMAGE_PLACEHOLDER.encode())


def image_part(image: Image) -> Part:
    """The content part that shows ``image`` to a vision judge."""
    return {"type": "image_url", "image_url": {"url": image.url}}


def inline(image: Image) -> bool:
    """Whether the item sent ``image`` inline (a ``data:`` URL: the image's bytes), not as
    the URL of a pool-allowed domain, which the judge's server fetches."""
    return image.url[:5].lower() == "data:"


def sent_bytes(images: Sequence[Image], sees: bool) -> tuple[int, int]:
    """What one call showing ``images`` sends for them beyond its text, in bytes, split as
    ``(shown, inline)``: ``inline`` the ``data:`` URLs, which explain never shows, ``shown``
    the rest. A judge that ``sees`` images is sent every image's part and URL; a text-only
    judge, the placeholder where each stood."""
    if not sees:
        return _PLACEHOLDER_BYTES * len(images), 0
    urls = [len(image.url.encode()) for image in images]
    held = sum(n for image, n in zip(images, urls, strict=True) if inline(image))
    return PART_BYTES * len(images) + sum(urls) - held, held


def explained_part(image: Image) -> Part:
    """An image part as explain shows it: an inline image by the SHA-256 of its bytes and
    their count (``{"url": "sha256:<hex>", "bytes": N}``), a pool-allowed URL as sent."""
    if not inline(image):
        return image_part(image)
    return {
        "type": "image_url",
        "image_url": {"url": f"sha256:{image.sha256}", "bytes": image.nbytes},
    }


def explained_messages(messages: list[dict[str, Any]], images: Sequence[Image]) -> list[Part]:
    """``messages`` as explain shows them: each image part (one of ``images``, whose parts
    :func:`content_parts` built) by :func:`explained_part`."""
    by_url = {image.url: image for image in images}
    shown: list[Part] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and image_count(content):
            parts = [
                explained_part(by_url[p["image_url"]["url"]]) if _is_image(p) else p
                for p in content
            ]
            message = {**message, "content": parts}
        shown.append(message)
    return shown


def _is_image(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "image_url"


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
    return sum(1 for p in content if _is_image(p))


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
