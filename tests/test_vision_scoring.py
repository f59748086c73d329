"""Vision judges in the pool and the library (issue 40): ``capabilities.vision`` and
``image_tokens``, a rubric's ``media: [image]`` refused with file and line when none of its
judges sees images, image tokens in the context check, and groups scored with images
through the engine's group path (each completion's images in its own block, the
text-only judge flagged ``without_images``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge, RecordingObserver
from pydantic import ValidationError
from vision_items import BLUE, GREEN, RED, rollout

from rewardsvc.application.wire import group_response, preference_response
from rewardsvc.core.media import MARK_CLOSE, MARK_OPEN, image_marker
from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rollout import ItemIn, Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.imagery import IMAGE_PLACEHOLDER
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.reward_model import conversation
from rewardsvc.library.registry import Registry, validation_context
from rewardsvc.safety.defuse import DEFAULT_DEFUSER
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import score_groups
from rewardsvc.scoring.preferences import judge_preferences
from rewardsvc.storage.cache import VerdictCache

POOL = JudgePool.model_validate(
    {
        "judges": {
            "seer": {
                "model": "vlm",
                "base_urls": ["http://127.0.0.1:9/v1"],
                "capabilities": {"vision": True},
            },
            "reader": {"model": "llm", "base_urls": ["http://127.0.0.1:9/v1"]},
        }
    }
)

RUBRIC_FILE = """\
id: {id}
description: Answers about a picture.
criteria:
  - id: correct
    text: The answer names what the picture shows.
judges: {judges}
media: [image]
"""


def test_a_rubric_with_images_and_no_judge_that_sees_is_refused_with_file_and_line(
    tmp_path: Path,
) -> None:
    """The registry refuses the file at its ``media`` line, naming the judges and the
    capability; the same rubric with a vision judge beside the text-only one is served.
    On main (b6f5204) ``media`` was an unknown field, refused for any pool."""
    (tmp_path / "blind.yaml").write_text(RUBRIC_FILE.format(id="blind", judges="[reader]"))
    (tmp_path / "mixed.yaml").write_text(RUBRIC_FILE.format(id="mixed", judges="[seer, reader]"))
    registry = Registry(tmp_path, POOL)
    assert registry.get("mixed").rubric.media == ["image"]
    problems = registry.errors()[str(tmp_path / "blind.yaml")]
    assert len(problems) == 1
    problem = problems[0]
    assert problem.line == 7  # the media: line
    assert problem.path.startswith("media")
    assert "'reader'" in problem.message and "vision: true" in problem.message
    assert str(problem).startswith(f"{tmp_path / 'blind.yaml'}:7:")


def test_a_rubric_without_media_keeps_its_version() -> None:
    """``media`` unset leaves the rubric's version as it was (the verdict cache holds)."""
    doc = {
        "id": "v",
        "criteria": [{"id": "c", "text": "The answer is right."}],
        "judges": ["reader"],
    }
    plain = Rubric.model_validate(doc, context=validation_context(POOL))
    assert "media" not in plain.model_dump(mode="json")
    with pytest.raises(ValidationError, match="none of its judges"):
        Rubric.model_validate({**doc, "media": ["image"]}, context=validation_context(POOL))


@pytest.mark.parametrize(
    "extra",
    [
        {"api": "completion"},
        {"method": "reward_model"},
        {"tools": {"allowed": ["run_code"], "auto_turns": 1}},
    ],
)
def test_vision_needs_the_chat_api(extra: dict[str, Any]) -> None:
    """Images reach a judge as chat content parts only: vision elsewhere is refused."""
    with pytest.raises(ValidationError, match=r"capabilities\.vision"):
        JudgeConfig(
            model="m", base_urls=["http://127.0.0.1:9/v1"], capabilities={"vision": True}, **extra
        )


def _judge(name: str, url: str, vision: bool, **extra: Any) -> Judge:
    capabilities = {"vision": vision, **extra.pop("capabilities", {})}
    config = JudgeConfig(
        model="fake", base_urls=[url], timeout_s=5.0, capabilities=capabilities, **extra
    )
    return Judge(name, config, observer=RecordingObserver())


RUBRIC = Rubric.model_validate(
    {
        "id": "picture",
        "criteria": [{"id": "correct", "text": "The answer names what the picture shows."}],
        "judges": ["seer", "reader"],
    }
)


async def test_the_context_check_counts_image_tokens(fake: FakeJudge) -> None:
    """With ``image_tokens`` per image, a prompt whose text fits but whose images do not
    is refused before the call (context_overflow, no request sent); the same item without
    its images is sent. On main the images counted nothing."""
    judge = _judge(
        "seer", fake.url, True, max_context_tokens=1200, capabilities={"image_tokens": 500}
    )
    two = rollout(f"A red square and {image_marker(1)} a blue one.", BLUE)
    without = Rollout(two.prompt.replace(image_marker(0), ""), "A red square and a blue one.")
    try:
        refused = await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], two))
        assert refused.error_kind == "context_overflow"
        assert "2 images" in (refused.error or "")
        assert fake.script.requests == 0
        sent = await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], without))
    finally:
        await judge.aclose()
    assert sent.ok and fake.script.requests == 1


async def test_a_group_with_images_reaches_the_vision_judge_in_each_block(
    fake: FakeJudge,
) -> None:
    """Listwise through the group path: every comparison the vision judge is sent holds
    the prompt's image first, then each completion's in the order shown; the text-only
    judge's hold the placeholder, and its per-judge output says without_images."""
    judges = {"seer": _judge("seer", fake.url, True), "reader": _judge("reader", fake.url, False)}
    members = (
        rollout(f"blue: {image_marker(1)}", BLUE),
        rollout(f"green: {image_marker(1)}", GREEN),
        rollout("no picture of mine"),
    )
    try:
        batch = await score_groups(judges, RUBRIC, [GroupIn("g", members)], GroupOptions(orders=2))
    finally:
        for j in judges.values():
            await j.aclose()
    contents = [b["messages"][-1]["content"] for b in fake.script.bodies]
    seen = [c for c in contents if isinstance(c, list)]
    assert seen and len(seen) == len(contents) // 2
    orders = set()
    for content in seen:
        urls = [p["image_url"]["url"] for p in content if p["type"] == "image_url"]
        assert urls[0] == RED.url and sorted(urls[1:]) == sorted([BLUE.url, GREEN.url])
        text = "".join(p.get("text", "") for p in content)
        first = "blue" if text.find("blue:") < text.find("green:") else "green"
        assert urls[1] == (BLUE.url if first == "blue" else GREEN.url)
        orders.add(first)
    assert orders == {"blue", "green"}  # the debiasing orders moved the images too
    out = group_response(batch).results[0].judges
    assert out["reader"].without_images is True and out["seer"].without_images is False


def test_a_reward_model_reads_the_placeholder() -> None:
    """A reward model reads text only: its conversation holds the placeholder where each
    image stood, never the marker characters. On main the markers went as they were."""
    messages = conversation(rollout(f"see {image_marker(1)}", BLUE), DEFAULT_DEFUSER)
    text = "".join(m["content"] for m in messages)
    assert text.count(IMAGE_PLACEHOLDER) == 2
    assert MARK_OPEN not in text and MARK_CLOSE not in text


async def test_the_verdict_cache_keys_by_the_image_bytes(fake: FakeJudge) -> None:
    """The same image again is a cache hit; another image in the same text is a miss and
    is sent to the judge: the call's key holds ``Rollout.digest``, which hashes each
    image's bytes."""
    engine = Engine({"seer": _judge("seer", fake.url, True)}, cache=VerdictCache(max_entries=100))
    rubric = Rubric.model_validate({**RUBRIC.model_dump(exclude={"judges"}), "judges": ["seer"]})
    red, other = rollout(), Rollout(rollout().prompt, rollout().completion, images=(GREEN,))
    try:
        await engine.score(rubric, [ItemIn("a", red)])
        again = await engine.score(rubric, [ItemIn("b", red)])
        assert again.usage.cache_hits == 1 and fake.script.requests == 1
        changed = await engine.score(rubric, [ItemIn("c", other)])
    finally:
        await engine.aclose()
    assert changed.usage.cache_hits == 0 and fake.script.requests == 2
    sent = fake.script.bodies[-1]["messages"][-1]["content"]
    assert [p["image_url"]["url"] for p in sent if p["type"] == "image_url"] == [GREEN.url]


async def test_a_pair_with_images_flags_the_text_only_judge(fake: FakeJudge) -> None:
    """``/v1/preferences``' path: both orders reach the vision judge with a's and b's
    images in their blocks; the text-only judge's verdict says without_images."""
    judges = {"seer": _judge("seer", fake.url, True), "reader": _judge("reader", fake.url, False)}
    pair = GroupIn("p", (rollout(f"blue {image_marker(1)}", BLUE), rollout("no picture")))
    try:
        batch = await judge_preferences(judges, RUBRIC, [pair])
    finally:
        for j in judges.values():
            await j.aclose()
    seen = [b["messages"][-1]["content"] for b in fake.script.bodies]
    parts = [c for c in seen if isinstance(c, list)]
    assert len(parts) == 2  # orders ab and ba
    for content in parts:
        assert [p["image_url"]["url"] for p in content if p["type"] == "image_url"] == [
            RED.url,
            BLUE.url,
        ]
    out = preference_response(batch).results[0].judges
    assert out["reader"].without_images is True and out["seer"].without_images is False
