"""The ORS routes in process, over fake judges: environment and task files, the protocol's
shapes as the ``openreward`` client reads them, and every way a call ends (a reward, a
rejected answer, a judge failure, a finished episode). The real client, against the real
judges, is in test_ors_client.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fakejudge import FakeJudge

from rewardsvc.library.yamlfile import InvalidFile
from rewardsvc.ors.environments import load_environment
from rewardsvc.server.app import create_app
from tests.test_api_support import (
    app_client,
    fake_pool,
    settings_for,
    write_library,
)

# One app for the module's tests (each opens its own sessions): building one takes seconds.
pytestmark = pytest.mark.asyncio(loop_scope="module")

TASKS = [
    {"prompt": "What is 2+2?", "reference": "4", "metadata": {"level": 1}},
    {"id": "cap", "prompt": [{"role": "user", "content": "Capital of France?"}], "split": "test"},
]


def write_env(folder: Path, target: str = "tiny", **extra: Any) -> Path:
    """An environment file over ``target`` with TASKS as JSON Lines beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    lines = [f"name: {extra.pop('name', 'tiny-env')}", f"target: {target}", "tasks: tasks.jsonl"]
    lines += [f"{k}: {json.dumps(v)}" for k, v in extra.items()]
    env = folder / "env.yaml"
    env.write_text("\n".join(lines) + "\n")
    return env


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    with FakeJudge() as primary, FakeJudge() as secondary:
        yield primary, secondary


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ors(
    tmp_path_factory: pytest.TempPathFactory, fakes: tuple[FakeJudge, FakeJudge]
) -> AsyncIterator[httpx.AsyncClient]:
    tmp_path = tmp_path_factory.mktemp("ors")
    settings = settings_for(
        write_library(tmp_path / "rubrics"), ors_environments=[write_env(tmp_path / "env")]
    )
    async with app_client(settings, fake_pool(fakes[0].url, fakes[1].url)) as (client, _, _):
        yield client


def events(text: str) -> list[tuple[str, str]]:
    """The SSE events of a stream, as the ``openreward`` client parses them."""
    found = []
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if not line.startswith(":")
        )
        if "event" in fields:
            found.append((fields["event"], fields.get("data", "")))
    return found


async def session(client: httpx.AsyncClient, split: str = "train", index: int = 0) -> str:
    created = await client.post("/create_session")
    assert events(created.text)[0][0] == "task_id"
    sid = events(created.text)[0][1]
    body = {"split": split, "index": index, "env_name": "tiny-env"}
    opened = await client.post("/create", json=body, headers={"X-Session-ID": sid})
    assert opened.status_code == 200, opened.text
    return sid


async def call(client: httpx.AsyncClient, sid: str, given: dict[str, Any]) -> list[Any]:
    body = {"name": "answer", "input": given}
    done = await client.post("/tiny-env/call", json=body, headers={"X-Session-ID": sid})
    assert done.status_code == 200 and done.headers["content-type"].startswith("text/event")
    return events(done.text)


async def test_splits_tasks_and_tools_hide_the_reference(ors: httpx.AsyncClient) -> None:
    assert (await ors.get("/tiny-env/splits")).json() == [
        {"name": "train", "type": "train"},
        {"name": "test", "type": "test"},
    ]
    tasks = (await ors.post("/tiny-env/tasks", json={"split": "train"})).json()
    assert tasks == {
        "tasks": [{"id": "train-0", "split": "train", "index": 0, "metadata": {"level": 1}}],
        "env_name": "tiny-env",
    }
    # The bare routes serve the first environment (a client that names none).
    assert (await ors.post("/num_tasks", json={"split": "test"})).json() == {"num_tasks": 1}
    task = (await ors.post("/task", json={"split": "test", "index": 0})).json()
    assert task["task"]["id"] == "cap"
    tools = (await ors.get("/tools")).json()
    assert [t["name"] for t in tools["tools"]] == ["answer"]
    assert tools["tools"][0]["input_schema"]["required"] == ["answer"]
    assert tools["supports_score_group"] is False
    bad = await ors.post("/tiny-env/tasks", json={"split": "nope"})
    assert bad.status_code == 400 and "Invalid split" in bad.json()["detail"]
    assert (await ors.get("/other/splits")).status_code == 404


async def test_an_answer_gets_the_reward_of_v1_rewards_and_finishes(
    ors: httpx.AsyncClient,
) -> None:
    sid = await session(ors)
    prompt = await ors.get("/tiny-env/prompt", headers={"X-Session-ID": sid})
    assert prompt.json() == [{"text": "What is 2+2?", "detail": None, "type": "text"}]
    got = await call(ors, sid, {"answer": "4"})
    assert [e for e, _ in got] == ["task_id", "end"]
    outcome = json.loads(got[-1][1])
    assert outcome["ok"] is True and outcome["output"]["finished"] is True
    item = {"id": "train-0", "prompt": "What is 2+2?", "completion": "4", "reference": "4"}
    item["metadata"] = {"level": 1}
    direct = (await ors.post("/v1/rewards", json={"rubric": "tiny", "items": [item]})).json()
    assert outcome["output"]["reward"] == direct["results"][0]["reward"] is not None
    assert outcome["output"]["metadata"]["status"] == "ok"
    assert outcome["output"]["metadata"]["rubric"]["id"] == "tiny"
    again = json.loads((await call(ors, sid, {"answer": "5"}))[-1][1])
    assert again == {
        "ok": False,
        "error": "'answer' was not run: the episode has finished",
        "reason": "episode_finished",
    }


async def test_judges_down_is_a_stream_error_never_a_reward(
    ors: httpx.AsyncClient, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    sid = await session(ors, "test", 0)
    for fake in fakes:
        fake.script.default = "500"
    try:
        got = await call(ors, sid, {"answer": "Paris"})
    finally:
        for fake in fakes:
            fake.script.default = "ok"
    assert [e for e, _ in got] == ["task_id", "error"]
    assert got[-1][1].startswith("judge_error")
    # The episode did not finish: once the judges are back, the answer is scored.
    outcome = json.loads((await call(ors, sid, {"answer": "Paris"}))[-1][1])
    assert outcome["ok"] is True and isinstance(outcome["output"]["reward"], float)


async def test_malformed_calls_are_tool_errors_the_policy_can_fix(ors: httpx.AsyncClient) -> None:
    sid = await session(ors)
    wrong_tool = await ors.post(
        "/tiny-env/call", json={"name": "bash", "input": {}}, headers={"X-Session-ID": sid}
    )
    assert json.loads(events(wrong_tool.text)[-1][1])["reason"] == "not_found"
    for given in ({}, {"answer": 4}, {"answer": "4", "extra": 1}):
        outcome = json.loads((await call(ors, sid, given))[-1][1])
        assert outcome["ok"] is False and outcome["reason"] == "input_validation"
    # An answer the scoring rejects (longer than max_text_chars) is one too, not a 0.
    outcome = json.loads((await call(ors, sid, {"answer": "x" * 200_001}))[-1][1])
    assert outcome["reason"] == "input_validation" and outcome["error"].startswith("rejected")
    assert json.loads((await call(ors, sid, {"answer": "4"}))[-1][1])["ok"] is True


async def test_sessions_are_only_on_served_tasks(ors: httpx.AsyncClient) -> None:
    sid = "s-1"
    for body in (
        {"task_spec": {"id": "train-0", "split": "train", "index": 0, "prompt": "mine"}},
        {"split": "train", "index": 1},
        {"split": "train", "index": 0, "toolset_name": "codex"},
    ):
        refused = await ors.post("/create", json=body, headers={"X-Session-ID": sid})
        assert refused.status_code == 400, body
    served = {"id": "train-0", "split": "train", "index": 0, "metadata": {"level": 1}}
    opened = await ors.post("/create", json={"task_spec": served}, headers={"X-Session-ID": sid})
    assert opened.json() == {"sid": sid}
    assert (await ors.post("/ping", headers={"X-Session-ID": sid})).json() == {"status": "ok"}
    assert (await ors.post("/delete", headers={"X-Session-ID": sid})).status_code == 200
    gone = await ors.post("/ping", headers={"X-Session-ID": sid})
    assert gone.status_code == 404 and gone.json()["detail"] == "Active environment not found"
    unknown = await ors.get("/tiny-env/prompt", headers={"X-Session-ID": "nobody"})
    assert unknown.status_code == 404


async def test_a_resumed_call_replays_its_result(ors: httpx.AsyncClient) -> None:
    sid = await session(ors)
    first = await call(ors, sid, {"answer": "4"})
    task_id = first[0][1]
    body = {"name": "answer", "input": {"answer": "4"}, "task_id": task_id}
    again = await ors.post("/tiny-env/call", json=body, headers={"X-Session-ID": sid})
    assert events(again.text) == first  # the same outcome, not "episode finished"
    body["task_id"] = "unknown"
    lost = await ors.post("/tiny-env/call", json=body, headers={"X-Session-ID": sid})
    assert events(lost.text) == [("error", "unknown task_id")]


async def test_the_client_api_key_header_is_accepted(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    settings = settings_for(
        write_library(tmp_path / "rubrics"),
        ors_environments=[write_env(tmp_path / "env")],
        api_keys="k1",
    )
    async with app_client(settings, fake_pool(fakes[0].url, fakes[1].url)) as (client, _, _):
        assert (await client.get("/tiny-env/splits")).status_code == 401
        ok = await client.get("/tiny-env/splits", headers={"X-API-Key": "k1"})
        assert ok.status_code == 200


async def test_environment_files_are_checked_with_file_and_line(tmp_path: Path) -> None:
    env = write_env(tmp_path)
    (tmp_path / "tasks.jsonl").write_text('{"prompt": "a"}\n\n{"prompt": "b", "bad": 1}\n')
    with pytest.raises(InvalidFile) as caught:
        load_environment(env)
    assert "tasks.jsonl:3" in str(caught.value) and "bad" in str(caught.value)
    (tmp_path / "tasks.yaml").write_text("- prompt: a\n  id: x\n- prompt: b\n  id: x\n")
    env.write_text("name: e\ntarget: tiny\ntasks: tasks.yaml\n")
    with pytest.raises(InvalidFile) as caught:
        load_environment(env)
    assert "tasks.yaml:3" in str(caught.value) and "used twice" in str(caught.value)
    (tmp_path / "tasks.yaml").write_text("tasks:\n  - prompt: a\n    split: dev\n")
    assert load_environment(env).splits["dev"][0].item("z")["prompt"] == "a"


async def test_a_bad_environment_stops_the_start(tmp_path: Path) -> None:
    library = write_library(tmp_path / "rubrics")
    clash = write_env(tmp_path / "clash", name="v1")
    with pytest.raises(ValueError, match="route names"):
        create_app(settings_for(library, ors_environments=[clash]))
    missing = write_env(tmp_path / "missing", target="no-such-rubric")
    pool = fake_pool("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="no-such-rubric"):
        async with app_client(settings_for(library, ors_environments=[missing]), pool):
            pass
