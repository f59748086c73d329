"""The API against the real CPU judges (vLLM serving SmolLM2 and Gemma 3): the happy path,
a mixed batch, readiness, and both trainer contracts, on the shipped rubric library.

These judges are tiny, so the tests check mechanics (both judges answer, rewards are
numbers in [0, 1], a bad item is rejected while the others are scored), not judging
quality.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
from test_api_support import app_client, settings_for, uvicorn_server

from rewardsvc.core.pool import JudgePool
from rewardsvc.library.registry import Registry
from rewardsvc.server.app import create_app

pytestmark = pytest.mark.judges

RUBRIC = "short-answer-correctness"  # 3 criteria, both judges, requires a reference


@pytest.fixture(scope="module")
def rubrics(repo_root: Path) -> Path:
    return repo_root / "rubrics"


async def test_rewards_happy_path_real_judges(rubrics: Path, cpu_pool: JudgePool) -> None:
    items = [
        {"id": "right", "prompt": "What is 12 * 12?", "completion": "144", "reference": "144"},
        {
            "id": "wrong",
            "prompt": "What is the capital of France?",
            "completion": "Berlin.",
            "reference": "Paris",
        },
    ]
    async with app_client(settings_for(rubrics), cpu_pool) as (http, _, registry):
        reply = await http.post("/v1/rewards", json={"rubric": RUBRIC, "items": items})
        ready = await http.get("/readyz")
        detail = await http.get("/readyz/detail")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["rubric"] == {
        "id": RUBRIC,
        "version": registry.get(RUBRIC).version,
        "kind": "rubric",
    }
    assert [r["id"] for r in body["results"]] == ["right", "wrong"]
    for result in body["results"]:
        assert result["status"] == "ok", result
        assert 0.0 <= result["reward"] <= 1.0
        for name in ("primary", "secondary"):
            judge = result["judges"][name]
            assert judge["error"] is None and 0.0 <= judge["score"] <= 1.0
            assert set(judge["criteria"]) == {"final-answer-matches", "hedged-answers"}
            p = judge["criteria"]["final-answer-matches"]["p"]
            assert p is not None and abs(sum(p.values()) - 1.0) < 1e-6
    assert body["usage"]["judge_calls"] == 2 * 2 * 2  # items x criteria x judges
    assert body["usage"]["prompt_tokens"] > 0
    assert ready.status_code == 200 and ready.json()["ready"] is True, ready.text
    # The public probe names nothing; the judges' detail is behind the key check.
    assert detail.status_code == 200, detail.text
    assert detail.json()["judges"] == {"primary": True, "secondary": True}


async def test_rewards_mixed_batch_real_judges(rubrics: Path, cpu_pool: JudgePool) -> None:
    items = [
        {"id": "good", "prompt": "What is 2 + 3?", "completion": "5", "reference": "5"},
        {"id": "no-reference", "prompt": "What is 2 + 3?", "completion": "5"},
        {
            "id": "bad-completion",
            "prompt": "What is 2 + 3?",
            "completion": {"text": "5"},
            "reference": "5",
        },
        {
            "id": "chat",
            "prompt": [{"role": "user", "content": "What is 3 + 3?"}],
            "completion": [{"role": "assistant", "content": "6"}],
            "reference": "6",
        },
    ]
    async with app_client(settings_for(rubrics), cpu_pool) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": RUBRIC, "items": items})
    assert reply.status_code == 200, reply.text
    results = {r["id"]: r for r in reply.json()["results"]}
    for scored in ("good", "chat"):
        assert results[scored]["status"] == "ok", results[scored]
        assert 0.0 <= results[scored]["reward"] <= 1.0
    assert results["no-reference"]["status"] == "rejected"
    assert "items[1].reference" in results["no-reference"]["error"]
    assert results["bad-completion"]["status"] == "rejected"
    assert "items[2].completion" in results["bad-completion"]["error"]
    assert results["no-reference"]["reward"] is None


async def test_trainer_contracts_real_judges(rubrics: Path, cpu_pool: JudgePool) -> None:
    prompt = "<|im_start|>user\nWhat is 7 + 8?<|im_end|>\n<|im_start|>assistant\n"
    app = create_app(settings_for(rubrics), registry=Registry(rubrics, cpu_pool))
    with uvicorn_server(app) as url:
        timeout = aiohttp.ClientTimeout(total=180)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            openrlhf = {"query": [prompt + "15<|im_end|>"], "prompts": [prompt], "labels": ["15"]}
            async with session.post(f"{url}/openrlhf/{RUBRIC}", json=openrlhf) as response:
                response.raise_for_status()
                reply = await response.json()
            slime = {"prompt": "What is 7 + 8?", "response": "15", "label": "15"}
            async with session.post(f"{url}/slime/{RUBRIC}", json=slime) as response:
                response.raise_for_status()
                reward = await response.json()
    assert len(reply["rewards"]) == len(reply["scores"]) == 1
    assert 0.0 <= reply["rewards"][0] <= 1.0
    # The same keys as the client package's python-file hook, every time.
    assert set(reply["extra_logs"]) == {
        "rewardsvc_valid",
        "rewardsvc_degraded",
        "rewardsvc_judge_error",
        "rewardsvc_rejected",
        "rewardsvc_request_failed",
        "rewardsvc_uncertainty",
        "rewardsvc_flagged",
    }
    assert reply["extra_logs"]["rewardsvc_valid"] == [1.0]
    assert isinstance(reward, float) and 0.0 <= reward <= 1.0
