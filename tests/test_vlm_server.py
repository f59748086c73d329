"""The CPU vision-language judge ``smolvlm``, called raw over vLLM's chat API.

``smolvlm`` (cpujudge.sh's optional judge, assembled by deploy/cpu-judge/vlm.py) is
SmolLM2's real text model behind an untrained vision tower: its answers about images mean
nothing, so what is checked is the wire path. An image sent as a data: URL content part is
encoded by the judge (the prompt grows by the image's tokens, whatever the image's size),
the single-token Yes/No logprobs come back with an image as without, and the vLLM flags
cpujudge.sh gives it hold: no http(s) image is fetched, images per prompt and pixels per
image are bounded.
"""

from __future__ import annotations

import base64
import importlib.util
import io
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from bench.multimodal import VLM_URL, chat_body, png

pytestmark = pytest.mark.judges

QUESTION = "Does the picture show a red square? Answer Yes or No."
VLM_PY = Path(__file__).resolve().parent.parent / "deploy" / "cpu-judge" / "vlm.py"


def vlm_module() -> Any:
    """deploy/cpu-judge/vlm.py (a script folder, not a package); it imports torch lazily."""
    spec = importlib.util.spec_from_file_location("cpujudge_vlm", VLM_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Idefics3 wraps each image's tokens as <fake_token_around_image><global-img>...<fake...>.
IMAGE_COST = vlm_module().IMAGE_TOKENS + 3


def chat(*image_urls: str) -> httpx.Response:
    """One single-token logprob call with the images' parts before the question."""
    return httpx.post(VLM_URL, json=chat_body(QUESTION, image_urls), timeout=120)


def scored(*image_urls: str) -> tuple[int, dict[str, float]]:
    """The call's prompt tokens and the logprobs of the Yes/No tokens among its top 20."""
    reply = chat(*image_urls)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    top = body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    yes_no = {t["token"].strip(): t["logprob"] for t in top if t["token"].strip() in {"Yes", "No"}}
    return body["usage"]["prompt_tokens"], yes_no


def test_an_image_costs_its_tokens_and_logprobs_still_come_back(vlm_server: None) -> None:
    text_only, text_logprobs = scored()
    with_image, image_logprobs = scored(png((320, 240), seed=1))
    assert with_image - text_only == IMAGE_COST
    assert set(text_logprobs) == set(image_logprobs) == {"Yes", "No"}
    # The untrained tower still reaches the answer: the image moves the logprobs.
    assert image_logprobs != text_logprobs


def test_every_image_costs_the_same_whatever_its_size(vlm_server: None) -> None:
    text_only, _ = scored()
    small, _ = scored(png((64, 48), seed=2))
    large, _ = scored(png((1200, 900), seed=3))
    two, _ = scored(png((320, 240), seed=4), png((320, 240), seed=5))
    assert small - text_only == large - text_only == IMAGE_COST
    assert two - text_only == 2 * IMAGE_COST


def test_vllm_itself_fetches_no_http_image(vlm_server: None) -> None:
    # cpujudge.sh allows only a host under the reserved .invalid TLD: vLLM refuses the URL
    # before any connection (an empty allow-list would let it fetch from anywhere).
    reply = chat("https://example.com/cat.png")
    assert reply.status_code == 400
    assert "allowed domains" in reply.text


def test_images_per_prompt_are_bounded(vlm_server: None) -> None:
    reply = chat(*[png((64, 48), seed=i) for i in range(5)])
    assert reply.status_code == 400
    assert "image" in reply.text


def test_vllm_refuses_an_image_over_its_pixel_bound_before_decoding(vlm_server: None) -> None:
    # VLLM_MAX_IMAGE_PIXELS=16777216 (cpujudge.sh): vLLM's default would decode 179 Mpx.
    image = Image.new("L", (5000, 5000), 255)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    reply = chat("data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode())
    assert reply.status_code == 400
    assert "exceed the maximum of 16777216 pixels" in reply.text
