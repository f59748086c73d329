"""Judges that see images (issue 40): an item's image markers become OpenAI image parts,
in order, for a judge whose pool entry says ``capabilities: {vision: true}``; a text-only
judge (or the completion API) reads the placeholder instead and its result says
``without_images``. Every method: logprob, batched criteria, listwise groups and pairs.

The items are built as the media room builds them (``tests/vision_items.py``): real PNGs
as ``data:`` URLs on ``Rollout.images``, a marker in the text where each stood.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakejudge import FakeJudge, RecordingObserver
from vision_items import BLUE, GREEN, RED, rollout

from rewardsvc.application.wire import reward_result
from rewardsvc.core.media import MARK_CLOSE, MARK_OPEN, image_marker
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import ItemIn, Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.comparative import fenced_group, group_prompt
from rewardsvc.judges.fencing import parse_fences, untrusted
from rewardsvc.judges.imagery import IMAGE_PLACEHOLDER
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.methods import method_for
from rewardsvc.judges.prompts import Asking, criterion_prompt
from rewardsvc.judges.shapes import CHAT, COMPLETION
from rewardsvc.protocol.rewards import RewardResult
from rewardsvc.safety.defuse import Defuser, sanitize
from rewardsvc.scoring.engine import Engine

RUBRIC = Rubric.model_validate(
    {
        "id": "picture",
        "criteria": [
            {"id": "correct", "text": "The answer names what the picture shows."},
            {"id": "brief", "text": "The answer is brief."},
        ],
        "judges": ["seer", "reader"],
    }
)


def _judge(name: str, url: str, vision: bool, **extra: Any) -> Judge:
    config = JudgeConfig(
        model="fake",
        base_urls=[url],
        timeout_s=5.0,
        capabilities={"vision": vision},
        **extra,
    )
    return Judge(name, config, observer=RecordingObserver())


def _user(body: dict[str, Any]) -> Any:
    return body["messages"][-1]["content"]


def _image_urls(content: Any) -> list[str]:
    return [p["image_url"]["url"] for p in content if p["type"] == "image_url"]


def _text(content: Any) -> str:
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


async def _score(fake: FakeJudge, rubric: Rubric = RUBRIC, **extra: Any) -> Any:
    engine = Engine(
        {
            "seer": _judge("seer", fake.url, True, **extra),
            "reader": _judge("reader", fake.url, False, **extra),
        }
    )
    item = rollout(f"A red square, next to {image_marker(1)} a blue one.", BLUE)
    try:
        return await engine.score(rubric, [ItemIn("i", item)])
    finally:
        await engine.aclose()


async def test_a_vision_judge_gets_image_parts_in_order_a_text_only_judge_the_placeholder(
    fake: FakeJudge,
) -> None:
    """The logprob method: the vision judge's user message is content parts, each image
    where its marker stood (the prompt's before the completion's), with its data URL; the
    text-only judge's is text with the placeholder and no marker. On main (b6f5204) both
    judges were sent the private-use marker characters as text."""
    batch = await _score(fake)
    seen = [_user(b) for b in fake.script.bodies]
    parts = [c for c in seen if isinstance(c, list)]
    texts = [c for c in seen if isinstance(c, str)]
    assert len(parts) == 2 and len(texts) == 2  # two criteria, one call each per judge
    for content in parts:
        assert _image_urls(content) == [RED.url, BLUE.url]
        kinds = [p["type"] for p in content]
        assert kinds == ["text", "image_url", "text", "image_url", "text"]
        assert "What is in this picture?" in content[0]["text"]
        assert "next to" in content[2]["text"]
        assert MARK_OPEN not in _text(content) and IMAGE_PLACEHOLDER not in _text(content)
    for content in texts:
        assert content.count(IMAGE_PLACEHOLDER) == 2
        assert MARK_OPEN not in content and MARK_CLOSE not in content
        assert "data:image/png" not in content
    judges = batch.items[0].judges
    assert judges["seer"].without_images is False
    assert judges["reader"].without_images is True
    wire = reward_result(batch.items[0]).model_dump()
    assert wire["judges"]["reader"]["without_images"] is True
    assert wire["judges"]["seer"]["without_images"] is False


async def test_an_item_without_images_is_not_flagged_and_its_prompt_is_unchanged(
    fake: FakeJudge,
) -> None:
    """Text items keep their prompts byte for byte (plain strings) and no flag."""
    engine = Engine({"reader": _judge("reader", fake.url, False)})
    rubric = Rubric.model_validate({**RUBRIC.model_dump(exclude={"judges"}), "judges": ["reader"]})
    plain = Rollout("2+2?", "4")
    try:
        batch = await engine.score(rubric, [ItemIn("i", plain)])
    finally:
        await engine.aclose()
    assert all(isinstance(_user(b), str) for b in fake.script.bodies)
    assert batch.items[0].judges["reader"].without_images is False


async def test_the_batched_method_shows_the_images_once_before_its_answer(
    fake: FakeJudge,
) -> None:
    """One batched call per item and judge: the vision judge's carries both images in
    order, the text-only judge's the placeholders."""
    await _score(fake, method="batched")
    seen = [_user(b) for b in fake.script.bodies]
    assert len(seen) == 2
    (parts,) = [c for c in seen if isinstance(c, list)]
    (text,) = [c for c in seen if isinstance(c, str)]
    assert _image_urls(parts) == [RED.url, BLUE.url]
    assert "numbered questions" in _text(parts)
    assert text.count(IMAGE_PLACEHOLDER) == 2


def test_the_completion_api_reads_the_placeholder() -> None:
    """A completion judge's document cannot hold an image: the placeholder stands in."""
    asking = Asking(method_for("logprob"), COMPLETION)
    prompt = criterion_prompt(RUBRIC, RUBRIC.criteria[0], rollout(), asking)
    assert prompt.text is not None and IMAGE_PLACEHOLDER in prompt.text
    assert MARK_OPEN not in prompt.text


def test_a_marker_survives_sanitizing_and_fencing_whole() -> None:
    """A defuser whose model's tokens would match inside a marker cannot break it, and the
    fence holds the marker inside its block."""
    defuser = Defuser(extra_tokens=["image", ":0"])
    text = f"see {image_marker(0)} and image:0 ``` here"
    clean = sanitize(text, defuser)
    assert image_marker(0) in clean
    assert "image:0" not in clean.replace(image_marker(0), "")  # the text's own is broken
    _, blocks = parse_fences(untrusted(text, "response", defuser))
    assert blocks[0][0] == "response" and image_marker(0) in blocks[0][1]


def test_a_marker_cut_by_fitting_leaves_no_sentinel() -> None:
    """A marker half cut away (a fitted trajectory) shows neither image nor sentinel."""
    cut = rollout(f"tail {image_marker(1)[:4]}", BLUE)
    asking = Asking(method_for("logprob"), CHAT, sees=True)
    prompt = criterion_prompt(RUBRIC, RUBRIC.criteria[0], cut, asking)
    assert prompt.messages is not None
    content = prompt.messages[-1]["content"]
    assert _image_urls(content) == [RED.url]
    assert MARK_OPEN not in _text(content)


def test_a_listwise_group_shows_each_completions_images_in_its_own_block() -> None:
    """Each completion's markers index its own rollout's images: re-indexed for the
    group, the images follow their completions when the order shown changes (the
    positions are debiased by showing other orders)."""
    one = rollout(f"red, and {image_marker(1)}", BLUE)
    two = rollout(f"{image_marker(1)} green", GREEN)
    three = rollout("no picture")
    group = fenced_group(
        one.prompt,
        [one.completion, two.completion, three.completion],
        images=[
            one.images,
            two.images,
            three.images,
        ],
    )
    for shown, expected in (((0, 1, 2), [RED, BLUE, GREEN]), ((1, 2, 0), [RED, GREEN, BLUE])):
        prompt = group_prompt(RUBRIC, RUBRIC.criteria[0], group, shown, CHAT, sees=True)
        assert prompt.messages is not None
        content = prompt.messages[-1]["content"]
        assert _image_urls(content) == [i.url for i in expected]
        text = _text(content)
        # Each image sits in its response's block: after its letter, before the next.
        order = [text.find(f"Response {letter}:") for letter in "ABC"]
        assert order == sorted(order)
    blind = group_prompt(RUBRIC, None, group, (0, 1), CHAT, sees=False)
    assert blind.messages is not None
    assert blind.messages[-1]["content"].count(IMAGE_PLACEHOLDER) == 3


def test_images_in_a_listwise_prompt_sit_between_their_letters() -> None:
    """The image part of response B's completion comes after the text naming B and before
    the text naming C."""
    one, two = rollout("plain one"), rollout(f"see {image_marker(1)}", GREEN)
    group = fenced_group(
        one.prompt,
        [one.completion, two.completion, "x"],
        None,
        images=[
            one.images,
            two.images,
            (),
        ],
    )
    prompt = group_prompt(RUBRIC, RUBRIC.criteria[0], group, (0, 1, 2), CHAT, sees=True)
    assert prompt.messages is not None
    content = prompt.messages[-1]["content"]
    green = next(k for k, p in enumerate(content) if p.get("image_url", {}).get("url") == GREEN.url)
    before = "".join(p.get("text", "") for p in content[:green])
    after = "".join(p.get("text", "") for p in content[green:])
    assert "Response B:" in before and "Response C:" not in before
    assert "Response C:" in after


def test_seeing_images_is_part_of_the_cache_identity() -> None:
    """A verdict read from placeholders is not served for the same judge once it sees."""
    url = "http://127.0.0.1:9/v1"
    assert _judge("j", url, True).cache_identity() != _judge("j", url, False).cache_identity()


@pytest.mark.parametrize("vision", [True, False])
def test_the_prompt_cache_keeps_serving_image_items(vision: bool) -> None:
    """The item block cache (``prompts._item_part``) keys by rollout, images included: two
    items that differ only by an image render their own images."""
    asking = Asking(method_for("logprob"), CHAT, sees=vision)
    red = criterion_prompt(RUBRIC, RUBRIC.criteria[0], rollout(), asking)
    other = Rollout(rollout().prompt, rollout().completion, images=(GREEN,))
    green = criterion_prompt(RUBRIC, RUBRIC.criteria[0], other, asking)
    assert red.messages is not None and green.messages is not None
    if vision:
        assert _image_urls(red.messages[-1]["content"]) == [RED.url]
        assert _image_urls(green.messages[-1]["content"]) == [GREEN.url]
    else:
        assert red.messages == green.messages


def test_explain_returns_the_content_parts_a_vision_judge_read(fake: FakeJudge) -> None:
    """options.explain shows what the judge read: for a vision judge, its content parts,
    each image by its hash (its URL is the image: tests/test_image_admission.py).
    On main (b6f5204) the wire model took only text contents and refused the parts."""
    judge = _judge("seer", fake.url, True)
    seen = judge.render(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], rollout())).seen
    result = RewardResult.model_validate(
        {"id": "i", "reward": 0.5, "status": "ok", "explain": {"seer": {"correct": seen}}}
    )
    assert result.explain is not None
    content = result.explain["seer"]["correct"][-1]["content"]  # type: ignore[index]
    assert _image_urls(content) == [f"sha256:{RED.sha256}"]
    assert RED.url not in result.model_dump_json()
