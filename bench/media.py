"""What images in items cost the service as it reads them: the bytes it holds per image in
flight, and the time of the header check against a full decode.

Bytes: ``--items`` items, each with its own image (``--side`` x ``--side`` pixels of noise
as PNG, about 3 bytes a pixel), are read as the server reads a request
(``application.items.read_item`` with the media reader of the default settings) under
``tracemalloc``; the same items with a short text in place of the image are read the same
way, and the difference per item is what one image in flight holds: its ``data:`` URL
(kept for a vision judge) and its record. ``tracemalloc`` traces Python's allocations:
the pixels of the one decode running at a time are Pillow's own (C) memory, bounded by
``max_image_pixels`` x 4 bytes, and not in the peak. In process; seconds.

Time: the header check (``Image.open``: type and size, no pixel decoded) and the full
decode of the worker (``load``), each repeated, on a PNG of noise and a JPEG photo-like
gradient of ``--decode-side`` pixels a side; the ratio says how much work a refused bomb
saves.

    .venv/bin/python -m bench.media [--items 32] [--side 256] [--decode-side 2048]
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import time
import tracemalloc
from typing import Any

from PIL import Image as PILImage

from bench.outputs import add_out_argument, write_results
from rewardsvc.application.items import read_item
from rewardsvc.core.rollout import ItemIn
from rewardsvc.media.check import decode_whole, header_problem
from rewardsvc.media.collect import MediaReader
from rewardsvc.media.rules import MediaRules


def encoded(img: PILImage.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    img.save(out, fmt)
    return out.getvalue()


def image_items(count: int, side: int, with_image: bool) -> list[dict[str, Any]]:
    """``count`` items, each asking about its own image (or the same words without it)."""
    items = []
    for n in range(count):
        if with_image:
            noise = PILImage.frombytes("RGB", (side, side), os.urandom(side * side * 3))
            url = "data:image/png;base64," + base64.b64encode(encoded(noise, "PNG")).decode()
            part: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
        else:
            part = {"type": "text", "text": " (no image)"}
        content = [{"type": "text", "text": f"Question {n}: what is shown?"}, part]
        items.append({"prompt": [{"role": "user", "content": content}], "completion": "Noise."})
    return items


def held_bytes(items: list[dict[str, Any]]) -> tuple[int, int, list[ItemIn]]:
    """Bytes the read items hold once read, and the peak while reading them."""
    media = MediaReader(MediaRules(max_pixels=64 * 1024 * 1024, max_side=16384))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        read = [read_item(i, raw, media=media) for i, raw in enumerate(items)]
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert all(r.rollout is not None for r in read), [r.error for r in read if r.error]
    return now - base, peak - base, read


def timed(work: Any, repeats: int) -> float:
    """Seconds per call of ``work()``, the best of ``repeats``."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def decode_ratio(side: int, repeats: int) -> list[dict[str, Any]]:
    """Header check and full decode times, and their ratio, per image kind."""
    gradient = PILImage.linear_gradient("L").resize((side, side)).convert("RGB")
    noise = PILImage.frombytes("RGB", (side, side), os.urandom(side * side * 3))
    rules = MediaRules(max_pixels=side * side, max_side=side, max_bytes=1 << 30)
    rows = []
    for name, data, fmt in (
        ("PNG noise", encoded(noise, "PNG"), "PNG"),
        ("JPEG gradient", encoded(gradient, "JPEG"), "JPEG"),
    ):
        header = timed(lambda d=data, f=fmt: header_problem(d, f, rules), repeats)
        decode = timed(lambda d=data, f=fmt: decode_whole(d, f), max(1, repeats // 10))
        rows.append(
            {
                "image": f"{name} {side}x{side}",
                "file_bytes": len(data),
                "header_ms": round(header * 1000, 3),
                "decode_ms": round(decode * 1000, 2),
                "ratio": round(decode / header),
            }
        )
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both measurements."""
    items = image_items(args.items, args.side, True)
    url_chars = sum(len(i["prompt"][0]["content"][1]["image_url"]["url"]) for i in items)
    with_images, peak, _ = held_bytes(items)
    without, _, _ = held_bytes(image_items(args.items, args.side, False))
    per_image = (with_images - without) / args.items
    return {
        "items": args.items,
        "image": f"PNG noise {args.side}x{args.side}",
        "data_url_chars_per_image": url_chars // args.items,
        "held_bytes_per_image": round(per_image),
        "held_over_data_url": round(per_image / (url_chars / args.items), 2),
        "peak_bytes_reading": peak,
        "decode": decode_ratio(args.decode_side, args.repeats),
    }


def markdown(result: dict[str, Any], command: str) -> str:
    """The report: bytes per image in flight, and header against decode time."""
    lines = [
        "# Images in items: bytes in flight, header check against decode",
        "",
        f"`{command}`: {result['items']} items, each with its own {result['image']} image "
        f"({result['data_url_chars_per_image']} characters as a data: URL).",
        "",
        f"Held per image once read, beyond its data: URL (which the request holds already and "
        f"the image shares, not copies): {result['held_bytes_per_image']} bytes "
        f"({result['held_over_data_url']} x the URL); Python's peak while reading all "
        f"{result['items']}: {result['peak_bytes_reading']} bytes (each image's decoded base64 "
        "lives only while it is checked).",
        "",
        "| image | file bytes | header check ms | full decode ms | decode / header |",
        "|---|---|---|---|---|",
    ]
    for row in result["decode"]:
        lines.append(
            f"| {row['image']} | {row['file_bytes']} | {row['header_ms']} | "
            f"{row['decode_ms']} | {row['ratio']} |"
        )
    return "\n".join([*lines, ""])


def main() -> None:
    """Run once and write the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--side", type=int, default=256)
    parser.add_argument("--decode-side", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=50)
    add_out_argument(parser)
    args = parser.parse_args()
    result = run(args)
    write_results(args.out, "media", result, markdown(result, "python -m bench.media"))


if __name__ == "__main__":
    main()
