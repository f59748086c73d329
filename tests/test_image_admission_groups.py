"""Images in the admission of groups and preferences (after issue 37).

A comparison call to a judge that sees images carries the prompt's images and those of
every completion it shows; a question asked of one completion alone (an essential gate,
graded per completion) carries that completion's rollout's, as ``/v1/rewards`` asks it.
Each image's ``data:`` URL is the whole image in base64, counted once per call that sends
it (``imagery.sent_bytes``, as ``/v1/rewards`` counts it), so a group whose images push it
over ``max_prompt_bytes_per_request`` is refused with 413 before any judge is called.
``options.explain`` shows such an image by its hash, and is admitted on its text alone.

On 9c69746 groups and preferences counted their calls' text only: the requests of large
images below were admitted and every comparison sent.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from test_api_support import app_client, settings_for
from test_image_admission import CRITERIA, LARGE, MIB, SMALL, _library, _pool
from test_vision_scoring import _judge
from vision_items import BLUE, RED, rollout

from rewardsvc.core.media import image_marker
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.imagery import IMAGE_PLACEHOLDER, PART_BYTES
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import plan_groups

GATED = """\
id: gated
description: Answers about a picture, each answer gated alone.
criteria:
{criteria}
judges: [seer]
"""


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """``seen`` and ``read`` (four compared criteria), and ``gated`` (four essential gates,
    each asked of every completion alone)."""
    folder = _library(tmp_path / "rubrics")
    criteria = "\n".join(
        f"  - id: g{k}\n    category: essential\n    gate: 0.5\n"
        f"    text: The answer is right about the picture, part {k}."
        for k in range(CRITERIA)
    )
    (folder / "gated.yaml").write_text(GATED.format(criteria=criteria))
    return folder


def _shown(url: str) -> list[dict[str, Any]]:
    """A message showing the image of ``url``."""
    parts = [{"type": "text", "text": "Look:"}, {"type": "image_url", "image_url": {"url": url}}]
    return [{"role": "user", "content": parts}]


def _group(prompt: Any, *completions: Any) -> dict[str, Any]:
    return {"id": "g", "prompt": prompt, "completions": list(completions)}


async def test_a_group_whose_prompt_image_each_comparison_carries_is_refused(
    library: Path, fake: FakeJudge
) -> None:
    """Four criteria in two orders: eight comparisons each carry the prompt's large image,
    more than 1 MiB: 413 naming the limit, no judge called. A text-only judge's, or a small
    image's, is admitted and compared."""
    settings = settings_for(library, max_prompt_bytes_per_request=MIB)
    group = _group(_shown(LARGE), "A square.", "A circle.")
    async with app_client(settings, _pool(fake)) as (http, _, _):
        refused = await http.post("/v1/groups", json={"rubric": "seen", "groups": [group]})
        assert refused.status_code == 413, refused.text
        assert "max_prompt_bytes_per_request" in refused.text
        assert fake.script.requests == 0
        read = await http.post("/v1/groups", json={"rubric": "read", "groups": [group]})
        assert read.status_code == 200, read.text
        assert read.json()["results"][0]["status"] == "ok", read.text
        assert fake.script.requests == 2 * CRITERIA
        assert all(LARGE not in str(body) for body in fake.script.bodies)
        small = _group(_shown(SMALL), "A square.", "A circle.")
        seen = await http.post("/v1/groups", json={"rubric": "seen", "groups": [small]})
    assert seen.status_code == 200, seen.text
    assert seen.json()["results"][0]["status"] == "ok", seen.text
    assert fake.script.requests == 4 * CRITERIA
    assert all(SMALL in str(body) for body in fake.script.bodies[2 * CRITERIA :])


async def test_a_pair_whose_completion_carries_a_large_image_is_refused(
    library: Path, fake: FakeJudge
) -> None:
    """The image of completion a rides in both orders of each of the four criteria:
    eight calls, more than 1 MiB. The same pair with a small image is judged."""
    settings = settings_for(library, max_prompt_bytes_per_request=MIB)

    def pair(url: str) -> dict[str, Any]:
        a = [{"role": "assistant", "content": _shown(url)[0]["content"]}]
        return {"id": "p", "prompt": "Draw a square.", "a": a, "b": "No picture."}

    async with app_client(settings, _pool(fake)) as (http, _, _):
        refused = await http.post(
            "/v1/preferences", json={"rubric": "seen", "pairs": [pair(LARGE)]}
        )
        assert refused.status_code == 413, refused.text
        assert "max_prompt_bytes_per_request" in refused.text
        assert fake.script.requests == 0
        judged = await http.post("/v1/preferences", json={"rubric": "seen", "pairs": [pair(SMALL)]})
        assert judged.status_code == 200, judged.text
        assert fake.script.requests == 2 * CRITERIA
        assert all(SMALL in str(body) for body in fake.script.bodies)
        body = {"rubric": "gated", "pairs": [pair(SMALL)], "options": {"explain": True}}
        explained = await http.post("/v1/preferences", json=body)
    assert explained.status_code == 200, explained.text
    side = explained.json()["results"][0]["explain"]["a"]["seer"]["g0"]
    parts = [p for m in side if isinstance(m["content"], list) for p in m["content"]]
    data = _decoded(SMALL)
    shown = {"url": f"sha256:{hashlib.sha256(data).hexdigest()}", "bytes": len(data)}
    assert [p["image_url"] for p in parts if p["type"] == "image_url"] == [shown]


async def test_questions_of_one_completion_alone_carry_its_images(
    library: Path, fake: FakeJudge
) -> None:
    """Four gates asked of each completion alone: the four calls on the completion with
    the large image carry it, more than 1 MiB; without it, the eight calls are sent."""
    settings = settings_for(library, max_prompt_bytes_per_request=MIB)
    drawn = [{"role": "assistant", "content": _shown(LARGE)[0]["content"]}]
    async with app_client(settings, _pool(fake)) as (http, _, _):
        group = _group("Draw a square.", drawn, "No picture.")
        refused = await http.post("/v1/groups", json={"rubric": "gated", "groups": [group]})
        assert refused.status_code == 413, refused.text
        assert "max_prompt_bytes_per_request" in refused.text
        assert fake.script.requests == 0
        plain = _group("Draw a square.", "A square.", "No picture.")
        scored = await http.post("/v1/groups", json={"rubric": "gated", "groups": [plain]})
    assert scored.status_code == 200, scored.text
    assert fake.script.requests == 2 * CRITERIA


async def test_explain_on_a_group_shows_its_images_by_hash(library: Path, fake: FakeJudge) -> None:
    """Explain returns what the gates of each completion alone read: the image as
    ``sha256:<hex>`` and its size, never its base64; the answer is admitted on its text
    (64 KiB), though its eight calls carry the image each."""
    url = LARGE
    data_hash = hashlib.sha256(_decoded(url)).hexdigest()
    settings = settings_for(library, max_explain_bytes=64 * 1024)
    group = _group(_shown(url), "A square.", "A circle.")
    body = {"rubric": "gated", "groups": [group], "options": {"explain": True}}
    async with app_client(settings, _pool(fake)) as (http, _, _):
        reply = await http.post("/v1/groups", json=body)
    assert reply.status_code == 200, reply.text
    (result,) = reply.json()["results"]
    assert len(result["explain"]) == 2
    for per_completion in result["explain"]:
        assert sorted(per_completion["seer"]) == [f"g{k}" for k in range(CRITERIA)]
        for messages in per_completion["seer"].values():
            parts = [p for m in messages if isinstance(m["content"], list) for p in m["content"]]
            images = [p["image_url"] for p in parts if p["type"] == "image_url"]
            assert images == [{"url": f"sha256:{data_hash}", "bytes": len(_decoded(url))}]
    assert url.split(",", 1)[1][:64] not in reply.text
    assert all(url in str(sent) for sent in fake.script.bodies)


def _decoded(url: str) -> bytes:
    return base64.b64decode(url.split(",", 1)[1])


async def test_a_comparison_counts_the_images_of_the_completions_it_shows(
    fake: FakeJudge,
) -> None:
    """Pairwise over three completions, only the first with an image of its own: each
    comparison to the vision judge counts the prompt's image and, when it shows the first
    completion, that one too (part and URL); the text-only judge's, a placeholder each."""
    judges = {"seer": _judge("seer", fake.url, True), "reader": _judge("reader", fake.url, False)}
    rubric = Rubric.model_validate(
        {"id": "pic", "criteria": [{"id": "c", "text": "Right."}], "judges": ["seer", "reader"]}
    )
    members = (rollout(f"blue: {image_marker(1)}", BLUE), rollout("no"), rollout("none"))
    group = GroupIn("g", members)
    try:
        plans = [
            await plan_groups(judges, rubric, [group], GroupOptions("pairwise", judges=(name,)))
            for name in ("seer", "reader")
        ]
    finally:
        for j in judges.values():
            await j.aclose()
    seen, read = (p.cost for p in plans)
    assert fake.script.requests == 0
    shows = [a.comparison.shown for a in plans[0].asked if a.comparison is not None]
    assert len(shows) == seen.calls == read.calls >= 4
    with_blue = sum(0 in shown for shown in shows)
    assert 0 < with_blue < len(shows)
    assert seen.image_bytes == len(shows) * len(RED.url) + with_blue * len(BLUE.url)
    assert seen.shown_bytes == seen.prompt_bytes - seen.image_bytes
    assert read.image_bytes == 0 and read.shown_bytes == read.prompt_bytes
    parts = len(shows) + with_blue
    placeholder = len(IMAGE_PLACEHOLDER.encode())
    added = parts * (PART_BYTES - placeholder) + seen.image_bytes
    assert seen.prompt_bytes - read.prompt_bytes == added
