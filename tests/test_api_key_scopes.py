"""Scoped API keys: the runs and rubrics a key may write and read, and its cap on runs;
keys without a scope keep the single-tenant behaviour (everything)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakejudge import FakeJudge
from pydantic import ValidationError
from test_api_support import ITEM, app_client, fake_pool, settings_for, write_library

from rewardsvc.core.pool import JudgePool
from rewardsvc.server.app import create_app
from rewardsvc.settings import Settings

ADMIN, TEAM_A, TEAM_B = "admin-0123456789", "team-a-0123456789", "team-b-0123456789"
SCOPES = [
    {"key": TEAM_A, "name": "team-a", "runs": ["a-*"], "rubrics": ["tiny"], "max_runs": 2},
    {"key": TEAM_B, "name": "team-b", "runs": ["b-*", "shared"], "rubrics": ["tiny", "inline:*"]},
]
INLINE = {
    "id": "tiny",
    "criteria": [{"id": "short", "text": "The response is short."}],
    "judges": ["primary"],
}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def pool() -> Iterator[JudgePool]:
    with FakeJudge() as fake:
        yield fake_pool(fake.url, fake.url, timeout_s=10)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path / "rubrics")


async def post(http: httpx.AsyncClient, key: str, run: str | None, rubric: Any = "tiny") -> Any:
    body: dict[str, Any] = {"rubric": rubric, "items": [ITEM]}
    if run is not None:
        body["run"] = run
    return await http.post("/v1/rewards", json=body, headers=bearer(key))


def refused(reply: httpx.Response, field: str, named: str) -> str:
    assert reply.status_code == 403, reply.text
    body = reply.json()
    assert body["error"] == "forbidden" and body["field"] == field, body
    assert f"'{named}" in body["message"], body
    return str(body["message"])


async def test_a_scoped_key_writes_only_to_its_runs_and_rubrics(
    library: Path, pool: JudgePool
) -> None:
    settings = settings_for(library, api_keys=ADMIN, api_key_scopes=json.dumps(SCOPES))
    async with app_client(settings, pool) as (http, app, _):
        assert (await post(http, TEAM_A, "a-1")).status_code == 200
        refused(await post(http, TEAM_A, "b-1"), "run", "b-1")
        refused(await post(http, TEAM_A, None), "run", "default")
        refused(await post(http, TEAM_A, "a-1", "strict"), "rubric", "strict")
        refused(await post(http, TEAM_A, "a-1", INLINE), "rubric", "inline:tiny@")
        inline = await post(http, TEAM_B, "b-1", INLINE)
        assert inline.status_code == 200, inline.text
        inline_name = f"inline:tiny@{inline.json()['rubric']['version']}"
        # The trainer routes (key in the URL, as OpenRLHF and slime send it) and groups.
        basic = base64.b64encode(f"any:{TEAM_A}".encode()).decode()
        slime = await http.post(
            "/slime/tiny?run=b-2",
            json={"prompt": "p", "response": "r", "label": "l"},
            headers={"Authorization": f"Basic {basic}"},
        )
        refused(slime, "run", "b-2")
        group = {"id": "g", "prompt": "p", "completions": ["x", "y"]}
        groups = await http.post(
            "/v1/groups",
            json={"rubric": "tiny", "groups": [group], "run": "b-3"},
            headers=bearer(TEAM_A),
        )
        refused(groups, "run", "b-3")
        # Today's behaviour for a key without a scope: any run, any rubric.
        assert (await post(http, ADMIN, "b-1", "strict")).status_code == 200
        runs = {(r.rubric, r.run) for r in app.state.service.monitor.runs()}
    assert runs == {("tiny", "a-1"), (inline_name, "b-1"), ("strict", "b-1")}


async def test_a_scoped_key_creates_at_most_max_runs_runs(library: Path, pool: JudgePool) -> None:
    settings = settings_for(library, api_key_scopes=json.dumps(SCOPES))
    async with app_client(settings, pool) as (http, _, _):
        assert (await post(http, TEAM_A, "a-1")).status_code == 200
        assert (await post(http, TEAM_A, "a-2")).status_code == 200
        message = refused(await post(http, TEAM_A, "a-3"), "run", "a-3")
        assert "max_runs=2" in message
        # Its own runs stay writable; another key is not counted against it.
        assert (await post(http, TEAM_A, "a-1")).status_code == 200
        assert (await post(http, TEAM_B, "b-1")).status_code == 200


async def test_the_monitor_and_the_library_show_a_scoped_key_only_its_own(
    library: Path, pool: JudgePool
) -> None:
    settings = settings_for(library, api_keys=ADMIN, api_key_scopes=json.dumps(SCOPES))
    async with app_client(settings, pool) as (http, _, _):
        for key, run in ((TEAM_A, "a-1"), (TEAM_B, "b-1"), (ADMIN, "ops"), (ADMIN, "b-9")):
            assert (await post(http, key, run)).status_code == 200
        seen = {}
        for name, key in (("admin", ADMIN), ("a", TEAM_A), ("b", TEAM_B)):
            report = (await http.get("/v1/monitor?history=true", headers=bearer(key))).json()
            seen[name] = {r["run"] for r in report["runs"]}
        filtered = await http.get("/v1/monitor?run=b-1", headers=bearer(TEAM_A))
        rubrics = (await http.get("/v1/rubrics", headers=bearer(TEAM_A))).json()
        strict = await http.get("/v1/rubrics/strict", headers=bearer(TEAM_A))
        metrics_scoped = await http.get("/metrics", headers=bearer(TEAM_A))
        metrics_admin = await http.get("/metrics", headers=bearer(ADMIN))
    assert seen == {"admin": {"a-1", "b-1", "ops", "b-9"}, "a": {"a-1"}, "b": {"b-1", "b-9"}}
    assert filtered.json()["runs"] == []
    assert [r["id"] for r in rubrics["rubrics"]] == ["tiny"]
    refused(strict, "rubric", "strict")
    assert metrics_scoped.status_code == 403 and metrics_admin.status_code == 200


def test_scopes_are_checked_when_the_settings_are_read(library: Path) -> None:
    bad = [{"key": TEAM_A, "name": "team-a", "runs": ["a*b"], "max_runs": 0, "extra": 1}]
    with pytest.raises(ValidationError) as caught:
        Settings(rubrics_dir=library, api_key_scopes=json.dumps(bad))
    message = str(caught.value.errors()[0]["msg"])
    assert "[0][runs]" in message and "[0][max_runs]" in message and "[0][extra]" in message
    assert TEAM_A not in message
    twice = [SCOPES[0], {**SCOPES[1], "name": "team-a"}]
    with pytest.raises(ValidationError, match="its own name"):
        Settings(rubrics_dir=library, api_key_scopes=json.dumps(twice))
    with pytest.raises(ValidationError, match="JSON"):
        Settings(rubrics_dir=library, api_key_scopes="[{not json")
    both = settings_for(library, api_keys=TEAM_A, api_key_scopes=json.dumps(SCOPES))
    with pytest.raises(ValueError, match="given twice"):
        create_app(both)
