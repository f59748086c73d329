"""The bounds an image must keep, and the domains whose URLs may stand for one."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_IMAGE_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_IMAGES_PER_ITEM = 8
DEFAULT_MAX_IMAGE_PIXELS = 16 * 1024 * 1024
DEFAULT_MAX_IMAGE_SIDE = 8192
DECODE_TIMEOUT_S = 5.0
"""How long the decode of one image may take before its item is rejected."""
DECODE_WAIT_S = 30.0
"""How long an image may wait for the decoder (one decode at a time) before its item is
rejected."""
MAX_URL_CHARS = 2048
"""The longest ``http(s)`` URL accepted for an image (a data URL is bounded by its bytes)."""

FORMATS: dict[str, str] = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/webp": "WEBP",
    "image/gif": "GIF",
}
"""The image types accepted, by MIME type: the Pillow format each must parse as."""

IMAGE_PARTS = ("image_url", "input_image")
"""Content part types that hold an image: chat's ``image_url``, Responses' ``input_image``."""


@dataclass(frozen=True)
class MediaRules:
    """What one image may be: ``max_bytes`` of its file, ``max_pixels`` and ``max_side``
    (width or height); ``max_per_item`` images in one item; ``domains``, the hosts whose
    ``http(s)`` URLs are passed to the judges untouched (any other URL is refused)."""

    max_bytes: int = DEFAULT_MAX_IMAGE_BYTES
    max_per_item: int = DEFAULT_MAX_IMAGES_PER_ITEM
    max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS
    max_side: int = DEFAULT_MAX_IMAGE_SIDE
    domains: frozenset[str] = frozenset()
    decode_timeout_s: float = DECODE_TIMEOUT_S
    decode_wait_s: float = DECODE_WAIT_S
