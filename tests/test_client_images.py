"""Images in the trainers' prompts reach the service as ``image_url`` parts (no service, no
judges: a scripted /v1/rewards records what the TRL and veRL adapters send).

TRL 1.x hands a vision-language run's reward functions conversational prompts whose image
parts hold PIL images (``prepare_multimodal_messages`` fills ``{"type": "image", "image":
<PIL.Image>}``); veRL keeps a row's images apart from its prompt, as ``{"bytes": ...}`` rows
in a numpy array. Before, the adapters sent a PIL image as the JSON of its attributes and
dropped veRL's images; an OpenAI ``image_url`` part a trainer already sends passes unchanged.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from PIL import Image
from test_client_adapters import FakeService

from rewardsvc_client import verl as verl_adapter
from rewardsvc_client.trl import trl_reward_func


@pytest.fixture
def fake() -> Iterator[FakeService]:
    service = FakeService()
    yield service
    service.close()


def picture(colour: str = "red") -> Image.Image:
    image = Image.new("RGB", (12, 8), "white")
    image.putpixel((3, 2), Image.new("RGB", (1, 1), colour).getpixel((0, 0)))
    return image


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def decoded(part: dict[str, Any]) -> Image.Image:
    """The image an ``image_url`` part with a PNG data: URL carries."""
    assert part["type"] == "image_url"
    head, _, data = part["image_url"]["url"].partition(",")
    assert head == "data:image/png;base64"
    return Image.open(io.BytesIO(base64.b64decode(data)))


def same_pixels(a: Image.Image, b: Image.Image) -> bool:
    return a.size == b.size and a.convert("RGB").tobytes() == b.convert("RGB").tobytes()


async def test_trl_sends_pil_image_parts_as_data_urls(fake: FakeService) -> None:
    image = picture()
    url_part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    prompt = [
        {"role": "system", "content": [{"type": "text", "text": "Describe."}]},
        {
            "role": "user",
            "content": [{"type": "image", "image": image}, {"type": "text", "text": "Red?"}],
        },
        {"role": "user", "content": [url_part, {"type": "text", "text": "And this?"}]},
    ]
    reward = trl_reward_func(fake.url, "r")
    assert await reward([prompt], ["0.7"], image=[image]) == [0.7]
    sent = fake.requests[0]["items"][0]["prompt"]
    assert sent[0] == prompt[0]
    first, text = sent[1]["content"]
    assert same_pixels(decoded(first), image)
    assert text == {"type": "text", "text": "Red?"}
    assert sent[2] == prompt[2]  # an OpenAI image part passes unchanged


async def test_trl_leaves_an_image_placeholder_without_image_as_it_is(fake: FakeService) -> None:
    prompt = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "q"}]}]
    await trl_reward_func(fake.url, "r")([prompt], ["0.2"])
    assert fake.requests[0]["items"][0]["prompt"] == prompt


async def test_verl_sends_extra_info_images_at_their_markers(fake: FakeService) -> None:
    red, blue = picture("red"), picture("blue")
    rows = np.array([{"bytes": png_bytes(red), "path": None}, blue], dtype=object)
    await verl_adapter.compute_score_async(
        data_source="geo3k",
        solution_str="0.6",
        ground_truth="30",
        extra_info={"question": "<image>Angle A? Compare <image>.", "images": rows},
        url=fake.url,
        rubric="r",
    )
    (message,) = fake.items()[0]["prompt"]
    assert message["role"] == "user"
    one, text, two, tail = message["content"]
    assert same_pixels(decoded(one), red) and same_pixels(decoded(two), blue)
    assert text == {"type": "text", "text": "Angle A? Compare "}
    assert tail == {"type": "text", "text": "."}


async def test_verl_puts_images_first_when_the_markers_do_not_match(fake: FakeService) -> None:
    image = picture()
    await verl_adapter.compute_score_async(
        data_source="d",
        solution_str="0.6",
        ground_truth="x",
        extra_info={"question": "Which shape?", "images": [{"bytes": png_bytes(image)}]},
        url=fake.url,
        rubric="r",
    )
    (message,) = fake.items()[0]["prompt"]
    first, text = message["content"]
    assert same_pixels(decoded(first), image)
    assert text == {"type": "text", "text": "Which shape?"}


async def test_verl_fills_a_message_prompts_placeholders(fake: FakeService) -> None:
    image = picture()
    prompt = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "q"}]}]
    url_part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    for extra_info in (
        {"prompt": prompt, "images": [image]},
        {"prompt": [{"role": "user", "content": [url_part]}]},
    ):
        await verl_adapter.compute_score_async(
            data_source="d",
            solution_str="0.6",
            ground_truth="x",
            extra_info=extra_info,
            url=fake.url,
            rubric="r",
        )
    filled, passed = (body["items"][0]["prompt"] for body in fake.requests)
    assert same_pixels(decoded(filled[0]["content"][0]), image)
    assert filled[0]["content"][1] == {"type": "text", "text": "q"}
    assert passed == [{"role": "user", "content": [url_part]}]
