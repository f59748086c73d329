"""Images from the trainers' real packages reach a vision judge (issue 40): TRL's multimodal
prompt as its GRPO trainer hands it to a reward function (``prepare_multimodal_messages``
with a PIL image) and veRL's sample with its image row in ``extra_info["images"]`` (scored by
veRL's own legacy ``naive`` manager) go through the adapters to a ``rewardsvc serve``
whose judge is a fake vision judge recording every body: the image arrives as an
``image_url`` part holding the same pixels (veRL: the same bytes).

Each trainer runs in its cached venv (tests/trainers/venvs.py) in a subprocess: slow, but no
real judge is used.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Service, start_service, stop_service
from fakejudge import FakeJudge
from PIL import Image
from trainers import venvs

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).resolve().parent / "trainers"
RUBRIC = """\
id: helpful-answer
description: Answers about a picture.
criteria:
  - id: correct
    text: The answer names what the picture shows.
judges: [seer]
"""


@pytest.fixture
def served(fake: FakeJudge, tmp_path: Path) -> Iterator[Service]:
    """``rewardsvc serve`` with one rubric and a fake judge that sees images."""
    rubrics = tmp_path / "rubrics"
    rubrics.mkdir()
    (rubrics / "helpful-answer.yaml").write_text(RUBRIC)
    seer = {
        "model": "fake",
        "base_urls": [fake.url],
        "retries": 0,
        "capabilities": {"vision": True},
    }
    pool = tmp_path / "pool.yaml"
    pool.write_text(json.dumps({"judges": {"seer": seer}}))  # JSON is YAML
    env = {"REWARDSVC_RUBRICS_DIR": str(rubrics), "REWARDSVC_JUDGE_POOL": str(pool)}
    service = start_service(env, tmp_path / "service.log")
    yield service
    stop_service(service)


def run(venv: str, script: str, args: list[str], folder: Path) -> dict[str, Any]:
    """tests/trainers/``script`` in trainer venv ``venv``; the JSON it wrote."""
    python = venvs.ensure(venv)
    out = folder / "out.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSVC_")}
    done = subprocess.run(
        [str(python), str(SCRIPTS / script), *args, str(out)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(out.read_text()))


def judged_images(fake: FakeJudge) -> list[bytes]:
    """The bytes of every data: URL image part the fake judge received."""
    return [
        base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
        for body in fake.script.bodies
        for message in body.get("messages", [])
        if isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


def test_trl_multimodal_prompt_reaches_the_judge_as_an_image(
    served: Service, fake: FakeJudge, tmp_path: Path
) -> None:
    got = run("trl-async", "trl_images_run.py", [served.url, "helpful-answer"], tmp_path)
    assert got["rewards"][0] is not None, got
    seen = judged_images(fake)
    assert seen, "the judge received no image"
    for data in seen:
        image = Image.open(io.BytesIO(data))
        assert image.size == (8, 8) and image.convert("RGB").getpixel((3, 3)) == (200, 30, 30)


def test_verl_extra_info_image_row_reaches_the_judge_as_an_image(
    served: Service, fake: FakeJudge, tmp_path: Path
) -> None:
    tokenizer = venvs.cache_dir() / "cpu-judge" / "models" / "smollm2-135m-instruct"
    if not tokenizer.is_dir():
        pytest.skip("the CPU judge's tokenizer is not converted (deploy/cpu-judge)")
    png = tmp_path / "square.png"
    Image.new("RGB", (8, 8), (30, 30, 200)).save(png)
    args = [served.url, str(tokenizer), str(png)]
    got = run("verl", "verl_images_run.py", args, tmp_path)
    assert got["scores"][0] > 0.0, got  # the fake judge's reward, not the failure score
    seen = judged_images(fake)
    assert seen and all(data == png.read_bytes() for data in seen), len(seen)
