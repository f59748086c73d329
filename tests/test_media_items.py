"""Images in items (issue 40): an image part becomes an Image of its rollout and a marker
in its text; it is checked and bounded as it is read, and the service never fetches one.

A URL (unless its host is in the pool's media_domains), an image over the bytes, pixel or
side bounds, a decompression bomb, a truncated PNG, a non-image sent as image/png and too
many images in one item each reject their item alone, naming the image's part, while the
rest of the batch is scored and the service's memory stays within a bound. On b6f5204
every image part became a placeholder: the items were scored, never rejected, and the
cache could not tell two images apart.
"""

from __future__ import annotations

import base64
import io
import os
import socket
import struct
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from PIL import Image as PILImage
from test_api_support import app_client, fake_pool_doc, settings_for, write_library

from rewardsvc.application.items import read_group, read_item
from rewardsvc.core.media import MARK_OPEN, has_markers, image_marker
from rewardsvc.core.pool import JudgePool

ALLOWED_HOST = "images.example.com"
RSS_BOUND = 32 * 1024 * 1024
"""The most the service's resident memory may grow while it reads the hostile batch below
(docs/how-to/multimodal.md: one bounded decode at a time, max_image_pixels x 4 bytes, 4 MiB
under LIMITS, plus the request's bytes, about 1 MiB). Decoding the bomb alone would take
64 MiB."""
LIMITS = {"max_image_bytes": 131_072, "max_image_pixels": 1_000_000, "max_images_per_item": 8}


def data_url(img: PILImage.Image, fmt: str = "PNG", mime: str = "image/png") -> str:
    out = io.BytesIO()
    img.save(out, fmt)
    return f"data:{mime};base64," + base64.b64encode(out.getvalue()).decode()


def png(width: int = 8, height: int = 8, color: tuple[int, int, int] = (200, 30, 30)) -> str:
    return data_url(PILImage.new("RGB", (width, height), color))


def noise_png(side: int) -> bytes:
    out = io.BytesIO()
    PILImage.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(out, "PNG")
    return out.getvalue()


def with_size(data: bytes, width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (its IHDR rewritten, CRC fixed)."""
    ihdr = b"IHDR" + struct.pack(">II", width, height) + data[24:29]
    return data[:12] + ihdr + struct.pack(">I", zlib.crc32(ihdr)) + data[33:]


def b64(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode()


def image_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def answer(*urls: str, text: str = "A red square.") -> list[dict[str, Any]]:
    """A completion of one assistant message: its text, then an image part per URL."""
    parts = [{"type": "text", "text": text}, *(image_part(u) for u in urls)]
    return [{"role": "assistant", "content": parts}]


def asked(url: str, question: str = "What is shown?") -> list[dict[str, Any]]:
    """A prompt of one user message: the question and the image."""
    return [{"role": "user", "content": [{"type": "text", "text": question}, image_part(url)]}]


def hostile_images() -> dict[str, str]:
    """Each kind of image the service must refuse (under LIMITS), by name."""
    small = noise_png(16)
    bomb = io.BytesIO()
    PILImage.new("L", (8000, 8000)).save(bomb, "PNG")  # 64 MB decoded, 62 kB as a file
    jpeg = data_url(PILImage.new("RGB", (8, 8)), "JPEG", "image/png")
    return {
        "url": f"https://{ALLOWED_HOST}/cat.png",
        "bytes": b64(noise_png(256)),
        "pixels": png(1100, 1000),
        "side": png(9000, 1),
        "bomb": b64(bomb.getvalue()),
        "huge_header": b64(with_size(small, 1_000_000, 1_000_000)),
        "truncated": b64(small[: len(small) // 2]),
        "not_an_image": b64(b"just some text, not a picture at all"),
        "jpeg_as_png": jpeg,
        "file_scheme": "file:///etc/passwd",
    }


@contextmanager
def peak_rss() -> Iterator[list[int]]:
    """The process's resident set size, sampled while the block runs: [before, peak]."""
    page = os.sysconf("SC_PAGE_SIZE")

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * page

    seen = [rss(), rss()]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            seen[1] = max(seen[1], rss())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join()
        seen[1] = max(seen[1], rss())


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path / "rubrics")


def pool_of(fake: FakeJudge, *domains: str) -> JudgePool:
    doc = fake_pool_doc(fake.url, fake.url)
    return JudgePool.model_validate({**doc, "media_domains": list(domains)} if domains else doc)


async def test_bad_images_reject_their_items_alone_naming_the_part(
    library: Path, fake: FakeJudge
) -> None:
    bad = hostile_images()
    items: list[dict[str, Any]] = [{"prompt": "2+2?", "completion": "4"}]
    items += [
        {"id": name, "prompt": "Draw.", "completion": answer(url)} for name, url in bad.items()
    ]
    items.append({"id": "fifty", "prompt": "Draw.", "completion": answer(*[png()] * 50)})
    items.append({"id": "good", "prompt": asked(png()), "completion": "A red square."})
    async with app_client(settings_for(library, **LIMITS), pool_of(fake)) as (http, _, _):
        with peak_rss() as rss:
            reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": items})
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert results[0]["status"] == "ok" and results[-1]["status"] == "ok", results
    for n, result in enumerate(results[1:-1], start=1):
        where = "content[9]" if result["id"] == "fifty" else "content[1]"
        assert result["status"] == "rejected", result
        assert result["error"].startswith(f"items[{n}].completion[0].{where}.image_url: "), result
    errors = {r["id"]: r["error"] for r in results[1:-1]}
    assert "does not fetch media" in errors["url"]
    assert "max_image_bytes=131072" in errors["bytes"]
    assert "max_image_pixels=1000000" in errors["pixels"]
    assert "max_image_side=8192" in errors["side"] and "pixels" in errors["bomb"]
    assert "does not decode" in errors["truncated"]
    assert "not a readable PNG image" in errors["not_an_image"]
    assert "not a readable PNG image" in errors["jpeg_as_png"]
    assert "max_images_per_item=8" in errors["fifty"]
    assert rss[1] - rss[0] < RSS_BOUND, f"RSS grew by {(rss[1] - rss[0]) >> 20} MiB"


async def test_an_allowed_domain_passes_its_url_untouched_and_never_fetched(
    library: Path, fake: FakeJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[object] = []
    real = socket.getaddrinfo

    def watched(host: object, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(host)
        if host == ALLOWED_HOST:
            raise OSError("the test allows no lookup of the image's host")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", watched)
    url = f"https://{ALLOWED_HOST}/cat.png?size=large"
    item = {"prompt": asked(url), "completion": "A cat."}
    async with app_client(settings_for(library), pool_of(fake, ALLOWED_HOST)) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [item]})
    assert reply.status_code == 200, reply.text
    assert reply.json()["results"][0]["status"] == "ok", reply.text
    assert ALLOWED_HOST not in looked_up
    from rewardsvc.media.collect import MediaReader
    from rewardsvc.media.rules import MediaRules

    read = read_item(0, item, media=MediaReader(MediaRules(domains=frozenset({ALLOWED_HOST}))))
    assert read.rollout is not None and [i.url for i in read.rollout.images] == [url]
    refused = read_item(0, item)  # the default rules allow no domain
    assert refused.error is not None and "prompt[0].content[1].image_url" in refused.error


def test_images_become_markers_in_order_and_a_forged_marker_is_stripped() -> None:
    red, blue = png(), png(color=(0, 0, 250))
    forged = f"Looks like {image_marker(0)} again{MARK_OPEN}"
    item = {
        "prompt": asked(red),
        "completion": [
            {"role": "assistant", "content": [{"type": "output_text", "text": forged}]},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [
                    {"type": "input_image", "image_url": blue},
                ],
            },
        ],
        "reference": f"ref {image_marker(1)}",
    }
    rollout = read_item(0, item).rollout
    assert rollout is not None
    # The forged marker is gone (checked first: on b6f5204 it reached the judges whole).
    assert "Looks like image:0 again" in rollout.completion
    assert [i.url for i in rollout.images] == [red, blue]
    assert rollout.prompt.endswith(image_marker(0))
    assert rollout.completion.count(MARK_OPEN) == 1 and image_marker(1) in rollout.completion
    assert rollout.reference == "ref image:1" and not has_markers(rollout.reference)


def test_items_without_images_read_as_before() -> None:
    item = {"prompt": [{"role": "user", "content": "Hi"}], "completion": "Hello"}
    rollout = read_item(0, item).rollout
    assert rollout is not None and rollout.images == () and rollout.prompt == "user: Hi"


async def test_the_same_image_is_a_cache_hit_and_a_one_pixel_change_a_miss(
    library: Path, fake: FakeJudge
) -> None:
    base = PILImage.new("RGB", (16, 16), (10, 120, 10))
    changed = base.copy()
    changed.putpixel((3, 4), (10, 121, 10))

    def body(img: PILImage.Image) -> dict[str, Any]:
        item = {"prompt": asked(data_url(img)), "completion": "A green square."}
        return {"rubric": "tiny", "items": [item]}

    async with app_client(settings_for(library), pool_of(fake)) as (http, _, _):
        first = await http.post("/v1/rewards", json=body(base))
        assert first.json()["results"][0]["status"] == "ok", first.text
        calls = fake.script.requests
        assert calls > 0
        again = await http.post("/v1/rewards", json=body(base))
        assert again.json()["results"][0]["status"] == "ok"
        assert fake.script.requests == calls, "the same image again is a cache hit"
        other = await http.post("/v1/rewards", json=body(changed))
        assert other.json()["results"][0]["status"] == "ok"
        assert fake.script.requests > calls, "a one-pixel change is a miss"


async def test_groups_and_pairs_reject_a_bad_image_alone(library: Path, fake: FakeJudge) -> None:
    bad = b64(b"not a png")
    groups = [
        {"id": "ok", "prompt": asked(png()), "completions": ["Red.", "Blue."]},
        {"id": "bad", "prompt": "Draw.", "completions": ["Red.", answer(bad)]},
    ]
    pairs = [
        {"id": "ok", "prompt": asked(png()), "a": "Red.", "b": "Blue."},
        {"id": "bad", "prompt": asked(bad), "a": "Red.", "b": "Blue."},
    ]
    async with app_client(settings_for(library), pool_of(fake)) as (http, _, _):
        reply = await http.post("/v1/groups", json={"rubric": "tiny", "groups": groups})
        assert reply.status_code == 200, reply.text
        ok, rejected = reply.json()["results"]
        assert ok["status"] == "ok", ok
        assert rejected["status"] == "rejected"
        assert rejected["error"].startswith("groups[1].completions[1][0].content[1].image_url: ")
        reply = await http.post("/v1/preferences", json={"rubric": "tiny", "pairs": pairs})
        assert reply.status_code == 200, reply.text
        ok, rejected = reply.json()["results"]
        assert ok["status"] == "ok", ok
        # The prompt's image is named once, though both sides of the pair hold it.
        assert rejected["error"].count("image_url") == 1, rejected
        assert rejected["error"].startswith("pairs[1].prompt[0].content[1].image_url: ")


def test_a_group_shares_its_prompt_image_with_each_completion() -> None:
    url = png()
    group = {"prompt": asked(url), "completions": ["Red.", answer(png(4, 4))]}
    read = read_group(0, group)
    assert [len(r.images) for r in read.rollouts] == [1, 2]
    assert all(r.images[0].url == url for r in read.rollouts)


async def test_a_trainer_route_refuses_a_bad_image_naming_its_field(
    library: Path, fake: FakeJudge
) -> None:
    async with app_client(settings_for(library), pool_of(fake)) as (http, _, _):
        bad = {"prompt": asked(b64(b"not a png")), "response": "Red."}
        reply = await http.post("/slime/tiny", json=bad)
        assert reply.status_code == 422, reply.text
        assert reply.json()["field"] == "prompt"
        assert reply.json()["message"].startswith("prompt[0].content[1].image_url: ")
        good = {"prompt": asked(png()), "response": "Red."}
        assert (await http.post("/slime/tiny", json=good)).status_code == 200


def test_a_decode_past_its_time_limit_rejects_its_item_and_frees_the_decoder() -> None:
    from rewardsvc.media.collect import MediaReader
    from rewardsvc.media.rules import MediaRules

    slow = b64(noise_png(1024))  # its decode takes far longer than a microsecond
    rules = MediaRules(max_bytes=8 << 20, decode_timeout_s=1e-6)
    late = read_item(0, {"prompt": asked(slow), "completion": "Noise."}, media=MediaReader(rules))
    assert late.error is not None and "its decoding took more than" in late.error
    # The decoder is given back when that decode ends: the next image is read.
    again = read_item(0, {"prompt": asked(png()), "completion": "Red."})
    assert again.rollout is not None and len(again.rollout.images) == 1


def _saved(fmt: str, mime: str, frames: int = 1) -> str:
    first, *more = [PILImage.new("RGB", (8, 8), (40 * n, 2, 3)) for n in range(frames)]
    out = io.BytesIO()
    first.save(out, fmt, save_all=frames > 1, append_images=more)
    return f"data:{mime};base64," + base64.b64encode(out.getvalue()).decode()


@pytest.mark.parametrize(
    ("url", "refusal"),
    [
        (_saved("WEBP", "image/webp"), None),
        (_saved("GIF", "image/gif"), None),
        (_saved("JPEG", "image/jpeg"), None),
        (_saved("GIF", "image/gif", frames=2), "an animated image"),
        (_saved("PNG", "image/png", frames=2), "an animated image"),
        ("data:image/svg+xml;base64,PHN2Zz4=", "image type 'image/svg+xml' is not accepted"),
        ("data:image/png,plain", "must be base64"),
        ("data:image/png;base64,!!!!", "base64 does not decode"),
        ("https://user:pw@images.example.com/a.png", "does not fetch media"),
        ("ftp://images.example.com/a.png", "only data: URLs"),
    ],
)
def test_image_types_and_urls(url: str, refusal: str | None) -> None:
    from rewardsvc.media.check import check_url
    from rewardsvc.media.rules import MediaRules

    found = check_url(url, MediaRules(domains=frozenset({ALLOWED_HOST})))
    if refusal is None:
        assert not isinstance(found, str) and (found.width, found.height) == (8, 8)
    else:
        assert isinstance(found, str) and refusal in found
