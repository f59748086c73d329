"""ROLL's remote reward system routes (/roll/<rubric>/submit_task, /task_result), driven by
ROLL's own client loop as its source has it, against fake judges and, through a 20 s judge
outage behind the fault proxy, the real CPU judges.

ROLL (alibaba/ROLL) is not installable here (the PyPI name ``roll`` 0.13.4 is an unrelated
HTTP framework by pyrates), so its loop is played from
``roll/pipeline/rlvr/rewards/remote_reward_system_worker.py`` at commit
8eb27cc2dc34c4d1310b169d9b86d339004d811a: ``submit_task`` POSTs the payload (5 tries, 1 s
apart, 20 s timeout each) and takes ``reward_request_id`` when ``errcode`` is 0;
``get_task_result`` GETs with the JSON body ``{reward_request_id}`` every 2 s, returns
``reward_score`` on ``errcode`` 0, polls on for any other code, and gives up after the job's
timeout plus 5 s; ``multi_thread_request_reward_system`` submits a sample up to 5 times and
then writes 0 (the delays and timeout are scaled down in the fake-judge tests).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool, settings_for, write_library

from rewardsvc.core.pool import JudgePool
from rewardsvc.server import service as service_module

NEEDS_REFERENCE = """\
id: graded
description: Needs a reference.
criteria:
  - id: correct
    text: The response matches the reference.
judges: [primary]
requires_reference: true
"""


def payload(response: str, ground_truth: str | None = "4", timeout: float = 300) -> dict[str, Any]:
    """ROLL's submit_task body (its fields, as RewardSystemHandler sends them)."""
    info = {"ground_truth": ground_truth} if ground_truth is not None else {}
    return {
        "priority": 1, "project_id": "roll_default_task_id",
        "experiment_id": "roll_default_task_id", "global_step": 3, "data_id": "d1",
        "rollout_id": "r1", "prompt": "What is 2+2?", "response": response,
        "reward_info": info, "reward_manager": [], "timeout": timeout,
    }  # fmt: skip


async def roll_get_reward(
    http: httpx.AsyncClient, base: str, body: dict[str, Any], poll_s: float = 0.05
) -> tuple[float | None, list[int], dict[str, Any]]:
    """ROLL's get_reward: submit (5 tries), then poll until errcode 0 or timeout + 5 s.
    The reward (None when none came), the errcodes the polls saw, the last answer."""
    job = None
    for _ in range(5):
        reply = await http.post(f"{base}/submit_task", json=body)
        if reply.status_code < 300 and int(reply.json().get("errcode", -1)) == 0:
            job = reply.json()["reward_request_id"]
            break
    if job is None:
        return None, [], {}
    codes: list[int] = []
    answer: dict[str, Any] = {}
    started = time.monotonic()
    while time.monotonic() - started < body["timeout"] + 5:
        answer = (await http.request("GET", f"{base}/task_result",
                                     json={"reward_request_id": job})).json()  # fmt: skip
        codes.append(int(answer.get("errcode", -1)))
        if codes[-1] == 0:
            return answer["reward_score"], codes, answer
        await asyncio.sleep(poll_s)
    return None, codes, answer


@pytest.fixture
def pool(fake: FakeJudge) -> JudgePool:
    return fake_pool(fake.url, fake.url)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    folder = write_library(tmp_path / "rubrics")
    (folder / "graded.yaml").write_text(NEEDS_REFERENCE)
    return folder


async def test_roll_job_runs_then_answers_the_reward(library: Path, pool: JudgePool) -> None:
    async with app_client(settings_for(library), pool) as (http, _, _):
        reward, codes, _ = await roll_get_reward(http, "/roll/graded", payload("4"))
        assert reward is not None and 0.0 < reward <= 1.0
        assert codes[-1] == 0 and set(codes) <= {0, 1}
        same = await http.post("/v1/rewards", json={"rubric": "graded", "items": [
            {"prompt": "What is 2+2?", "completion": "4", "reference": "4"}]})  # fmt: skip
        assert same.json()["results"][0]["reward"] == reward


async def test_a_roll_job_is_planned_once(
    library: Path, pool: JudgePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """submit_task plans the sample (to answer a refusal at once) and its job runs that
    plan: the sample was planned a second time when the job started."""
    plans: list[int] = []
    planning = service_module.plan_request

    async def counted(*args: Any, **kwargs: Any) -> Any:
        plans.append(len(args[2]))
        return await planning(*args, **kwargs)

    monkeypatch.setattr(service_module, "plan_request", counted)
    async with app_client(settings_for(library), pool) as (http, _, _):
        reward, _, _ = await roll_get_reward(http, "/roll/graded", payload("4"))
    assert reward is not None
    assert plans == [1]


async def test_roll_judge_outage_fails_the_job_and_the_resubmission_scores(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    # timeout 16 s: the job holds 1 s (16 - 15), then fails (errcode 2, never a reward);
    # ROLL polls on to its deadline and submits again, which the recovered judges score.
    fake.script.default = "400"
    async with app_client(settings_for(library), pool) as (http, _, _):
        submitted = await http.post("/roll/graded/submit_task", json=payload("4", timeout=16))
        job = submitted.json()["reward_request_id"]
        for _ in range(100):
            answer = (await http.get("/roll/graded/task_result",
                                     params={"reward_request_id": job})).json()  # fmt: skip
            if answer["errcode"] != 1:
                break
            await asyncio.sleep(0.1)
        assert answer["errcode"] == 2 and answer["reward_score"] is None
        assert answer["errmsg"].startswith("judge_error")
        fake.script.default = "ok"
        reward, _, _ = await roll_get_reward(http, "/roll/graded", payload("4", timeout=16))
        assert reward is not None and reward > 0.0


async def test_roll_unscorable_unknown_and_bad_polls(library: Path, pool: JudgePool) -> None:
    async with app_client(settings_for(library), pool) as (http, _, _):
        job = (await http.post("/roll/graded/submit_task", json=payload("4", None))).json()
        for _ in range(50):
            answer = (await http.request("GET", "/roll/graded/task_result", json=job)).json()
            if answer["errcode"] != 1:
                break
            await asyncio.sleep(0.05)
        assert answer["errcode"] == 3 and "rejected" in answer["errmsg"]  # no ground_truth
        missing = await http.request("GET", "/roll/graded/task_result",
                                     json={"reward_request_id": "nope"})  # fmt: skip
        assert missing.json()["errcode"] == 4
        assert (await http.get("/roll/graded/task_result")).json()["errcode"] == 4
        unknown = await http.post("/roll/no-such-rubric/submit_task", json=payload("4"))
        assert unknown.status_code == 404


# ------------------------------------------------------------------ live, through an outage


@pytest.mark.judges
@pytest.mark.slow
def test_roll_remote_reward_loop_through_a_judge_outage(
    cpu_pool: JudgePool, tmp_path: Path
) -> None:
    from test_trainer_packages import service_reward
    from trainers.harness import outage, proxied_service

    with proxied_service(tmp_path) as (service, proxies):
        base = f"{service.url}/roll/short-answer-correctness"

        async def score(response: str) -> tuple[float | None, list[int], dict[str, Any]]:
            async with httpx.AsyncClient(timeout=20) as http:  # ROLL's 20 s per request
                return await roll_get_reward(http, base, payload(response, "5"), poll_s=2.0)

        before, _, _ = asyncio.run(score("5"))
        assert before == service_reward(service, "5", "5", "What is 2+2?")

        with outage(proxies):
            during, codes, last = asyncio.run(score("Five."))
        assert 1 in codes  # ROLL saw it running while the judges were down
        expected = service_reward(service, "Five.", "5", "What is 2+2?")
        status = last["dimention_reward_score"]["rewardsvc"]["status"]
        # The job held through the outage: the real reward (degraded: fewer judges, flagged).
        assert during is not None
        assert during == expected if status == "ok" else 0.0 <= during <= 1.0
