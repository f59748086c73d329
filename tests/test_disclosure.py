"""What clients may learn of the deployment: no judge base URL or address in a result's
``error``, a judge's ``error``, or a 503's message (the service's log keeps them); and the
public ``/readyz`` says ready or not, its judges and rubrics only behind a key."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fakejudge import FakeJudge
from test_api_support import ITEM, app_client, fake_pool, settings_for, write_library

# The discard port: nothing listens, so every call to it is refused.
DEAD = "http://127.0.0.1:9/v1"
KEY = "s3cret-key-for-readiness"


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path / "rubrics")


@pytest.mark.parametrize("behaviour", ["500", "400", "html", "timeout", "redirect"])
async def test_failed_judges_do_not_reveal_their_urls(
    library: Path, fake: FakeJudge, behaviour: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake.script.default = behaviour
    fake.script.delay_s = 2.0  # "timeout": longer than the judge's timeout_s below
    pool = fake_pool(fake.url, DEAD, timeout_s=0.5)
    host = fake.url.split("//")[1].split("/")[0]
    caplog.set_level(logging.WARNING, logger="rewardsvc.judges")
    async with app_client(settings_for(library), pool) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": "strict", "items": [ITEM]})
        prompt = "What is 2+2?\n"
        body = {"query": [prompt + "4"], "prompts": [prompt], "labels": [""]}
        outage = await http.post("/openrlhf/strict?hold=0", json=body)
    assert reply.status_code == 200, reply.text
    result = reply.json()["results"][0]
    assert result["status"] == "judge_error" and result["reward"] is None
    errors = [result["error"], *(j["error"] for j in result["judges"].values())]
    assert all(errors), result
    assert outage.status_code == 503, outage.text
    for text in (reply.text, outage.text):
        assert "127.0.0.1" not in text and host not in text, text
    # The client still learns which judge failed and how.
    assert "primary" in result["error"] and "secondary" in result["error"]
    assert "connection" in result["judges"]["secondary"]["error"]
    # The operator's log keeps where.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert DEAD.rstrip("/") in logged and host in logged


async def test_failure_log_is_throttled_per_url_and_kind(
    library: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pool = fake_pool(DEAD, DEAD)
    caplog.set_level(logging.WARNING, logger="rewardsvc.judges")
    async with app_client(settings_for(library), pool) as (http, _, _):
        items = [{**ITEM, "id": str(n), "completion": f"{n}"} for n in range(20)]
        reply = await http.post("/v1/rewards", json={"rubric": "strict", "items": items})
    assert reply.status_code == 200
    # 40 failed calls (20 items, 2 judges): one line per judge and kind until the
    # interval has passed, not one per call.
    lines = [r for r in caplog.records if r.name == "rewardsvc.judges.failures"]
    assert 2 <= len(lines) <= 4, [r.getMessage() for r in lines]


async def test_public_readiness_names_nothing_and_the_detail_needs_a_key(
    library: Path, fake: FakeJudge
) -> None:
    pool = fake_pool(fake.url, DEAD)
    async with app_client(settings_for(library, api_keys=KEY), pool) as (http, _, _):
        public = await http.get("/readyz")
        anonymous = await http.get("/readyz/detail")
        detail = await http.get("/readyz/detail", headers={"Authorization": f"Bearer {KEY}"})
    # Probes read the status code and ``ready``; nothing names a judge or a rubric.
    assert public.status_code == 503
    assert set(public.json()) == {"ready", "message"} and public.json()["ready"] is False
    for name in ("primary", "secondary", "strict", "tiny", "rubrics/"):
        assert name not in public.text, public.text
    assert anonymous.status_code == 401
    assert detail.status_code == 503
    assert detail.json()["judges"] == {"primary": True, "secondary": False}
    assert "strict (needs 2, 1 up)" in detail.json()["message"]
