"""Work a request leaves the service holding (ROLL jobs, ORS sessions and calls, held trainer
requests, explain output) is admitted before it is held, bounded as a whole and per key,
and belongs to the key that started it (issue 36, items 1, 2, 3, 10, 11, 12 and 16)."""

from __future__ import annotations

import asyncio
import gc
import json
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakejudge import FakeJudge
from rewardlog import reward_lines
from test_api_support import app_client, fake_pool, settings_for, write_library
from test_compat_roll import NEEDS_REFERENCE, payload
from test_ors import events, write_env

from rewardsvc.core.pool import JudgePool
from rewardsvc.server import compat_roll
from rewardsvc.server.ledger import TASK_CHARGE_BYTES

MiB = 1024 * 1024
ADMIN, TEAM_A, OTHER = "admin-0123456789", "team-a-0123456789", "other-0123456789"
SCOPES = [
    {"key": TEAM_A, "name": "team-a", "runs": ["a-*"], "rubrics": ["tiny"]},
    {"key": OTHER, "name": "other", "runs": ["o-*"], "rubrics": ["strict"]},
]


def key(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def fake() -> Iterator[FakeJudge]:
    with FakeJudge() as judge:
        yield judge


@pytest.fixture
def pool(fake: FakeJudge) -> JudgePool:
    return fake_pool(fake.url, fake.url, timeout_s=10)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path / "rubrics")


async def poll(http: httpx.AsyncClient, job: str, token: str = ADMIN) -> dict[str, Any]:
    """A job's answer once it is not running."""
    for _ in range(300):
        answer: dict[str, Any] = (
            await http.get(
                "/roll/any/task_result", params={"reward_request_id": job}, headers=key(token)
            )
        ).json()
        if answer["errcode"] != 1:
            return answer
        await asyncio.sleep(0.05)
    raise AssertionError(f"job {job} still running")


# ------------------------------------------------------------------ ROLL


async def test_roll_refusals_are_answered_at_submit(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    settings = settings_for(
        library, api_keys=ADMIN, api_key_scopes=json.dumps(SCOPES), max_text_chars=2_000_000,
        max_prompt_bytes_per_request=MiB,
    )  # fmt: skip
    async with app_client(settings, pool) as (http, app, _):
        outside = await http.post(
            "/roll/tiny/submit_task?run=b-run", json=payload("4"), headers=key(TEAM_A)
        )
        # 600 KB asked of 2 criteria by 2 judges plans over 1 MiB of prompts.
        big = await http.post(
            "/roll/tiny/submit_task", json=payload("4" * 600_000), headers=key(ADMIN)
        )
        other_rubric = await http.post(
            "/roll/strict/submit_task", json=payload("4"), headers=key(TEAM_A)
        )
    for reply, status, field in ((outside, 403, "run"), (big, 413, "max_prompt_bytes_per_request"),
                                 (other_rubric, 403, "rubric")):  # fmt: skip
        assert reply.status_code == status, reply.text
        # The usual ErrorDetail: ROLL's client counts a submit that is not a 2xx as failed.
        assert reply.json()["field"] == field and "reward_request_id" not in reply.json()
    assert not getattr(app.state, "roll_jobs", None) or not app.state.roll_jobs.jobs
    assert fake.script.requests == 0


async def test_roll_jobs_are_held_work_bounded_and_released(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    fake.script.default, fake.script.delay_s = "timeout", 1.0
    response = "4 " * 150_000  # 300 KB: three jobs fit in 1 MiB of held work, a fourth not
    settings = settings_for(
        library, max_held_bytes=MiB + 1, max_body_bytes=MiB, max_text_chars=400_000
    )
    async with app_client(settings, pool) as (http, app, _):
        replies = [
            await http.post("/roll/tiny/submit_task", json=payload(response)) for _ in range(4)
        ]
        ledger = app.state.service.ledger
        held = ledger.held_bytes
        assert [r.status_code for r in replies] == [200, 200, 200, 429]
        assert [r.json()["errcode"] for r in replies[:3]] == [0, 0, 0]
        full = replies[3]
        assert full.status_code == 429 and full.json()["field"] == "max_held_bytes"
        assert "Retry-After" in full.headers
        assert 3 * 300_000 < held <= 3 * (300_000 + 2_000 + TASK_CHARGE_BYTES)
        answers = [await poll(http, r.json()["reward_request_id"]) for r in replies[:3]]
        assert all(a["errcode"] == 0 for a in answers)
        assert ledger.held_bytes == 0 and not ledger.per_holder
        again = await http.post("/roll/tiny/submit_task", json=payload(response))
        assert again.json()["errcode"] == 0
        await poll(http, again.json()["reward_request_id"])
        # A finished job keeps its answer only: no task, no exception, no sample text.
        for job in app.state.roll_jobs.jobs.values():
            assert job.task is None and len(job.answer.model_dump_json()) < 1024


class _Sample:
    """Something a job's frames hold (weakly referable, unlike the sample's text)."""

    def __init__(self) -> None:
        self.text = "x" * MiB


async def test_a_failed_job_keeps_no_exception(
    library: Path, pool: JudgePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    held: list[weakref.ref[_Sample]] = []

    async def failing(*args: Any, **kwargs: Any) -> Any:
        sample = _Sample()  # a local of the failing frame, as the item text is
        held.append(weakref.ref(sample))
        raise RuntimeError("the scoring broke")

    monkeypatch.setattr(compat_roll, "score_holding", failing)
    async with app_client(settings_for(library), pool) as (http, _, _):
        job = (await http.post("/roll/tiny/submit_task", json=payload("4"))).json()
        answer = await poll(http, job["reward_request_id"])
        gc.collect()
        assert answer["errcode"] == 2 and answer["errmsg"].startswith("internal_error"), answer
        assert held and held[0]() is None, "the finished job keeps its exception's frames"


async def test_a_job_is_polled_only_by_its_key(library: Path, pool: JudgePool) -> None:
    settings = settings_for(library, api_keys=f"{ADMIN},{TEAM_A}x")
    async with app_client(settings, pool) as (http, _, _):
        job = (
            await http.post("/roll/tiny/submit_task", json=payload("4"), headers=key(ADMIN))
        ).json()
        theirs = await http.get("/roll/tiny/task_result", params=job, headers=key(f"{TEAM_A}x"))
        assert theirs.json()["errcode"] == 4 and theirs.json()["reward_score"] is None
        assert (await poll(http, job["reward_request_id"]))["errcode"] == 0


async def test_roll_resubmissions_of_a_failed_sample_are_logged_once(
    library: Path, pool: JudgePool, fake: FakeJudge, tmp_path: Path
) -> None:
    log = tmp_path / "rewards.jsonl"
    fake.script.default = "400"  # judges refuse every call (a 400 opens no circuit breaker)
    body = payload("4", timeout=15)  # held 0 s: a job fails as soon as its judges do
    async with app_client(settings_for(library, reward_log=log), pool) as (http, _, _):
        for _ in range(3):  # ROLL submits a failed sample again, up to 5 times
            job = (await http.post("/roll/tiny/submit_task", json=body)).json()
            assert (await poll(http, job["reward_request_id"]))["errcode"] == 2
        assert reward_lines(log) == []
        fake.script.default = "ok"
        job = (await http.post("/roll/tiny/submit_task", json=body)).json()
        assert (await poll(http, job["reward_request_id"]))["errcode"] == 0
        monitored = (await http.get("/v1/monitor")).json()
    (line,) = reward_lines(log)
    assert line["reward"] is not None
    assert sum(r["samples"] for r in monitored["runs"]) == 1


@pytest.mark.parametrize("why", ["judge_error", "rejected"])
async def test_the_fifth_job_without_a_reward_is_logged(
    library: Path, pool: JudgePool, fake: FakeJudge, tmp_path: Path, why: str
) -> None:
    log = tmp_path / "rewards.jsonl"
    (library / "graded.yaml").write_text(NEEDS_REFERENCE)
    if why == "judge_error":
        fake.script.default = "400"
    body = payload("4", ground_truth="4" if why == "judge_error" else None, timeout=15)
    async with app_client(settings_for(library, reward_log=log), pool) as (http, _, _):
        for n in range(5):
            job = (await http.post("/roll/graded/submit_task", json=body)).json()
            await poll(http, job["reward_request_id"])
            assert len(reward_lines(log)) == (1 if n == 4 else 0)
    (line,) = reward_lines(log)
    assert line["reward"] is None and line["status"] == why


# ------------------------------------------------------------------ trainer holds, explain


async def test_held_trainer_requests_count_against_their_key(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    fake.script.default = "500"
    settings = settings_for(library, max_held_per_key=1)
    async with app_client(settings, pool) as (http, app, _):
        body = {"query": ["q 4"], "prompts": ["q "], "labels": ["4"]}
        held = asyncio.create_task(http.post("/openrlhf/tiny?hold=2", json=body))
        ledger = app.state.service.ledger
        for _ in range(100):
            if ledger.per_holder:
                break
            await asyncio.sleep(0.02)
        second = await http.post("/openrlhf/tiny?hold=2", json={**body, "query": ["q 5"]})
        assert second.status_code == 429 and second.json()["field"] == "max_held_per_key"
        assert (await held).status_code == 503  # its own hold ran out: the trainer retries
    assert ledger.held_bytes == 0


def _explained_bytes(answer: dict[str, Any]) -> int:
    seen = [r["explain"] for r in answer["results"]]
    return sum(len(json.dumps(s, ensure_ascii=False).encode()) for s in seen)


async def test_explain_is_bounded_before_anything_is_rendered(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    limit = 256 * 1024
    settings = settings_for(library, max_explain_bytes=limit)
    item = {"prompt": "What is 2+2?", "completion": "4 " * 5_000, "reference": "4"}
    body: dict[str, Any] = {"rubric": "tiny", "options": {"explain": True}}
    async with app_client(settings, pool) as (http, _, _):
        fits = await http.post("/v1/rewards", json={**body, "items": [item] * 4})
        over = await http.post("/v1/rewards", json={**body, "items": [item] * 40})
        plain = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [item] * 40})
    assert fits.status_code == 200, fits.text
    # What explain returns is bounded by the prompt bytes it planned.
    assert 4 * 4 * 10_000 < _explained_bytes(fits.json()) <= limit
    assert over.status_code == 413, over.text
    assert over.json()["field"] == "options.explain"
    assert "max_explain_bytes" in over.json()["message"]
    assert plain.status_code == 200  # the bound is explain's own


# ------------------------------------------------------------------ ORS


@pytest.fixture
def ors_settings(library: Path, tmp_path: Path) -> Any:
    def make(**overrides: Any) -> Any:
        env = write_env(tmp_path / "env")
        return settings_for(library, ors_environments=[env], **overrides)

    return make


async def _session(http: httpx.AsyncClient, token: str = ADMIN) -> str:
    sid = events((await http.post("/create_session", headers=key(token))).text)[0][1]
    opened = await http.post(
        "/create",
        json={"split": "train", "index": 0, "env_name": "tiny-env"},
        headers={"X-Session-ID": sid, **key(token)},
    )
    assert opened.status_code == 200, opened.text
    return sid


async def test_ors_calls_waiting_for_their_session_are_held_work(
    ors_settings: Any, pool: JudgePool, fake: FakeJudge
) -> None:
    fake.script.default, fake.script.delay_s = "timeout", 1.0
    settings = ors_settings(
        api_keys=ADMIN, max_held_bytes=MiB + 1, max_body_bytes=MiB, max_text_chars=400_000
    )
    answer = {"answer": "4 " * 150_000}
    async with app_client(settings, pool) as (http, app, _):
        sid = await _session(http)
        headers = {"X-Session-ID": sid, **key(ADMIN)}
        calls = [
            http.post("/tiny-env/call", json={"name": "answer", "input": answer}, headers=headers)
            for _ in range(5)
        ]
        replies = await asyncio.gather(*calls)
        ledger = app.state.service.ledger
        statuses = sorted(r.status_code for r in replies)
        refused = [r for r in replies if r.status_code == 429]
        assert statuses == [200, 200, 200, 429, 429], statuses
        assert all(r.json()["field"] == "max_held_bytes" and r.json()["detail"] for r in refused)
        # Only the session itself is held once its calls ended.
        assert ledger.held_bytes < 16 * 1024 and sum(ledger.per_holder.values()) == 1


async def test_ors_sessions_belong_to_their_key_and_reads_keep_to_scope(
    ors_settings: Any, pool: JudgePool
) -> None:
    keys = ",".join([ADMIN, f"{ADMIN}-b"])
    settings = ors_settings(api_keys=keys, api_key_scopes=json.dumps(SCOPES))
    async with app_client(settings, pool) as (http, _, _):
        sid = await _session(http)
        b = {"X-Session-ID": sid, **key(f"{ADMIN}-b")}
        assert (await http.get("/tiny-env/prompt", headers=b)).status_code == 404
        assert (await http.post("/delete", headers=b)).status_code == 200
        mine = {"X-Session-ID": sid, **key(ADMIN)}
        assert (await http.post("/ping", headers=mine)).status_code == 200  # not deleted
        assert (await http.get("/tiny-env/prompt", headers=mine)).status_code == 200
        # A key scoped to other rubrics reads no task of the environment and opens no session.
        split = {"split": "train"}
        elsewhere = await http.post("/tiny-env/tasks", json=split, headers=key(OTHER))
        assert elsewhere.status_code == 403 and elsewhere.json()["field"] == "env"
        sid2 = events((await http.post("/create_session", headers=key(OTHER))).text)[0][1]
        opened = await http.post(
            "/create",
            json={"split": "train", "index": 0, "env_name": "tiny-env"},
            headers={"X-Session-ID": sid2, **key(OTHER)},
        )
        assert opened.status_code == 403
        allowed = await http.post("/tiny-env/tasks", json=split, headers=key(TEAM_A))
        assert allowed.status_code == 200


# ------------------------------------------------------------------ readiness


async def test_readiness_detail_names_only_the_keys_rubrics(library: Path) -> None:
    down = fake_pool("http://127.0.0.1:9", "http://127.0.0.1:9", timeout_s=1)
    settings = settings_for(library, api_keys=ADMIN, api_key_scopes=json.dumps(SCOPES))
    async with app_client(settings, down) as (http, _, registry):
        admin = (await http.get("/readyz/detail", headers=key(ADMIN))).json()
        team = (await http.get("/readyz/detail", headers=key(TEAM_A))).json()
    assert "strict" in admin["message"] and "tiny" in admin["message"]
    assert admin["rubrics"] == len(registry.entries()) > 1
    assert "tiny" in team["message"] and "strict" not in team["message"], team
    assert team["rubrics"] == 1 and team["ready"] is admin["ready"] is False
