"""Checking one image URL: a data URL bounded, its header read, then decoded in a bounded
worker; an allowed ``http(s)`` URL passed on as it is. Each check gives the
:class:`~rewardsvc.core.media.Image` or the reason it is refused (never raises)."""

from __future__ import annotations

import binascii
import concurrent.futures
import hashlib
import io
import threading
from base64 import b64decode
from urllib.parse import urlsplit

from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from rewardsvc.core.media import Image

from .rules import FORMATS, MAX_URL_CHARS, MediaRules

# One decode at a time for the whole process: the memory images take while decoded is
# then at most one bounded image (max_pixels, 4 bytes each), whatever the load. The slot is
# taken before a decode is handed to the worker and given back by the worker when the
# decode ends (even one its caller stopped waiting for), so the time limit counts the
# decode alone, never the wait for the slot.
_slot = threading.BoundedSemaphore(1)
_decoder: concurrent.futures.ThreadPoolExecutor | None = None
_decoder_lock = threading.Lock()


def _worker() -> concurrent.futures.ThreadPoolExecutor:
    global _decoder
    with _decoder_lock:
        if _decoder is None:
            _decoder = concurrent.futures.ThreadPoolExecutor(1, "image-decode")
        return _decoder


def check_url(url: str, rules: MediaRules) -> Image | str:
    """The image ``url`` stands for, checked against ``rules``, or why it is refused."""
    if url[:5].lower() == "data:":
        return _data_image(url, rules)
    if len(url) > MAX_URL_CHARS:
        return f"a URL of more than {MAX_URL_CHARS} characters"
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        credentials = parts.username is not None or parts.password is not None
    except ValueError:
        return "not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        return "only data: URLs (or http(s) URLs of the judge pool's media_domains) are accepted"
    if credentials or host not in rules.domains:
        return (
            f"the service does not fetch media: send the image as a data: URL (host {host!r} "
            "is not in the judge pool's media_domains)"
        )
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()
    return Image("", digest, 0, 0, 0, url)


def _data_image(url: str, rules: MediaRules) -> Image | str:
    head, comma, payload = url.partition(",")
    params = head[5:].lower().split(";")
    media_type = params[0].strip()
    if not comma or "base64" not in params[1:]:
        return "a data: URL of an image must be base64 (data:image/png;base64,...)"
    fmt = FORMATS.get(media_type)
    if fmt is None:
        return f"image type {media_type or 'unset'!r} is not accepted ({', '.join(FORMATS)})"
    # Bounded before decoding: 4 characters of base64 hold 3 bytes.
    if len(payload) // 4 * 3 > rules.max_bytes + 3:
        return f"more than max_image_bytes={rules.max_bytes} bytes"
    try:
        data = b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return "a data: URL whose base64 does not decode"
    if len(data) > rules.max_bytes:
        return f"{len(data)} bytes, more than max_image_bytes={rules.max_bytes}"
    problem = header_problem(data, fmt, rules)
    if problem is not None:
        return problem
    size = _decoded(data, fmt, rules)
    if isinstance(size, str):
        return size
    width, height = size
    return Image(media_type, hashlib.sha256(data).hexdigest(), width, height, len(data), url)


def header_problem(data: bytes, fmt: str, rules: MediaRules) -> str | None:
    """Why the image's header (read without decoding its pixels) refuses it, or None."""
    try:
        with PILImage.open(io.BytesIO(data), formats=[fmt]) as img:
            width, height = img.size
            animated = bool(getattr(img, "is_animated", False))
    except PILImage.DecompressionBombError:
        return f"too many pixels (more than max_image_pixels={rules.max_pixels})"
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        return f"not a readable {fmt} image (its type must match its MIME type)"
    if max(width, height) > rules.max_side:
        return f"{width}x{height} pixels: a side longer than max_image_side={rules.max_side}"
    if width * height > rules.max_pixels:
        return f"{width}x{height} pixels, more than max_image_pixels={rules.max_pixels}"
    if animated:
        return "an animated image (only still images are accepted)"
    return None


def decode_whole(data: bytes, fmt: str) -> tuple[int, int]:
    """The size of image ``data`` (Pillow format ``fmt``) once all its pixels are decoded
    (raises what Pillow raises for a truncated or corrupt file)."""
    with PILImage.open(io.BytesIO(data), formats=[fmt]) as img:
        img.load()
        return img.size


def _decode_in_slot(data: bytes, fmt: str) -> tuple[int, int]:
    try:
        return decode_whole(data, fmt)
    finally:
        _slot.release()


def _decoded(data: bytes, fmt: str, rules: MediaRules) -> tuple[int, int] | str:
    """The image's size once decoded whole in the bounded worker, or why it does not
    decode (truncated, corrupt, slower than the time limit, or the decoder busy for longer
    than ``rules.decode_wait_s``)."""
    if not _slot.acquire(timeout=rules.decode_wait_s):
        return f"the image decoder stayed busy for {rules.decode_wait_s:g} s: send it again"
    try:
        future = _worker().submit(_decode_in_slot, data, fmt)
    except BaseException:
        _slot.release()
        raise
    try:
        return future.result(timeout=rules.decode_timeout_s)
    except concurrent.futures.TimeoutError:
        return f"its decoding took more than {rules.decode_timeout_s:g} s"
    # Pillow's parsers raise SyntaxError, besides OSError, for a malformed file.
    except (PILImage.DecompressionBombError, OSError, ValueError, SyntaxError) as exc:
        return f"does not decode as a {fmt} image ({type(exc).__name__}: {str(exc)[:120]})"
