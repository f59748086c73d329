"""Trainer routes under judge outages: no made-up reward, one count per request, one record
per answer, a drain that waits for held requests.

Judges fail with a 400 from the fake (not retried by the backend, no circuit breaker), so
each scoring of a ``tiny`` sample costs 4 judge calls (2 judges x 2 criteria) and comes
back ``judge_error``. The trainers' retry loops are played the way their sources do them
(see tests/test_compat.py): OpenRLHF 5 tries, slime 10, the same body each time.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import start_service, stop_service
from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool, settings_for, write_library

from rewardsvc.core.pool import JudgePool
from rewardsvc.server.compat import OPENRLHF_TRIES, SLIME_TRIES
from rewardsvc.server.holding import Attempts
from rewardsvc.server.service import Service

PROMPT = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
OPENRLHF_BODY = {"query": [PROMPT + "4<|im_end|>"], "prompts": [PROMPT], "labels": ["4"]}
SLIME_SAMPLE = {"prompt": "What is 2+2?", "response": "4", "label": "4"}

NEEDS_REFERENCE = """\
id: graded
description: Needs a reference.
criteria:
  - id: correct
    text: The response matches the reference.
judges: [primary]
requires_reference: true
"""


@pytest.fixture
def pool(fake: FakeJudge) -> JudgePool:
    return fake_pool(fake.url, fake.url)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    folder = write_library(tmp_path / "rubrics")
    (folder / "graded.yaml").write_text(NEEDS_REFERENCE)
    return folder


def log_lines(log: Path) -> list[dict[str, Any]]:
    """The reward lines of a reward log (event lines left out)."""
    if not log.exists():
        return []
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [line for line in lines if "event" not in line]


# ------------------------------------------------------------------ slime: no bare 0.0


async def test_slime_number_never_answers_a_made_up_reward(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    # slime stores a 200's number as the reward: on its last try too, judges that failed
    # must give an error slime raises on, never a 0.0 it would train on.
    fake.script.default = "400"
    async with app_client(settings_for(library), pool) as (http, _, _):
        for _ in range(SLIME_TRIES + 1):
            reply = await http.post("/slime/tiny?hold=0", json=SLIME_SAMPLE)
            assert reply.status_code == 503, reply.text
            assert reply.json()["error"] == "judge_error"
        # The judges recover: the same sample gets its real reward.
        fake.script.default = "ok"
        reply = await http.post("/slime/tiny?hold=0", json=SLIME_SAMPLE)
        assert reply.status_code == 200
        assert isinstance(reply.json(), float) and 0.0 < reply.json() <= 1.0


@pytest.mark.parametrize("format", ["number", "dict"])
async def test_slime_sample_that_cannot_be_scored_is_a_422_naming_its_field(
    library: Path, pool: JudgePool, fake: FakeJudge, format: str
) -> None:
    settings = settings_for(library, max_text_chars=100)
    async with app_client(settings, pool) as (http, _, _):
        reply = await http.post(
            f"/slime/graded?format={format}", json={"prompt": "2+2?", "response": "4"}
        )
        assert reply.status_code == 422, reply.text
        body = reply.json()
        assert body["error"] == "invalid_request" and body["field"] == "label"
        assert body["message"].startswith("label: ")
        reply = await http.post(f"/slime/tiny?format={format}", json={"response": "x" * 200})
        assert reply.status_code == 422, reply.text
        assert reply.json()["field"] == "response"
    assert fake.script.requests == 0


# ------------------------------------------------------------------ tries per request


async def test_identical_samples_in_flight_together_do_not_share_a_try_count(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    # Five identical GRPO samples on their first try: all five are first tries (503, so
    # that OpenRLHF retries), none is taken for a fifth try and answered 0.0.
    fake.script.default = "400"
    async with app_client(settings_for(library), pool) as (http, _, _):
        replies = await asyncio.gather(
            *(http.post("/openrlhf/tiny?hold=0", json=OPENRLHF_BODY) for _ in range(5))
        )
    assert [r.status_code for r in replies] == [503] * 5


async def openrlhf_tries(http: httpx.AsyncClient, url: str) -> tuple[int, dict[str, Any]]:
    """OpenRLHF's loop (5 tries, a pause between them): the try that got a 200, its JSON."""
    for attempt in range(1, OPENRLHF_TRIES + 1):
        reply = await http.post(url, json=OPENRLHF_BODY)
        if reply.status_code == 200:
            return attempt, reply.json()
        assert reply.status_code == 503, reply.text
        await asyncio.sleep(0.05)
    raise AssertionError("no reward after OpenRLHF's 5 tries")


async def test_each_request_keeps_its_own_count_to_the_trainers_last_try(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    fake.script.default = "400"
    async with app_client(settings_for(library), pool) as (http, _, _):
        chains = await asyncio.gather(
            *(openrlhf_tries(http, "/openrlhf/tiny?hold=0") for _ in range(5))
        )
        # Every sample got its flagged failure on its own 5th try, not earlier.
        assert [attempt for attempt, _ in chains] == [OPENRLHF_TRIES] * 5
        for _, reply in chains:
            assert reply["rewards"] == [0.0]
            assert reply["extra_logs"]["rewardsvc_valid"] == [0.0]
            assert reply["extra_logs"]["rewardsvc_judge_error"] == [1.0]
        # Answered: the same sample sent again is a new sample's first try.
        reply = await http.post("/openrlhf/tiny?hold=0", json=OPENRLHF_BODY)
        assert reply.status_code == 503


def test_attempts_count_tries_per_refusal() -> None:
    now = [0.0]
    attempts = Attempts(size=2, retry_within_s=10, clock=lambda: now[0])
    assert attempts.begin("u", "a") == attempts.begin("u", "a") == 1  # two in flight
    attempts.refused("u", "a", 1)
    attempts.refused("u", "a", 1)
    assert attempts.begin("u", "a") == attempts.begin("u", "a") == 2  # both retried
    assert attempts.begin("u", "a") == 1  # a third copy is a new sample
    attempts.refused("u", "a", 2)
    now[0] = 11.0  # no retry came in time: the token is gone
    assert attempts.begin("u", "a") == 1
    for body in ("a", "b", "c"):
        attempts.refused("u", body, 1)
    assert attempts.begin("u", "a") == 1  # bounded: the oldest body was forgotten
    assert attempts.begin("u", "c") == 2
    assert attempts.begin("v", "c") == 1  # another route or query is another sample


# ------------------------------------------------------------------ one record per answer


async def test_a_held_sample_is_logged_and_monitored_once(
    library: Path, pool: JudgePool, fake: FakeJudge, tmp_path: Path
) -> None:
    log = tmp_path / "rewards.jsonl"
    # The first two scorings fail (4 calls each); the hold scores a third time.
    fake.script.queue.extend(["400"] * 8)
    async with app_client(settings_for(library, reward_log=log), pool) as (http, app, _):
        reply = await http.post("/openrlhf/tiny?run=held", json=OPENRLHF_BODY)
        assert reply.status_code == 200
        assert reply.json()["extra_logs"]["rewardsvc_valid"] == [1.0]
        assert fake.script.requests == 12
        service: Service = app.state.service
        assert service.monitor is not None
        (state,) = service.monitor.runs(rubric="tiny", run="held")
        assert state.samples == 1
    lines = log_lines(log)
    assert len(lines) == 1
    assert lines[0]["status"] == "ok" and lines[0]["run"] == "held"


async def test_an_outage_is_recorded_once_with_the_answer(
    library: Path, pool: JudgePool, fake: FakeJudge, tmp_path: Path
) -> None:
    # OpenRLHF's 5 tries: four 503s record nothing (the trainer retries them); the flagged
    # answer of the last one is the sample's one line and one monitor sample.
    log = tmp_path / "rewards.jsonl"
    fake.script.default = "400"
    async with app_client(settings_for(library, reward_log=log), pool) as (http, app, _):
        attempt, reply = await openrlhf_tries(http, "/openrlhf/tiny?hold=0&run=down")
        assert attempt == OPENRLHF_TRIES and reply["extra_logs"]["rewardsvc_judge_error"] == [1.0]
        for _ in range(3):
            assert (await http.post("/slime/tiny?hold=0&run=down", json=SLIME_SAMPLE)).is_error
        service: Service = app.state.service
        assert service.monitor is not None
        (state,) = service.monitor.runs(rubric="tiny", run="down")
        assert state.samples == 1
    lines = log_lines(log)
    assert [(line["status"], line["reward"]) for line in lines] == [("judge_error", None)]


# ------------------------------------------------------------------ drain


async def test_drain_waits_for_a_held_request_and_it_is_answered(
    library: Path, pool: JudgePool, fake: FakeJudge, tmp_path: Path
) -> None:
    log = tmp_path / "rewards.jsonl"
    fake.script.default = "400"
    async with app_client(settings_for(library, reward_log=log), pool) as (http, app, _):
        held = asyncio.ensure_future(http.post("/openrlhf/tiny?hold=100", json=OPENRLHF_BODY))
        while fake.script.requests < 4:  # its first scoring failed: it pauses, held
            await asyncio.sleep(0.02)
        service: Service = app.state.service
        finished = await service.drain(timeout_s=60)
        # The drain waited for the held request, which stopped holding and answered (a
        # 503 for OpenRLHF to retry elsewhere) instead of being dropped with the process.
        assert finished
        reply = await asyncio.wait_for(held, 10)
        assert reply.status_code == 503 and reply.json()["error"] == "judge_error"
        assert (await http.post("/openrlhf/tiny", json=OPENRLHF_BODY)).status_code == 503
    assert log_lines(log) == []


async def test_sigterm_answers_a_held_request_before_the_process_exits(
    library: Path, pool: JudgePool, fake: FakeJudge, tmp_path: Path
) -> None:
    # ``rewardsvc serve`` with the fake judges failing: a request held between its tries
    # when SIGTERM comes is answered (503, so that OpenRLHF retries elsewhere), not cut.
    fake.script.default = "400"
    pool_file = tmp_path / "judges.json"  # JSON is YAML
    pool_file.write_text(json.dumps(pool.model_dump(mode="json", exclude_defaults=True)))
    env = {
        "REWARDSVC_RUBRICS_DIR": str(library),
        "REWARDSVC_JUDGE_POOL": str(pool_file),
        "REWARDSVC_RELOAD": "false",
        "REWARDSVC_SHUTDOWN_TIMEOUT_S": "60",
    }
    service = start_service(env, tmp_path / "service.log")
    try:
        async with httpx.AsyncClient(base_url=service.url, timeout=180) as http:
            held = asyncio.ensure_future(http.post("/openrlhf/tiny?hold=100", json=OPENRLHF_BODY))
            while fake.script.requests < 4:
                await asyncio.sleep(0.05)
            service.process.send_signal(signal.SIGTERM)
            reply = await held
        assert reply.status_code == 503, reply.text
        assert reply.json()["error"] == "judge_error"
        assert await asyncio.to_thread(service.process.wait, 60) == 0
    finally:
        stop_service(service)


# ------------------------------------------------------------------ groups and preferences


async def test_groups_and_preferences_are_logged_with_their_run(
    library: Path, pool: JudgePool, fake: FakeJudge, tmp_path: Path
) -> None:
    log = tmp_path / "rewards.jsonl"
    group = {"id": "g", "prompt": "2+2?", "completions": ["4", "5"], "metadata": {"step": 3}}
    pair = {"id": "p", "prompt": "2+2?", "a": "4", "b": "5", "metadata": {"step": 4}}
    async with app_client(settings_for(library, reward_log=log), pool) as (http, _, _):
        reply = await http.post(
            "/v1/groups",
            json={"rubric": "tiny", "groups": [group, {"prompt": "x"}], "run": "cmp"},
        )
        assert reply.status_code == 200, reply.text
        reply = await http.post(
            "/v1/preferences", json={"rubric": "tiny", "pairs": [pair], "run": "cmp"}
        )
        assert reply.status_code == 200, reply.text
        answered = reply.json()["results"][0]
    lines = log_lines(log)
    assert [(line["kind"], line["id"], line["run"]) for line in lines] == [
        ("group", "g", "cmp"),
        ("group", "1", "cmp"),
        ("preference", "p", "cmp"),
    ]
    first, rejected, preference = lines
    assert first["metadata"] == {"step": 3} and first["status"] in ("ok", "degraded")
    assert len(first["rewards"]) == 2 and all(isinstance(r, float) for r in first["rewards"])
    assert rejected["status"] == "rejected" and rejected["rewards"] == []
    assert preference["metadata"] == {"step": 4}
    assert preference["p_a_better"] == answered["p_a_better"]
    assert preference["label"] == answered["label"]
