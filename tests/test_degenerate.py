"""Degenerate input from a collapsed policy: endless runs of one character or token, and text
that is not valid Unicode.

Long runs go to the live service on the real CPU judges while ``/healthz`` is polled: each
is scored or rejected, and the liveness probe keeps answering while it is worked on (a
detector that backtracks would hold the event loop, and the probe with it). Lone
surrogates and NUL characters, in every field of an item, reject that item alone, naming
the field; the others are scored, the rejected id is echoed JSON-escaped, and the reward
log keeps one line per item.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from conftest import Service
from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool, settings_for, write_library

from rewardsvc.core.pool import JudgePool

LONG = 100_000

# Control tokens of the chat templates of several families, repeated.
CONTROL_TOKENS = (
    "<|im_start|>system\n<|im_end|><|eot_id|><|start_header_id|>assistant<|end_header_id|>"
    "<｜end▁of▁sentence｜><｜Assistant｜>[SYSTEM_PROMPT][/SYSTEM_PROMPT][TOOL_CALLS][INST]"
    "<start_of_turn>model<end_of_turn></s><|endoftext|>"
)


def repeated(unit: str, length: int = LONG) -> str:
    """``unit`` repeated to exactly ``length`` characters."""
    return (unit * (length // len(unit) + 1))[:length]


DEGENERATE = {
    "newlines": repeated("\n"),
    "spaces": repeated(" "),
    "rating-then-spaces": "Rating: " + repeated(" ", LONG - 8),
    "open-tags": repeated("<a "),
    "backticks": repeated("`"),
    "control-tokens": repeated(CONTROL_TOKENS),
}

HEALTH_TIMEOUT_S = 5.0
"""Each health poll's own timeout, as a liveness probe would have (k8s' default is 1 s)."""


async def poll_health(
    client: httpx.AsyncClient, scoring: asyncio.Future[Any]
) -> tuple[int, list[str]]:
    """Poll /healthz until ``scoring`` is done: the polls answered while it was pending, and
    the failures (timeouts, non-200s) of every poll."""
    answered_during = 0
    failures: list[str] = []
    while not scoring.done():
        try:
            reply = await client.get("/healthz", timeout=HEALTH_TIMEOUT_S)
        except httpx.TransportError as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
            continue
        if reply.status_code != 200:
            failures.append(f"HTTP {reply.status_code}")
        elif not scoring.done():
            answered_during += 1
        await asyncio.sleep(0.05)
    return answered_during, failures


@pytest.mark.judges
@pytest.mark.parametrize("shape", list(DEGENERATE))
async def test_long_degenerate_completion(service: Service, shape: str) -> None:
    """A 100,000-character degenerate completion is scored or rejected, and the health
    endpoint answers while it is worked on."""
    body = {
        "rubric": "helpful-answer",
        "items": [
            {
                "id": "degenerate",
                "prompt": "Explain photosynthesis.",
                "completion": DEGENERATE[shape],
            },
            {"id": "normal", "prompt": "What is 2 + 2?", "completion": "2 + 2 = 4."},
        ],
    }
    async with httpx.AsyncClient(base_url=service.url, timeout=300) as client:
        scoring = asyncio.ensure_future(client.post("/v1/rewards", json=body))
        answered, failures = await poll_health(client, scoring)
        reply = await scoring
    assert not failures, failures
    assert answered >= 1, "no health answer arrived while the request was worked on"
    assert reply.status_code == 200, reply.text[:500]
    degenerate, normal = reply.json()["results"]
    assert degenerate["id"] == "degenerate" and normal["id"] == "normal"
    assert degenerate["status"] in ("ok", "degraded", "rejected"), json.dumps(degenerate)[:2000]
    if degenerate["status"] == "rejected":
        assert degenerate["reward"] is None and degenerate["error"], degenerate
    else:
        assert 0.0 <= degenerate["reward"] <= 1.0, degenerate
    assert normal["status"] in ("ok", "degraded"), normal


@pytest.mark.judges
async def test_text_over_the_limit_is_rejected_alone(service: Service) -> None:
    """One character over max_text_chars rejects that item, naming its field."""
    body = {
        "rubric": "helpful-answer",
        "items": [
            {"id": "long", "prompt": "Say hi.", "completion": repeated("hi ", LONG + 1)},
            {"id": "short", "prompt": "Say hi.", "completion": "Hi!"},
        ],
    }
    async with httpx.AsyncClient(base_url=service.url, timeout=300) as client:
        reply = await client.post("/v1/rewards", json=body)
    assert reply.status_code == 200, reply.text[:500]
    long, short = reply.json()["results"]
    assert long["status"] == "rejected" and "completion" in long["error"], long
    assert short["status"] in ("ok", "degraded"), short


# ------------------------------------------------------------------ invalid Unicode and NUL

SURROGATE = "\ud800"
NUL = "\x00"

GOOD = {"prompt": "What is 2 + 2?", "completion": "4", "reference": "4"}


def bad_item(place: str, bad: str) -> tuple[dict[str, Any], str]:
    """An item with ``bad`` text in ``place``, and the field path its rejection must name."""
    text = f"x{bad}y"
    item: dict[str, Any] = {"id": "bad", **GOOD}
    field = f"items[1].{place}"
    if place in ("id", "prompt", "completion", "reference"):
        item[place] = text
    elif place == "prompt-message":
        item["prompt"] = [{"role": "user", "content": text}]
        field = "items[1].prompt[0].content"
    elif place == "completion-message":
        item["completion"] = [{"role": "assistant", "content": text}]
        field = "items[1].completion[0].content"
    elif place == "content-part":
        item["completion"] = [{"role": "assistant", "content": [{"type": "text", "text": text}]}]
        field = "items[1].completion[0].content[0].text"
    elif place == "message-role":
        item["prompt"] = [{"role": text, "content": "hi"}]
        field = "items[1].prompt[0].role"
    elif place == "metadata":
        item["metadata"] = {"note": text}
        field = "items[1].metadata.note"
    elif place == "metadata-key":
        item["metadata"] = {text: 1}
        field = "items[1].metadata"
    else:
        raise ValueError(place)
    return item, field


PLACES = [
    "id",
    "prompt",
    "completion",
    "reference",
    "prompt-message",
    "completion-message",
    "content-part",
    "message-role",
    "metadata",
    "metadata-key",
]


@pytest_asyncio.fixture(loop_scope="function")
async def logged_client(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Path]]:
    """The app in-process on fake judges, with a reward log."""
    with FakeJudge() as primary, FakeJudge() as secondary:
        pool: JudgePool = fake_pool(primary.url, secondary.url)
        library = write_library(tmp_path / "rubrics")
        log = tmp_path / "rewards.jsonl"
        settings = settings_for(library, reward_log=log)
        async with app_client(settings, pool) as (client, _, _):
            yield client, log


def escaped(text: str) -> str:
    """How an id with a lone surrogate or NUL is echoed: the escape written out."""
    return text.replace(SURROGATE, "\\ud800").replace(NUL, "\\x00")


async def read_log(log: Path, count: int) -> list[dict[str, Any]]:
    """The reward log's records once it holds ``count`` lines (written by a thread)."""
    for _ in range(200):
        if log.exists() and len(log.read_text().splitlines()) >= count:
            break
        await asyncio.sleep(0.02)
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("bad", [SURROGATE, NUL], ids=["surrogate", "nul"])
@pytest.mark.parametrize("place", PLACES)
async def test_invalid_text_rejects_only_its_item(
    logged_client: tuple[httpx.AsyncClient, Path], place: str, bad: str
) -> None:
    """A lone surrogate or NUL anywhere in an item rejects it alone, naming the field."""
    client, log = logged_client
    item, field = bad_item(place, bad)
    batch = [{"id": "first", **GOOD}, item, {"id": "last", **GOOD}]
    # ensure_ascii writes the lone surrogate as the JSON escape a client would send.
    body = json.dumps({"rubric": "tiny", "items": batch}, ensure_ascii=True)
    reply = await client.post(
        "/v1/rewards", content=body, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200, reply.text[:500]
    reply.content.decode("utf-8", errors="strict")
    first, rejected, last = reply.json()["results"]
    assert first["status"] == "ok" and last["status"] == "ok", (first, last)
    assert rejected["status"] == "rejected" and rejected["reward"] is None, rejected
    assert field in rejected["error"], rejected["error"]
    expected_id = escaped(item["id"])
    assert rejected["id"] == expected_id
    records = await read_log(log, 3)
    assert [r["id"] for r in records] == ["first", expected_id, "last"]
    assert [r["status"] for r in records] == ["ok", "rejected", "ok"]
