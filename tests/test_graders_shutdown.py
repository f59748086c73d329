"""SIGTERM while a grader is stuck: ``rewardsvc serve`` with fake judges exits within
``shutdown_timeout_s`` + 5 s, and every request it accepted is answered.

The stuck grader is the exponential JSON Schema (its work doubles per level of nesting),
under a grader time limit longer than the shutdown timeout: only the shutdown can end it.
It ran in a thread, which nothing can stop, so the process waited for it (66 s).
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import start_service, stop_service
from fakejudge import FakeJudge
from test_api_support import fake_pool, write_library
from test_graders_hostile import EXPONENTIAL, NESTED_40, json_recipe

SHUTDOWN_TIMEOUT_S = 2.0


@pytest.fixture
def fakes() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    with FakeJudge() as primary, FakeJudge() as secondary:
        yield primary, secondary


async def test_sigterm_with_a_stuck_grader_exits_in_time_and_answers_every_request(
    fakes: tuple[FakeJudge, FakeJudge], tmp_path: Path
) -> None:
    primary, secondary = fakes
    for fake in fakes:
        fake.script.delay_s = 1.0  # the judged request is in flight at SIGTERM
    pool_file = tmp_path / "judges.yaml"
    pool_file.write_text(json.dumps(fake_pool(primary.url, secondary.url).model_dump(mode="json")))
    env = {
        "REWARDSVC_RUBRICS_DIR": str(write_library(tmp_path / "rubrics")),
        "REWARDSVC_JUDGE_POOL": str(pool_file),
        "REWARDSVC_RELOAD": "false",
        "REWARDSVC_CACHE_SIZE": "0",
        "REWARDSVC_SHUTDOWN_TIMEOUT_S": str(SHUTDOWN_TIMEOUT_S),
        "REWARDSVC_GRADER_TIMEOUT_S": "60",
        "REWARDSVC_GRADER_WORKERS": "2",
    }
    service = start_service(env, tmp_path / "service.log")
    try:
        async with httpx.AsyncClient(base_url=service.url, timeout=120) as client:
            stuck = asyncio.ensure_future(
                client.post(
                    "/v1/rewards",
                    json={
                        "rubric": json_recipe(EXPONENTIAL),
                        "items": [{"id": "stuck", "prompt": "p", "completion": NESTED_40}],
                    },
                )
            )
            judged = asyncio.ensure_future(
                client.post(
                    "/v1/rewards",
                    json={
                        "rubric": "tiny",
                        "items": [{"id": "b", "prompt": "2+2?", "completion": "4"}],
                    },
                )
            )
            while primary.script.requests == 0 or secondary.script.requests == 0:
                assert not judged.done(), judged.result().text
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)  # the stuck grader is running too
            service.process.send_signal(signal.SIGTERM)
            sigterm_at = time.monotonic()
            answered = await judged
            cut = await stuck
            # The promise is itself a bound: exit within shutdown_timeout_s + 5 s.
            left = SHUTDOWN_TIMEOUT_S + 5 - (time.monotonic() - sigterm_at)
            assert service.process.wait(timeout=max(left, 0.1)) == 0
        assert answered.status_code == 200, answered.text
        assert answered.json()["results"][0]["status"] == "ok", answered.text
        assert cut.status_code == 200, cut.text
        result = cut.json()["results"][0]
        assert (result["reward"], result["status"]) == (None, "judge_error"), result
        assert result["components"]["g"]["error_kind"] == "deadline", result
    finally:
        stop_service(service)
