"""References with images (issue 40): a reference may be chat messages whose image parts
are read as the prompt's are (checked, bounded, markers after the prompt's and the
completion's images); a bad one rejects its item alone, naming the part. A vision judge
sees the reference's image where the reference is shown, the verdict cache tells a
one-pixel change in it apart, and a grader compares the reference's text without its
images (no score when it holds only images). On a13e1c5 a reference was a string only:
such an item was rejected as malformed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from PIL import Image as PILImage
from test_api_support import app_client, settings_for
from test_media_items import answer, asked, b64, data_url, image_part, png

from rewardsvc.application.items import read_group, read_item
from rewardsvc.core.media import image_marker
from rewardsvc.core.pool import JudgePool

RUBRIC = """\
id: picture
description: Answers about a picture, against a reference.
criteria:
  - id: correct
    text: The answer matches the reference.
  - id: exact
    grader: {type: exact}
judges: [seer]
requires_reference: true
"""


def reference(url: str, text: str = "42") -> list[dict[str, Any]]:
    """A reference of one message: its text, then the image it was read from."""
    return [{"role": "assistant", "content": [{"type": "text", "text": text}, image_part(url)]}]


@pytest.fixture
def library(tmp_path: Path) -> Path:
    (tmp_path / "picture.yaml").write_text(RUBRIC)
    return tmp_path


def vision_pool(fake: FakeJudge) -> JudgePool:
    seer = {"model": "fake", "base_urls": [fake.url], "retries": 0, "timeout_s": 5.0}
    return JudgePool.model_validate(
        {"judges": {"seer": {**seer, "capabilities": {"vision": True}}}}
    )


def test_reference_images_follow_the_prompt_and_completion_images() -> None:
    red, blue, green = png(), png(color=(0, 0, 250)), png(color=(0, 250, 0))
    item = {"prompt": asked(red), "completion": answer(blue), "reference": reference(green)}
    rollout = read_item(0, item).rollout
    assert rollout is not None, read_item(0, item).error
    assert [i.url for i in rollout.images] == [red, blue, green]
    assert rollout.reference == "42" + image_marker(2)
    plain = read_item(0, {"prompt": "Sum?", "completion": "42", "reference": reference(green)})
    assert plain.rollout is not None and [i.url for i in plain.rollout.images] == [green]
    assert plain.rollout.reference == "42" + image_marker(0)
    group = read_group(
        0, {"prompt": "Sum?", "completions": ["41", "42"], "reference": reference(red)}
    )
    assert [r.reference for r in group.rollouts] == ["42" + image_marker(0)] * 2


async def test_a_bad_reference_image_rejects_its_item_alone(library: Path, fake: FakeJudge) -> None:
    bad = reference(b64(b"not a png"))
    items = [
        {"prompt": "Sum?", "completion": "42", "reference": bad},
        {"prompt": "Sum?", "completion": "42", "reference": reference(png())},
    ]
    groups = [{"prompt": "Sum?", "completions": ["41", "42"], "reference": bad}]
    async with app_client(settings_for(library), vision_pool(fake)) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": "picture", "items": items})
        assert reply.status_code == 200, reply.text
        rejected, ok = reply.json()["results"]
        assert rejected["status"] == "rejected", rejected
        assert rejected["error"].startswith("items[0].reference[0].content[1].image_url: ")
        assert ok["status"] == "ok", ok
        reply = await http.post("/v1/groups", json={"rubric": "picture", "groups": groups})
        assert reply.status_code == 200, reply.text
        error = reply.json()["results"][0]["error"]
        assert error.startswith("groups[0].reference[0].content[1].image_url: "), error
        assert error.count("image_url") == 1, "the shared reference is named once"


def judge_images(fake: FakeJudge) -> list[str]:
    """The image URLs of every body the fake judge received, in order."""
    return [
        part["image_url"]["url"]
        for body in fake.script.bodies
        for message in body["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


async def test_the_judge_sees_the_reference_image_and_the_cache_tells_a_pixel(
    library: Path, fake: FakeJudge
) -> None:
    green = PILImage.new("RGB", (16, 16), (10, 120, 10))
    base = data_url(green)
    green.putpixel((3, 4), (10, 121, 10))
    changed = data_url(green)  # one pixel apart

    def body(url: str) -> dict[str, Any]:
        item = {"prompt": "How many?", "completion": "42", "reference": reference(url)}
        return {"rubric": "picture", "items": [item]}

    async with app_client(settings_for(library), vision_pool(fake)) as (http, _, _):
        first = await http.post("/v1/rewards", json=body(base))
        result = first.json()["results"][0]
        assert result["status"] == "ok", first.text
        assert judge_images(fake) and set(judge_images(fake)) == {base}
        assert "reference" in str(fake.script.bodies[0]["messages"])
        calls = fake.script.requests
        await http.post("/v1/rewards", json=body(base))
        assert fake.script.requests == calls, "the same reference image again is a hit"
        other = await http.post("/v1/rewards", json=body(changed))
        assert other.json()["results"][0]["status"] == "ok", other.text
        assert fake.script.requests > calls, "a one-pixel change in the reference is a miss"
        # In a group the reference is shown once; its marker follows completion 0's image.
        fake.script.bodies.clear()
        group = {
            "prompt": "How many?",
            "completions": [answer(png(4, 4)), "42"],
            "reference": reference(changed),
        }
        reply = await http.post("/v1/groups", json={"rubric": "picture", "groups": [group]})
        assert reply.json()["results"][0]["status"] == "ok", reply.text
        assert {changed, png(4, 4)} == set(judge_images(fake)), judge_images(fake)


async def test_a_grader_reads_the_reference_text_without_its_images(
    library: Path, fake: FakeJudge
) -> None:
    items = [
        {"prompt": "How many?", "completion": "42", "reference": reference(png())},
        {"prompt": "How many?", "completion": "42", "reference": reference(png(), text="")},
    ]
    async with app_client(settings_for(library), vision_pool(fake)) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": "picture", "items": items})
    assert reply.status_code == 200, reply.text
    with_text, images_only = reply.json()["results"]
    assert with_text["judges"]["seer"]["criteria"]["exact"]["score"] == 1.0, with_text
    exact = images_only["judges"]["seer"]["criteria"]["exact"]
    assert exact["score"] is None and images_only["reward"] is None, images_only
    assert "holds only images" in exact["error"], exact


async def test_a_trainer_label_of_messages_carries_its_image(
    library: Path, fake: FakeJudge
) -> None:
    """A label given as chat messages is the reference, image and all; a bad image in it
    refuses the sample naming the label (on a13e1c5 the messages became JSON text)."""
    url = png(color=(0, 0, 250))
    async with app_client(settings_for(library), vision_pool(fake)) as (http, _, _):
        sample = {"prompt": "How many?", "response": "42", "label": reference(url)}
        reply = await http.post("/slime/picture", json=sample)
        assert reply.status_code == 200, reply.text
        assert judge_images(fake) == [url] * len(fake.script.bodies), fake.script.bodies
        bad = {**sample, "label": reference(b64(b"not a png"))}
        reply = await http.post("/slime/picture", json=bad)
        assert reply.status_code == 422, reply.text
        assert reply.json()["field"] == "label", reply.text
        assert "label[0].content[1].image_url" in reply.json()["message"], reply.text
