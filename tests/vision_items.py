"""Items with images for the vision-judge tests, built as the media room will build them:
real small PNGs as ``data:`` URLs, on a rollout's ``images``, with a marker in the text
where each stood (``rewardsvc.core.media``)."""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib

from rewardsvc.core.media import Image, image_marker
from rewardsvc.core.rollout import Rollout


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real PNG of one colour (8-bit RGB, no interlace)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def image(rgb: tuple[int, int, int] = (255, 0, 0), size: int = 4) -> Image:
    """A checked image of a ``size`` x ``size`` PNG, as its ``data:`` URL."""
    data = png(size, size, rgb)
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    return Image("image/png", hashlib.sha256(data).hexdigest(), size, size, len(data), url)


RED, BLUE, GREEN = image((255, 0, 0)), image((0, 0, 255)), image((0, 255, 0))


def rollout(completion: str = "A red square.", *images: Image) -> Rollout:
    """An item whose prompt shows image 0 and whose completion the text given (which may
    hold markers of the further ``images``)."""
    prompt = f"What is in this picture? {image_marker(0)} Answer briefly."
    return Rollout(prompt=prompt, completion=completion, images=(RED, *images))
