"""Images in admission and explain (issue 37, after issue 40).

Each call to a judge that sees images carries every image's ``data:`` URL (the whole
image, in base64), so a request's planned prompt bytes count it once per such call and
``max_prompt_bytes_per_request`` refuses a request whose images push it over, before any
judge is called. A text-only judge is sent a placeholder instead, and is counted so.
``options.explain`` shows such an image by its SHA-256 and size, never its URL.

On bce86a3 the plan counted text only: the request of large images was admitted and its
four calls sent, and explain echoed every image's base64 in each call it showed.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from PIL import Image as PILImage
from test_api_support import app_client, settings_for
from vision_items import BLUE, RED, rollout

from rewardsvc.core.media import Image, image_marker
from rewardsvc.core.pool import JudgePool
from rewardsvc.judges.imagery import IMAGE_PLACEHOLDER, PART_BYTES
from rewardsvc.scoring.planning import image_cost

MIB = 1024 * 1024
CRITERIA = 4

RUBRIC = """\
id: {id}
description: Answers about a picture.
criteria:
{criteria}
judges: [{judge}]
"""


def _library(folder: Path) -> Path:
    """Rubrics ``seen`` (the vision judge) and ``read`` (the text-only one), four criteria."""
    folder.mkdir(parents=True, exist_ok=True)
    criteria = "\n".join(
        f"  - id: c{k}\n    text: The answer is right about the picture, part {k}."
        for k in range(CRITERIA)
    )
    for rubric, judge in (("seen", "seer"), ("read", "reader")):
        text = RUBRIC.format(id=rubric, criteria=criteria, judge=judge)
        (folder / f"{rubric}.yaml").write_text(text)
    return folder


def _pool(fake: FakeJudge) -> JudgePool:
    def judge(vision: bool) -> dict[str, Any]:
        return {
            "model": "fake",
            "base_urls": [fake.url],
            "api": "chat",
            "retries": 0,
            "capabilities": {"vision": vision},
        }

    return JudgePool.model_validate({"judges": {"seer": judge(True), "reader": judge(False)}})


def _png(side: int) -> bytes:
    """A PNG of noise, which does not compress: about 3 bytes a pixel."""
    out = io.BytesIO()
    PILImage.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(out, "PNG")
    return out.getvalue()


def _url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def _body(rubric: str, url: str, explain: bool = False) -> dict[str, Any]:
    prompt = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is shown?"},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        }
    ]
    item = {"id": "i", "prompt": prompt, "completion": "Noise."}
    return {"rubric": rubric, "items": [item], "options": {"explain": explain}}


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return _library(tmp_path / "rubrics")


LARGE = _url(_png(300))  # about 360 KB as a data URL: four calls carry more than 1 MiB
SMALL = _url(_png(8))


async def test_images_count_once_per_call_to_a_judge_that_sees_them(
    library: Path, fake: FakeJudge
) -> None:
    """Four criteria asked of a vision judge carry the large image four times, more than
    max_prompt_bytes_per_request (1 MiB): 413 naming the limit, no judge called. The same
    item to a text-only judge, or with a small image, is admitted and scored."""
    assert CRITERIA * len(LARGE) > MIB > len(LARGE) + 64 * 1024
    settings = settings_for(library, max_prompt_bytes_per_request=MIB)
    async with app_client(settings, _pool(fake)) as (http, _, _):
        refused = await http.post("/v1/rewards", json=_body("seen", LARGE))
        assert refused.status_code == 413, refused.text
        assert "max_prompt_bytes_per_request" in refused.text
        assert fake.script.requests == 0
        read = await http.post("/v1/rewards", json=_body("read", LARGE))
        assert read.status_code == 200, read.text
        assert read.json()["results"][0]["status"] == "ok", read.text
        assert fake.script.requests == CRITERIA
        assert all(LARGE not in str(body) for body in fake.script.bodies)
        small = await http.post("/v1/rewards", json=_body("seen", SMALL))
        assert small.status_code == 200, small.text
        assert small.json()["results"][0]["status"] == "ok", small.text
    assert fake.script.requests == 2 * CRITERIA
    assert all(SMALL in str(body) for body in fake.script.bodies[CRITERIA:])


async def test_explain_shows_an_image_by_its_hash_and_size(library: Path, fake: FakeJudge) -> None:
    """Explain of a vision judge's calls shows the image as ``sha256:<hex>`` and its byte
    count, never its base64, and is admitted on its text alone: the answer holds four
    prompts, yet is smaller than the image's URL."""
    data = _png(300)
    url, digest = _url(data), hashlib.sha256(data).hexdigest()
    settings = settings_for(library, max_explain_bytes=64 * 1024)
    async with app_client(settings, _pool(fake)) as (http, _, _):
        reply = await http.post("/v1/rewards", json=_body("seen", url, explain=True))
    assert reply.status_code == 200, reply.text
    result = reply.json()["results"][0]
    assert result["status"] == "ok", reply.text
    shown = result["explain"]["seer"]
    assert sorted(shown) == [f"c{k}" for k in range(CRITERIA)]
    for messages in shown.values():
        parts = [p for m in messages if isinstance(m["content"], list) for p in m["content"]]
        images = [p["image_url"] for p in parts if p["type"] == "image_url"]
        assert images == [{"url": f"sha256:{digest}", "bytes": len(data)}]
    encoded = url.split(",", 1)[1]
    assert encoded[:64] not in reply.text
    assert len(reply.content) < len(url)
    # The judge itself was sent the image.
    assert all(url in str(body) for body in fake.script.bodies)


class _Sees:
    sees_images = True


class _Reads:
    sees_images = False


def test_a_call_counts_the_images_as_its_judge_is_sent_them() -> None:
    """A vision judge's call carries each image's part and URL, of which explain shows the
    part only; a pool-allowed URL is shown as sent. A text-only judge's call carries the
    placeholder where each image stood."""
    remote = Image("", "0" * 64, 0, 0, 0, "https://images.example.com/cat.png")
    item = rollout(f"A red square next to {image_marker(1)} and {image_marker(2)}.", BLUE, remote)
    inline = len(RED.url) + len(BLUE.url)
    seen = image_cost(_Sees(), item)  # type: ignore[arg-type]
    assert seen.calls == 0 and seen.image_bytes == inline
    assert seen.shown_bytes == 3 * PART_BYTES + len(remote.url)
    assert seen.prompt_bytes == seen.shown_bytes + inline
    read = image_cost(_Reads(), item)  # type: ignore[arg-type]
    assert read.image_bytes == 0 and read.prompt_bytes == 3 * len(IMAGE_PLACEHOLDER.encode())
