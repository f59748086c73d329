"""Guards through HTTP: API keys, body and batch size limits, bounded in-flight work, the
prompt bytes one request may plan, inline rubric size, and validate's admission."""

from __future__ import annotations

import asyncio
import base64
import gc
import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fakejudge import FakeJudge
from test_api_support import (
    INLINE_RUBRIC,
    ITEM,
    TINY_RUBRIC,
    app_client,
    fake_pool,
    settings_for,
    write_library,
)

from rewardsvc.core.pool import JudgePool
from rewardsvc.server.guards import InflightLimiter
from rewardsvc.settings import Settings

KEY = "k-0123456789abcdef"


@pytest.fixture
def pool(fake: FakeJudge) -> JudgePool:
    return fake_pool(fake.url, fake.url, timeout_s=10)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path / "rubrics")


def assert_error(reply: httpx.Response, status: int, error: str, field: str | None) -> str:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["error"] == error and body["field"] == field, body
    return str(body["message"])


# ------------------------------------------------------------------ API keys


async def test_requests_without_a_valid_key_get_401_and_score_nothing(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    settings = settings_for(library, api_keys=f"other-key, {KEY}")
    request = {"rubric": "tiny", "items": [ITEM]}
    async with app_client(settings, pool) as (http, _, _):
        missing = await http.post("/v1/rewards", json=request)
        wrong = await http.post(
            "/v1/rewards", json=request, headers={"Authorization": "Bearer nope"}
        )
        prefix = await http.post(
            "/v1/rewards", json=request, headers={"Authorization": f"Bearer {KEY[:-1]}"}
        )
        other_scheme = await http.post(
            "/v1/rewards", json=request, headers={"Authorization": f"Token {KEY}"}
        )
        for route in ("/v1/rubrics", "/v1/rubrics/tiny", "/metrics", "/openapi.json"):
            assert (await http.get(route)).status_code == 401, route
        for route in ("/openrlhf/tiny", "/slime/tiny"):
            assert (await http.post(route, json={})).status_code == 401, route
        assert fake.script.requests == 0  # nothing reached a judge

        assert "missing API key" in assert_error(missing, 401, "unauthorized", "Authorization")
        assert missing.headers["WWW-Authenticate"].startswith("Bearer")
        for reply in (wrong, prefix):
            assert "invalid API key" in assert_error(reply, 401, "unauthorized", "Authorization")
            assert reply.headers["WWW-Authenticate"].startswith("Bearer")
        assert_error(other_scheme, 401, "unauthorized", "Authorization")

        # Probes stay open.
        assert (await http.get("/healthz")).status_code == 200
        assert (await http.get("/readyz")).status_code == 200

        ok = await http.post(
            "/v1/rewards", json=request, headers={"Authorization": f"Bearer {KEY}"}
        )
        assert ok.status_code == 200 and ok.json()["results"][0]["status"] == "ok"
        other = await http.get("/v1/rubrics", headers={"Authorization": "Bearer other-key"})
        assert other.status_code == 200
        # Basic credentials with the key as password (what URL user info turns into).
        basic = base64.b64encode(f"trainer:{KEY}".encode()).decode()
        reply = await http.get("/v1/rubrics", headers={"Authorization": f"Basic {basic}"})
        assert reply.status_code == 200
        reply = await http.get("/v1/rubrics", auth=("trainer", "wrong"))
        assert reply.status_code == 401


async def test_keys_from_file(library: Path, pool: JudgePool, tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text(f"# trainers\n\n  {KEY}  \n")
    async with app_client(settings_for(library, api_keys_file=keys), pool) as (http, _, _):
        assert (await http.get("/v1/rubrics")).status_code == 401
        reply = await http.get("/v1/rubrics", headers={"Authorization": f"Bearer {KEY}"})
        assert reply.status_code == 200
        # A comment line is not a key.
        reply = await http.get("/v1/rubrics", headers={"Authorization": "Bearer # trainers"})
        assert reply.status_code == 401


async def test_no_keys_means_no_auth(library: Path, pool: JudgePool) -> None:
    async with app_client(settings_for(library), pool) as (http, _, _):
        assert (await http.get("/v1/rubrics")).status_code == 200


# ------------------------------------------------------------------ size limits


async def test_oversized_body_gets_413_naming_the_limit(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    settings = settings_for(library, max_body_bytes=2048)
    big = {"rubric": "tiny", "items": [{**ITEM, "completion": "x" * 4096}]}
    async with app_client(settings, pool) as (http, _, _):
        # Declared by Content-Length: refused before the body is read.
        reply = await http.post("/v1/rewards", json=big)
        message = assert_error(reply, 413, "payload_too_large", "max_body_bytes")
        assert "max_body_bytes=2048" in message

        # Chunked, no Content-Length: cut off while reading.
        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(8):
                yield b" " * 512

        reply = await http.post(
            "/v1/rewards", content=chunks(), headers={"content-type": "application/json"}
        )
        assert_error(reply, 413, "payload_too_large", "max_body_bytes")
        # The same on a route that reads the body itself.
        reply = await http.post(
            "/v1/rubrics/validate", content=chunks(), headers={"content-type": "text/yaml"}
        )
        assert_error(reply, 413, "payload_too_large", "max_body_bytes")
        # Under the limit is fine.
        reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [ITEM]})
        assert reply.status_code == 200
    assert fake.script.requests == 4  # only the small request was scored


async def test_oversized_batch_gets_413_naming_max_items(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    async with app_client(settings_for(library, max_items=2), pool) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [ITEM] * 3})
        assert "max_items=2" in assert_error(reply, 413, "too_many_items", "items")
        openrlhf = {"query": ["q"] * 3, "prompts": ["q"] * 3, "labels": [""] * 3}
        reply = await http.post("/openrlhf/tiny", json=openrlhf)
        assert "max_items=2" in assert_error(reply, 413, "too_many_items", "query")
    assert fake.script.requests == 0


# ------------------------------------------------------------------ in-flight bound


async def test_burst_beyond_inflight_bound_gets_429_and_accepted_requests_complete(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    fake.script.default = "timeout"  # every judge call answers after delay_s
    fake.script.delay_s = 0.5
    settings = settings_for(library, max_items=2, max_inflight=4)
    request = {"rubric": "tiny", "items": [ITEM, {**ITEM, "id": "b", "completion": "5"}]}
    async with app_client(settings, pool) as (http, app, _):
        replies = await asyncio.gather(*(http.post("/v1/rewards", json=request) for _ in range(8)))
        limiter = app.state.service.limiter
        assert limiter.current == 0  # every slot was given back
    accepted = [r for r in replies if r.status_code == 200]
    refused = [r for r in replies if r.status_code == 429]
    assert len(accepted) + len(refused) == 8, [r.status_code for r in replies]
    # 2 items each against a bound of 4 items: at most 2 requests at once.
    assert 1 <= len(accepted) <= 4 and refused
    for reply in accepted:
        assert [r["status"] for r in reply.json()["results"]] == ["ok", "ok"]
    for reply in refused:
        message = assert_error(reply, 429, "overloaded", "max_inflight")
        assert "max_inflight=4" in message
        assert int(reply.headers["Retry-After"]) >= 1
    # Identical items across accepted requests share calls (dedup/cache), so the judge saw
    # at most 2 items x 2 criteria x 2 judges.
    assert fake.script.requests <= 8


async def test_retry_after_follows_its_setting(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    """The Retry-After of the in-flight bound's 429 and of the drain's 503 is drawn within
    ``retry_after_s`` (it was 1 to 4 s whatever the settings said)."""
    fake.script.default = "timeout"  # every judge call answers after delay_s
    fake.script.delay_s = 0.5
    settings = settings_for(library, max_items=2, max_inflight=2, retry_after_s=(7, 7))
    request = {"rubric": "tiny", "items": [ITEM, {**ITEM, "id": "b", "completion": "5"}]}
    async with app_client(settings, pool) as (http, app, _):
        replies = await asyncio.gather(*(http.post("/v1/rewards", json=request) for _ in range(4)))
        refused = [r for r in replies if r.status_code == 429]
        assert refused, [r.status_code for r in replies]
        assert {r.headers["Retry-After"] for r in refused} == {"7"}
        app.state.service.drain_begun.set()
        reply = await http.post("/v1/rewards", json=request)
        app.state.service.drain_begun.clear()
    assert_error(reply, 503, "shutting_down", None)
    assert reply.headers["Retry-After"] == "7" and "retry after 7 s" in reply.text
    assert Settings(retry_after_s=(0, 0)).retry_after_s == (0, 0)  # come back at once
    with pytest.raises(ValueError, match="retry_after_s"):
        Settings(retry_after_s=(3, 1))


def test_inflight_limiter_counts_items() -> None:
    limiter = InflightLimiter(4)
    assert limiter.try_acquire(3)
    assert not limiter.try_acquire(2)
    assert limiter.try_acquire(1)
    limiter.release(4)
    # A batch larger than the bound still runs alone, so it cannot starve.
    assert limiter.try_acquire(6)
    assert not limiter.try_acquire(1)
    limiter.release(6)
    with limiter.admit(2):
        assert limiter.current == 2
    assert limiter.current == 0


# ------------------------------------------------------------------ settings


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in {
        "REWARDSVC_PORT": "9001",
        "REWARDSVC_API_KEYS": "a, b,,c",
        "REWARDSVC_MAX_INFLIGHT": "5000",
        "REWARDSVC_CACHE_PATH": str(tmp_path / "cache.sqlite"),
        "REWARDSVC_RELOAD": "false",
        "REWARDSVC_LOG_LEVEL": "WARNING",
    }.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.port == 9001 and settings.max_inflight == 5000
    assert settings.api_key_list() == ["a", "b", "c"]
    assert "a, b" not in repr(settings)  # keys are secrets
    assert settings.cache_path == tmp_path / "cache.sqlite"
    assert settings.reload is False and settings.log_level == "warning"
    assert settings.max_body_bytes == 8 * 1024 * 1024 and settings.max_items == 1024


def test_settings_defaults_and_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("REWARDSVC_"):
            monkeypatch.delenv(name)
    settings = Settings()
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    assert str(settings.rubrics_dir) == "rubrics"
    assert settings.judge_pool == Path("deploy/cpu-judge/judges.serve.yaml")  # make serve's
    assert settings.api_key_list() == [] and settings.cache_path is None
    assert settings.reward_log is None and settings.reload is True
    assert settings.retry_after_s == (1, 4)
    assert (settings.max_text_chars, settings.max_inflight, settings.cache_size) == (
        100_000,
        4096,
        100_000,
    )
    with pytest.raises(ValueError, match="max_inflight"):
        Settings(max_items=100, max_inflight=10)
    with pytest.raises(ValueError, match="log_level"):
        Settings(log_level="loud")
    for name, field in Settings.model_fields.items():
        assert field.description, f"{name} is undocumented"


# ------------------------------------------------------------------ what one request may plan


BOUND = 1024 * 1024  # the smallest max_prompt_bytes_per_request allowed


async def test_a_request_planning_more_prompt_bytes_than_the_bound_gets_413_before_any_call(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    """4 items of 100 KB, 2 criteria x 2 judges: 1.6 MB of prompts planned from a 0.4 MB
    body, over a bound of 1 MiB. On c824dfc it was scored (16 judge calls)."""
    big = [{**ITEM, "id": f"b{n}", "completion": f"{n}" + "x" * 99_000} for n in range(4)]
    settings = settings_for(library, max_prompt_bytes_per_request=BOUND)
    async with app_client(settings, pool) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": big})
        message = assert_error(reply, 413, "too_much_work", "max_prompt_bytes_per_request")
        assert f"max_prompt_bytes_per_request={BOUND}" in message
        planned = int(message.split("plans ")[1].split(" bytes")[0])
        assert planned > 16 * 99_000  # the figure counts every call's copy of its item
        # The trainer routes go through the same admission.
        openrlhf = {"query": [i["completion"] for i in big], "prompts": [""] * 4}
        reply = await http.post("/openrlhf/tiny", json=openrlhf)
        assert reply.status_code == 413, reply.text
        assert "max_prompt_bytes_per_request" in reply.text
        # Under the bound is scored as before.
        reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": big[:1]})
        assert reply.status_code == 200, reply.text
    assert fake.script.requests == 4  # only the last request reached a judge


async def test_groups_and_preferences_are_bounded_by_their_planned_prompt_bytes(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    """A pairwise all_pairs group of 20 completions of 5 KB plans 1,520 calls of about 12 KB
    each (18 MB) from a 0.1 MB body; on c824dfc only the calls were bounded."""
    completions = [f"{n} " + "y" * 5_000 for n in range(20)]
    group = {"prompt": "Q?", "completions": completions}
    options = {"method": "pairwise", "tournament": "all_pairs"}
    pairs = [{"prompt": "Q?", "a": "z" * 90_000, "b": f"{n}" + "z" * 90_000} for n in range(4)]
    settings = settings_for(library, max_prompt_bytes_per_request=BOUND)
    async with app_client(settings, pool) as (http, _, _):
        body = {"rubric": "tiny", "groups": [group], "options": options}
        message = assert_error(
            await http.post("/v1/groups", json=body),
            413,
            "too_much_work",
            "max_prompt_bytes_per_request",
        )
        assert "over 1520 calls" in message
        body = {"rubric": "tiny", "pairs": pairs}
        reply = await http.post("/v1/preferences", json=body)
        assert_error(reply, 413, "too_much_work", "max_prompt_bytes_per_request")
    assert fake.script.requests == 0


async def test_an_inline_rubric_larger_than_max_rubric_bytes_gets_413_naming_its_field(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    """On c824dfc an inline rubric of any size (up to the body limit) was accepted."""
    huge = {**INLINE_RUBRIC, "instructions": "Be fair. " * 10_000}
    recipe = {
        "kind": "recipe",
        "id": "inline-recipe",
        "components": [{"id": "q", "rubric": huge, "weight": 1.0}],
    }
    settings = settings_for(library, max_rubric_bytes=64 * 1024)
    async with app_client(settings, pool) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": huge, "items": [ITEM]})
        message = assert_error(reply, 413, "payload_too_large", "rubric.instructions")
        assert "max_rubric_bytes=65536" in message
        groups = {"rubric": huge, "groups": [{"prompt": "Q?", "completions": ["a", "b"]}]}
        assert_error(
            await http.post("/v1/groups", json=groups),
            413,
            "payload_too_large",
            "rubric.instructions",
        )
        reply = await http.post("/v1/rewards", json={"rubric": recipe, "items": [ITEM]})
        assert reply.status_code == 413, reply.text
        assert reply.json()["field"].endswith(".instructions")
        small = await http.post("/v1/rewards", json={"rubric": INLINE_RUBRIC, "items": [ITEM]})
        assert small.status_code == 200, small.text


async def test_validate_is_bounded_and_admitted(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    """c824dfc parsed any validate body up to max_body_bytes (about 1 s of CPU per 64 KB),
    answered 200 with valid=false for one over max_rubric_bytes, and let validate past
    admission while draining."""
    settings = settings_for(library, max_rubric_bytes=2048)
    headers = {"content-type": "text/yaml"}
    async with app_client(settings, pool) as (http, app, _):
        big = TINY_RUBRIC + "# " + "x" * 4096 + "\n"
        reply = await http.post("/v1/rubrics/validate", content=big.encode(), headers=headers)
        assert "max_rubric_bytes=2048" in assert_error(
            reply, 413, "payload_too_large", "max_rubric_bytes"
        )
        reply = await http.post("/v1/rubrics/validate", json={"yaml": big})
        assert_error(reply, 413, "payload_too_large", "max_rubric_bytes")
        ok = await http.post("/v1/rubrics/validate", content=TINY_RUBRIC.encode(), headers=headers)
        assert ok.status_code == 200 and ok.json()["valid"] is True
        app.state.service.drain_begun.set()
        reply = await http.post(
            "/v1/rubrics/validate", content=TINY_RUBRIC.encode(), headers=headers
        )
        assert reply.status_code == 503, reply.text
        app.state.service.drain_begun.clear()


async def test_the_service_keeps_its_start_up_heap_out_of_full_collections(
    library: Path, pool: JudgePool
) -> None:
    """A full collection scanned the whole start-up heap (about 100k objects, 0.1 s of
    stalled loop each time); c824dfc froze nothing."""
    async with app_client(settings_for(library), pool):
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
