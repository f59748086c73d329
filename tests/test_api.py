"""The HTTP API through HTTP, against scripted fake judges: every route, its errors, and
the shapes clients read. Real-judge tests are in test_api_judges.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fakejudge import FakeJudge, Script
from fastapi import FastAPI
from test_api_support import (
    INLINE_RUBRIC,
    ITEM,
    TINY_RUBRIC,
    app_client,
    fake_pool,
    settings_for,
    wait_for,
    write_library,
)

from rewardsvc.core.pool import JudgePool
from rewardsvc.library.registry import Registry


def reset(script: Script) -> None:
    """Back to answering ok at once, counters at zero."""
    script.default = "ok"
    script.queue.clear()
    script.delay_s = 0.0
    script.requests = 0
    script.request_times.clear()
    script.bodies.clear()


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    with FakeJudge() as primary, FakeJudge() as secondary:
        yield primary, secondary


@pytest.fixture
def pool(fakes: tuple[FakeJudge, FakeJudge]) -> JudgePool:
    for fake in fakes:
        reset(fake.script)
    return fake_pool(fakes[0].url, fakes[1].url)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path / "rubrics")


@pytest_asyncio.fixture(loop_scope="function")  # the test's own loop, where the clients live
async def client(
    library: Path, pool: JudgePool
) -> AsyncIterator[tuple[httpx.AsyncClient, FastAPI, Registry]]:
    async with app_client(settings_for(library), pool) as running:
        yield running


def assert_error(reply: httpx.Response, status: int, error: str, field: str | None) -> str:
    """The reply is an ErrorDetail with this status, kind and field; returns the message."""
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert set(body) == {"error", "message", "field"}, body
    assert body["error"] == error, body
    assert body["field"] == field, body
    assert body["message"]
    return str(body["message"])


# ------------------------------------------------------------------ POST /v1/rewards


async def test_rewards_happy_path(client: Any, fakes: tuple[FakeJudge, FakeJudge]) -> None:
    http, _, registry = client
    items = [ITEM, {"prompt": "Say hi.", "completion": "Hello!", "metadata": {"step": 3}}]
    reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": items})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["rubric"] == {
        "id": "tiny",
        "version": registry.get("tiny").version,
        "kind": "rubric",
    }
    assert [r["id"] for r in body["results"]] == ["a", "1"]
    for result in body["results"]:
        assert result["status"] == "ok"
        assert 0.0 <= result["reward"] <= 1.0
        assert set(result["judges"]) == {"primary", "secondary"}
        assert set(result["judges"]["primary"]["criteria"]) == {"correct", "polite"}
        assert result["uncertainty"] is not None
    # 2 items x 2 criteria per judge.
    assert fakes[0].script.requests == 4 and fakes[1].script.requests == 4
    assert body["usage"]["judge_calls"] == 8


async def test_rewards_mixed_batch_rejects_only_bad_items(client: Any) -> None:
    http, _, _ = client
    items = [
        ITEM,
        {"id": "no-completion", "prompt": "Hi"},
        {"id": "bad-type", "prompt": "Hi", "completion": 5},
        {"id": "extra", "prompt": "Hi", "completion": "x", "score": 1},
        {"id": "ok-chat", "prompt": [{"role": "user", "content": "Hi"}], "completion": "Hey"},
    ]
    reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": items})
    assert reply.status_code == 200, reply.text
    results = {r["id"]: r for r in reply.json()["results"]}
    assert [r["id"] for r in reply.json()["results"]] == [i["id"] for i in items]
    assert results["a"]["status"] == "ok" and results["ok-chat"]["status"] == "ok"
    for bad, field in [
        ("no-completion", "items[1].completion"),
        ("bad-type", "items[2].completion"),
        ("extra", "items[3].score"),
    ]:
        assert results[bad]["status"] == "rejected"
        assert results[bad]["reward"] is None
        assert field in results[bad]["error"], results[bad]["error"]


async def test_rewards_non_object_item_is_rejected_alone(client: Any) -> None:
    http, _, _ = client
    reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [ITEM, "oops", None]})
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [r["status"] for r in results] == ["ok", "rejected", "rejected"]
    assert results[1]["id"] == "1" and "items[1]" in results[1]["error"]


async def test_rewards_text_longer_than_limit_is_rejected(library: Path, pool: JudgePool) -> None:
    async with app_client(settings_for(library, max_text_chars=50), pool) as (http, _, _):
        items = [ITEM, {"id": "long", "prompt": "Hi", "completion": "x" * 51}]
        reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": items})
    results = reply.json()["results"]
    assert results[0]["status"] == "ok"
    assert results[1]["status"] == "rejected"
    assert "max_text_chars" in results[1]["error"] and "completion" in results[1]["error"]


async def test_rewards_judge_failure_is_judge_error_never_zero(
    client: Any, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    http, _, _ = client
    fakes[1].script.default = "500"
    reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [ITEM]})
    result = reply.json()["results"][0]
    assert result["status"] == "degraded" and result["reward"] is not None  # min_judges 1
    fakes[0].script.default = "500"
    reply = await http.post(
        "/v1/rewards", json={"rubric": "tiny", "items": [ITEM], "options": {"use_cache": False}}
    )
    result = reply.json()["results"][0]
    assert result["status"] == "judge_error" and result["reward"] is None


async def test_rewards_inline_rubric(client: Any) -> None:
    http, _, _ = client
    reply = await http.post("/v1/rewards", json={"rubric": INLINE_RUBRIC, "items": [ITEM]})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["rubric"]["id"] == "inline-one"
    assert body["rubric"]["version"].startswith("sha256:")
    assert set(body["results"][0]["judges"]) == {"primary"}


async def test_rewards_options_subset_of_judges(client: Any) -> None:
    http, _, _ = client
    request = {"rubric": "tiny", "items": [ITEM], "options": {"judges": ["secondary"]}}
    reply = await http.post("/v1/rewards", json=request)
    assert reply.status_code == 200
    assert set(reply.json()["results"][0]["judges"]) == {"secondary"}


@pytest.mark.parametrize(
    ("request_body", "field", "fragment"),
    [
        ({"items": [ITEM]}, "rubric", "Field required"),
        ({"rubric": 5, "items": [ITEM]}, "rubric", "valid string"),
        ({"rubric": "tiny"}, "items", "Field required"),
        ({"rubric": "tiny", "items": []}, "items", "at least 1 item"),
        ({"rubric": "tiny", "items": "nope"}, "items", "valid list"),
        ({"rubric": "tiny", "items": [ITEM], "extra": 1}, "extra", "unknown field"),
        ({"rubric": "tiny", "items": [ITEM], "options": {"rule": "max"}}, "options.rule", ""),
        (
            {"rubric": "tiny", "items": [ITEM], "options": {"min_judges": 0}},
            "options.min_judges",
            "",
        ),
        ({"rubric": "tiny", "items": [ITEM], "options": {"judgez": 1}}, "options.judgez", ""),
        (
            {"rubric": {"id": "x", "judges": ["primary"]}, "items": [ITEM]},
            "rubric.criteria",
            "Field required",
        ),
        (
            {
                "rubric": {**INLINE_RUBRIC, "criteria": [{"id": "a", "text": "abc", "weight": -1}]},
                "items": [ITEM],
            },
            "rubric.criteria[0].weight",
            "negative weight",
        ),
    ],
)
async def test_rewards_malformed_request_names_the_field(
    client: Any, request_body: dict[str, Any], field: str, fragment: str
) -> None:
    http, _, _ = client
    reply = await http.post("/v1/rewards", json=request_body)
    message = assert_error(reply, 422, "invalid_request", field)
    assert fragment in message
    # A rubric object is not also reported as "not a valid string".
    if isinstance(request_body.get("rubric"), dict):
        assert "valid string" not in message


async def test_rewards_inline_rubric_with_unknown_judge(client: Any) -> None:
    http, _, _ = client
    rubric = {**INLINE_RUBRIC, "judges": ["primary", "gpt-9"]}
    reply = await http.post("/v1/rewards", json={"rubric": rubric, "items": [ITEM]})
    message = assert_error(reply, 422, "invalid_request", "rubric.judges[1]")
    assert "gpt-9" in message and "primary" in message


async def test_rewards_option_judge_not_in_rubric(client: Any) -> None:
    http, _, _ = client
    request = {"rubric": "tiny", "items": [ITEM], "options": {"judges": ["tertiary"]}}
    reply = await http.post("/v1/rewards", json=request)
    assert "tertiary" in assert_error(reply, 422, "invalid_request", "options.judges")


async def test_rewards_unknown_rubric_is_404(
    client: Any, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    http, _, _ = client
    reply = await http.post("/v1/rewards", json={"rubric": "nope", "items": [ITEM]})
    message = assert_error(reply, 404, "unknown_rubric", "rubric")
    assert "'nope'" in message and "tiny" in message
    assert fakes[0].script.requests == 0


async def test_rewards_invalid_json_and_wrong_content_type(client: Any) -> None:
    http, _, _ = client
    reply = await http.post(
        "/v1/rewards", content=b'{"rubric": "tiny",', headers={"content-type": "application/json"}
    )
    assert_error(reply, 422, "invalid_json", None)
    reply = await http.post(
        "/v1/rewards", content=b"rubric=tiny", headers={"content-type": "text/plain"}
    )
    assert reply.status_code == 422
    assert reply.json()["error"] == "invalid_request"


async def test_rewards_oversized_batch_is_413(library: Path, pool: JudgePool, fakes: Any) -> None:
    async with app_client(settings_for(library, max_items=3), pool) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [ITEM] * 4})
    assert "max_items=3" in assert_error(reply, 413, "too_many_items", "items")
    assert fakes[0].script.requests == 0


async def test_unknown_route_and_method(client: Any) -> None:
    http, _, _ = client
    assert_error(await http.get("/v2/nothing"), 404, "not_found", None)
    assert_error(await http.get("/v1/rewards"), 405, "method_not_allowed", None)


# ------------------------------------------------------------------ rubric library


async def test_list_and_get_rubrics(client: Any) -> None:
    http, _, registry = client
    reply = await http.get("/v1/rubrics")
    assert reply.status_code == 200
    body = reply.json()
    assert [r["id"] for r in body["rubrics"]] == ["strict", "tiny"]
    tiny = body["rubrics"][1]
    assert tiny["file"] == "tiny.yaml" and tiny["criteria"] == ["correct", "polite"]
    assert tiny["judges"] == ["primary", "secondary"] and tiny["refused_edit"] is False
    assert body["errors"] == []

    reply = await http.get("/v1/rubrics/tiny")
    assert reply.status_code == 200
    detail = reply.json()
    assert detail["version"] == registry.get("tiny").version
    assert detail["file"] == "tiny.yaml"
    assert detail["yaml"] == TINY_RUBRIC
    assert detail["rubric"]["criteria"][0]["weight"] == 5.0  # defaults filled in
    assert detail["errors"] == []

    assert_error(await http.get("/v1/rubrics/nope"), 404, "unknown_rubric", "rubric")


async def test_refused_edit_is_reported_and_last_good_serves(client: Any, library: Path) -> None:
    http, _, registry = client
    version = registry.get("tiny").version
    broken = TINY_RUBRIC.replace("category: optional", "category: optionl")
    (library / "tiny.yaml").write_text(broken)
    (library / "fresh.yaml").write_text("id: fresh\ncriteria: []\njudges: [primary]\n")
    registry.reload()

    detail = (await http.get("/v1/rubrics/tiny")).json()
    assert detail["version"] == version and detail["yaml"] == TINY_RUBRIC
    [problem] = detail["errors"]
    assert problem["line"] == 9 and problem["path"] == "criteria[1].category"

    listing = (await http.get("/v1/rubrics")).json()
    assert {p["file"] for p in listing["errors"]} == {"tiny.yaml", "fresh.yaml"}
    assert next(r for r in listing["rubrics"] if r["id"] == "tiny")["refused_edit"] is True
    # A file that never validated is not served; the 404 says why.
    reply = await http.post("/v1/rewards", json={"rubric": "fresh", "items": [ITEM]})
    assert "fresh.yaml" in assert_error(reply, 404, "unknown_rubric", "rubric")
    reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [ITEM]})
    assert reply.json()["rubric"]["version"] == version


async def test_validate_yaml_text(client: Any, library: Path) -> None:
    http, _, registry = client
    headers = {"content-type": "text/yaml"}
    reply = await http.post("/v1/rubrics/validate", content=TINY_RUBRIC.encode(), headers=headers)
    assert reply.json() == {
        "valid": True,
        "id": "tiny",
        "version": registry.get("tiny").version,
        "errors": [],
    }
    bad = TINY_RUBRIC.replace("judges: [primary, secondary]", "judges: [primary, gpt-9]")
    reply = await http.post("/v1/rubrics/validate", content=bad.encode(), headers=headers)
    body = reply.json()
    assert reply.status_code == 200 and body["valid"] is False
    [problem] = body["errors"]
    assert problem["line"] == 11 and problem["path"].startswith("judges")
    assert "gpt-9" in problem["message"]
    # Not installed: the library is unchanged.
    assert (library / "tiny.yaml").read_text() == TINY_RUBRIC

    reply = await http.post("/v1/rubrics/validate", content=b"id: [unclosed\n", headers=headers)
    assert reply.json()["valid"] is False
    assert "YAML syntax error" in reply.json()["errors"][0]["message"]


async def test_validate_json_body(client: Any) -> None:
    http, _, _ = client
    reply = await http.post("/v1/rubrics/validate", json={"yaml": TINY_RUBRIC})
    assert reply.json()["valid"] is True
    reply = await http.post("/v1/rubrics/validate", json={"yml": TINY_RUBRIC})
    assert_error(reply, 422, "invalid_request", "yaml")
    reply = await http.post(
        "/v1/rubrics/validate", content=b"\x00", headers={"content-type": "image/png"}
    )
    assert_error(reply, 415, "unsupported_media_type", "Content-Type")


# ------------------------------------------------------------------ operations


async def test_healthz_readyz(client: Any) -> None:
    http, _, _ = client
    assert (await http.get("/healthz")).json() == {"status": "ok"}
    reply = await http.get("/readyz")
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"ready": True, "message": "ready"}
    reply = await http.get("/readyz/detail")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["ready"] is True and body["rubrics"] == 2
    assert body["judges"] == {"primary": True, "secondary": True}


async def test_readyz_503_when_judges_are_down(library: Path, fakes: Any) -> None:
    dead = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    pool = fake_pool(fakes[0].url, dead)
    async with app_client(settings_for(library), pool) as (http, _, _):
        public = await http.get("/readyz")
        reply = await http.get("/readyz/detail")
    assert public.status_code == 503 and public.json()["ready"] is False
    assert reply.status_code == 503
    body = reply.json()
    assert body["ready"] is False
    assert body["judges"] == {"primary": True, "secondary": False}
    # tiny needs 1 judge (primary is up); strict needs 2.
    assert "judges not answering: secondary;" in body["message"]
    assert "rubrics that cannot be scored: strict (needs 2, 1 up)" in body["message"]
    assert "tiny" not in body["message"]


async def test_readyz_503_without_rubrics(tmp_path: Path, pool: JudgePool) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    async with app_client(settings_for(empty), pool) as (http, _, _):
        reply = await http.get("/readyz/detail")
    assert reply.status_code == 503 and "no rubric is loaded" in reply.json()["message"]


async def test_metrics_count_requests_by_route_and_code(client: Any) -> None:
    http, _, _ = client

    def count(text: str, route: str, code: str) -> float:
        prefix = f'rewardsvc_requests_total{{code="{code}",route="{route}"}} '
        for line in text.splitlines():
            if line.startswith(prefix):
                return float(line[len(prefix) :])
        return 0.0

    before = (await http.get("/metrics")).text
    await http.post("/v1/rewards", json={"rubric": "tiny", "items": [ITEM]})
    await http.post("/v1/rewards", json={"rubric": "nope", "items": [ITEM]})
    await http.get("/v1/rubrics/tiny")
    reply = await http.get("/metrics")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/plain")
    after = reply.text
    assert count(after, "/v1/rewards", "200") == count(before, "/v1/rewards", "200") + 1
    assert count(after, "/v1/rewards", "404") == count(before, "/v1/rewards", "404") + 1
    assert count(after, "/v1/rubrics/{rubric_id}", "200") >= 1
    assert "rewardsvc_items_total" in after


async def test_reward_log_lines(library: Path, pool: JudgePool, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "rewards.jsonl"
    items = [{**ITEM, "metadata": {"step": 7}}, {"id": "bad", "prompt": "x"}]
    async with app_client(settings_for(library, reward_log=log), pool) as (http, _, registry):
        await http.post("/v1/rewards", json={"rubric": "tiny", "items": items})
        await wait_for(lambda: log.exists() and len(log.read_text().splitlines()) == 2)
        version = registry.get("tiny").version
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    first, second = lines
    assert first["rubric"] == "tiny" and first["version"] == version
    assert first["id"] == "a" and first["status"] == "ok" and first["metadata"] == {"step": 7}
    assert isinstance(first["reward"], float) and first["uncertainty"] is not None
    assert set(first) == {
        "time",
        "rubric",
        "version",
        "id",
        "reward",
        "status",
        "uncertainty",
        "flags",
        "metadata",
        "criteria",
        "group",
    }
    assert set(first["criteria"]) == {"correct", "polite"} and first["group"] is not None
    assert second["status"] == "rejected" and second["reward"] is None


async def test_openapi_documents_models_and_errors(client: Any) -> None:
    http, _, _ = client
    schema = (await http.get("/openapi.json")).json()
    schemas = schema["components"]["schemas"]
    for name in ("RewardRequest", "RewardResponse", "RewardResult", "ErrorDetail", "Usage"):
        assert name in schemas
    assert "HTTPValidationError" not in schemas
    assert schemas["RewardResult"]["description"]  # the wire models' docstrings
    rewards = schema["paths"]["/v1/rewards"]["post"]["responses"]
    for code in ("404", "413", "422", "429"):
        ref = rewards[code]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/ErrorDetail")
    validate = schema["paths"]["/v1/rubrics/validate"]["post"]["requestBody"]["content"]
    assert set(validate) == {"text/yaml", "application/json"}
    assert "ValidateRequest" in schemas
    assert {"/openrlhf/{rubric}", "/slime/{rubric}", "/readyz", "/metrics"} <= set(schema["paths"])
    assert (await http.get("/docs")).status_code == 200


async def test_hot_reload_serves_a_valid_edit(library: Path, pool: JudgePool) -> None:
    settings = settings_for(library, reload=True)
    async with app_client(settings, pool) as (http, _, registry):
        before = (await http.get("/v1/rubrics/tiny")).json()["version"]
        (library / "tiny.yaml").write_text(TINY_RUBRIC.replace("Test rubric.", "Edited."))

        async def version() -> str:
            return str((await http.get("/v1/rubrics/tiny")).json()["version"])

        for _ in range(100):  # the watcher debounces file events; give it up to 10 s
            if await version() != before:
                break
            await asyncio.sleep(0.1)
        assert await version() == registry.get("tiny").version != before
        assert (await http.get("/v1/rubrics/tiny")).json()["rubric"]["description"] == "Edited."
