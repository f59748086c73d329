"""The group path through the whole service: comparison verdicts are cached, and group
rewards reach the reward monitor as batch rewards do."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool, settings_for, write_library

PROMPT = "What is the capital of France?"
GROUP = {
    "id": "g",
    "prompt": PROMPT,
    "completions": ["Paris.", "Lyon.", "The capital is Paris.", "I like turtles."],
}
BODY = {"rubric": "tiny", "run": "grouped", "groups": [GROUP]}


@pytest.fixture
def fakes() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    with FakeJudge() as primary, FakeJudge() as secondary:
        yield primary, secondary


@pytest_asyncio.fixture(loop_scope="function")
async def client(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> AsyncIterator[httpx.AsyncClient]:
    pool = fake_pool(fakes[0].url, fakes[1].url)
    async with app_client(settings_for(write_library(tmp_path / "rubrics")), pool) as running:
        yield running[0]


async def test_a_second_identical_group_call_is_answered_from_the_cache(
    client: httpx.AsyncClient, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    first = await client.post("/v1/groups", json=BODY)
    assert first.status_code == 200, first.text
    sent = sum(f.script.requests for f in fakes)
    assert sent > 0
    second = await client.post("/v1/groups", json=BODY)
    assert second.status_code == 200, second.text
    assert sum(f.script.requests for f in fakes) == sent  # no new judge requests
    assert second.json()["results"] == first.json()["results"]


async def test_another_order_of_the_same_texts_is_not_a_cache_hit(
    client: httpx.AsyncClient, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    await client.post("/v1/groups", json=BODY)
    sent = sum(f.script.requests for f in fakes)
    shuffled = {**GROUP, "completions": list(reversed(GROUP["completions"]))}
    reply = await client.post("/v1/groups", json={**BODY, "groups": [shuffled]})
    assert reply.status_code == 200, reply.text
    assert sum(f.script.requests for f in fakes) > sent


async def test_identical_preferences_are_answered_from_the_cache(
    client: httpx.AsyncClient, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    body = {"rubric": "tiny", "pairs": [{"id": "p", "prompt": PROMPT, "a": "Paris.", "b": "Lyon."}]}
    first = await client.post("/v1/preferences", json=body)
    assert first.status_code == 200, first.text
    sent = sum(f.script.requests for f in fakes)
    second = await client.post("/v1/preferences", json=body)
    assert second.status_code == 200, second.text
    assert sum(f.script.requests for f in fakes) == sent
    assert second.json()["results"] == first.json()["results"]


async def test_group_rewards_show_up_in_the_monitor_of_their_run(
    client: httpx.AsyncClient,
) -> None:
    reply = await client.post("/v1/groups", json=BODY)
    assert reply.status_code == 200, reply.text
    body = (await client.get("/v1/monitor", params={"rubric": "tiny", "run": "grouped"})).json()
    assert [(r["rubric"], r["run"]) for r in body["runs"]] == [("tiny", "grouped")]
    run = body["runs"][0]
    assert run["samples"] == len(GROUP["completions"]), run


async def test_preference_rewards_show_up_in_the_monitor_of_their_run(
    client: httpx.AsyncClient,
) -> None:
    pair = {"id": "p", "prompt": PROMPT, "a": "Paris.", "b": "Lyon."}
    body = {"rubric": "tiny", "run": "paired", "pairs": [pair]}
    reply = await client.post("/v1/preferences", json=body)
    assert reply.status_code == 200, reply.text
    seen = (await client.get("/v1/monitor", params={"rubric": "tiny", "run": "paired"})).json()
    assert [(r["rubric"], r["run"]) for r in seen["runs"]] == [("tiny", "paired")]
    assert seen["runs"][0]["samples"] == 2, seen["runs"][0]
