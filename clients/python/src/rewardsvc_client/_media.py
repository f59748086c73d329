"""Images in trainer prompts, as the service takes them: OpenAI ``image_url`` content parts.

Trainers hold a prompt's images in their own forms: TRL fills ``{"type": "image", "image":
<PIL.Image>}`` parts into conversational prompts (``prepare_multimodal_messages``), veRL and
Hugging Face datasets keep ``{"bytes": ..., "path": ...}`` rows, and some datasets keep raw
bytes or a URL. The service reads one form, ``{"type": "image_url", "image_url": {"url":
"data:image/png;base64,..."}}``; an ``image_url`` part a trainer already sends passes
unchanged. A URL is passed as it is: the service decides whether its host is allowed, and
never fetches it. Nothing here reads a file or fetches a URL.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import Any

IMAGE_MARKER = "<image>"
"""Where veRL's multimodal prompts (and LLaVA-style datasets) put each image in the text."""
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _mime(data: bytes) -> str:
    """The image type of encoded bytes by their signature (WebP: RIFF....WEBP)."""
    for signature, mime in _SIGNATURES:
        if data.startswith(signature):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "application/octet-stream"  # the service refuses it, naming the field


def _encoded(image: Any) -> bytes:
    """A PIL image as PNG bytes (a mode PNG cannot hold, e.g. CMYK, as RGB first)."""
    buffer = io.BytesIO()
    try:
        image.save(buffer, format="PNG")
    except OSError:
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def image_url(image: Any) -> str | None:
    """The URL of one image given in any trainer form: a PIL image or encoded bytes as a
    base64 data: URL, a ``{"bytes": ...}`` row likewise, a URL string as it is; None for
    anything else."""
    if isinstance(image, Mapping):
        image = image.get("bytes") or image.get("url")
    if isinstance(image, bytes | bytearray):
        data = bytes(image)
        return f"data:{_mime(data)};base64," + base64.b64encode(data).decode("ascii")
    if isinstance(image, str):
        return image if image.startswith(("data:", "http://", "https://")) else None
    if callable(getattr(image, "save", None)) and hasattr(image, "mode"):
        return image_url(_encoded(image))
    return None


def image_part(image: Any) -> dict[str, Any] | None:
    """One image as an ``image_url`` content part (None when ``image`` is not one)."""
    url = image_url(image)
    return None if url is None else {"type": "image_url", "image_url": {"url": url}}


def wire_part(part: Any) -> Any:
    """A content part with its image in the service's form: a TRL / transformers image part
    (``{"type": "image", "image" | "url": ...}``) becomes ``image_url``; a placeholder with
    no image, and every other part, is left as it is."""
    if isinstance(part, Mapping) and part.get("type") == "image":
        payload = part.get("image", part.get("url"))
        converted = None if payload is None else image_part(payload)
        if converted is not None:
            return converted
    return part


def wire_content(content: Any) -> Any:
    """A message's content with each image part in the service's form (``wire_part``)."""
    if isinstance(content, Sequence) and not isinstance(content, str | bytes | bytearray):
        return [wire_part(part) for part in content]
    return content


def with_images(question: Any, images: Any) -> Any:
    """A question and the images shown with it (a list or array, or None) as one prompt: a
    string becomes one user message whose parts put each image at its ``<image>`` marker
    (or, when the markers do not match the images, all images before the text); a message
    list gets its image placeholders filled in order. No images: the question as it is."""
    if hasattr(images, "tolist"):  # veRL keeps non-tensor columns in numpy arrays
        images = images.tolist()
    parts = [p for p in (image_part(i) for i in images or ()) if p is not None]
    if not parts:
        return question
    if question is None:
        question = ""
    if not isinstance(question, str):
        return _fill_placeholders(question, parts)
    pieces = question.split(IMAGE_MARKER)
    if len(pieces) != len(parts) + 1:
        return [{"role": "user", "content": [*parts, _text(question)]}]
    content: list[dict[str, Any]] = [_text(pieces[0])] if pieces[0] else []
    for part, piece in zip(parts, pieces[1:], strict=True):
        content.append(part)
        if piece:
            content.append(_text(piece))
    return [{"role": "user", "content": content}]


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _placeholder(part: Any) -> bool:
    """An image part with no image in it (TRL's and transformers' ``{"type": "image"}``)."""
    return (
        isinstance(part, Mapping)
        and part.get("type") == "image"
        and not (part.keys() & {"image", "url", "path"})
    )


def _fill_placeholders(messages: Any, parts: list[dict[str, Any]]) -> Any:
    """Messages with their image placeholders filled from ``parts``, in order."""
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes | bytearray):
        return messages
    queue = list(parts)
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list):
            content = [queue.pop(0) if _placeholder(p) and queue else p for p in content]
            message = {**message, "content": content}
        out.append(message)
    return out
