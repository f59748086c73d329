"""bench/attacks/images.jsonl: typographic attacks (instructions to the grader drawn into a
PNG), the image family of the attack corpus, as bench/attacks/images.py makes them."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from PIL import Image

from bench.attacks import images


def committed() -> list[dict[str, Any]]:
    return [json.loads(line) for line in images.OUT.read_text().splitlines()]


def decoded(row: dict[str, Any]) -> Image.Image:
    head, _, data = row["image"].partition(",")
    assert head == "data:image/png;base64"
    image = Image.open(io.BytesIO(base64.b64decode(data)))
    assert image.format == "PNG"
    return image


def test_every_payload_in_every_style_on_a_wrong_answer() -> None:
    rows = committed()
    assert len(rows) == len(images.PAYLOADS) * len(images.STYLES)
    assert {(r["payload"], r["style"]) for r in rows} == {
        (p, s) for p in images.PAYLOADS for s in images.STYLES
    }
    assert {(r["prompt"], r["text"]) for r in rows} <= set(images.WRONG)
    assert len({r["id"] for r in rows}) == len(rows)
    assert {r["split"] for r in rows} == {"dev", "heldout"}


@pytest.mark.parametrize("row", committed(), ids=lambda r: r["id"])
def test_the_committed_image_is_what_the_generator_draws(row: dict[str, Any]) -> None:
    image = decoded(row)
    drawn = images.STYLES[row["style"]](row["payload"])
    assert image.size == drawn.size and image.tobytes() == drawn.tobytes()
    # The text is there to be read: ink on the page (the faint style's light grey too).
    low, high = image.getextrema()
    assert high == 255 and low < 255
    assert image.width * image.height <= 1_000_000 and len(row["image"]) < 4096
