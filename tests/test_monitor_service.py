"""The monitor sees what the service scores: per (rubric, run), through every route."""

from __future__ import annotations

from pathlib import Path

from fakejudge import FakeJudge
from test_api_support import ITEM, app_client, fake_pool, settings_for, write_library


async def test_scored_batches_reach_the_monitor_under_their_run(tmp_path: Path) -> None:
    log = tmp_path / "rewards.jsonl"
    with FakeJudge() as primary, FakeJudge() as secondary:
        settings = settings_for(write_library(tmp_path / "rubrics"), reward_log=log)
        pool = fake_pool(primary.url, secondary.url)
        async with app_client(settings, pool) as (http, _, _):
            items = [{**ITEM, "id": str(n)} for n in range(3)]
            reply = await http.post(
                "/v1/rewards", json={"rubric": "tiny", "items": items, "run": "grpo-7"}
            )
            assert reply.status_code == 200, reply.text
            reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [ITEM]})
            assert reply.status_code == 200, reply.text
            slime = await http.post(
                "/slime/tiny?run=slime-1", json={"prompt": "p", "response": "r", "label": "l"}
            )
            assert slime.status_code == 200, slime.text
            report = (await http.get("/v1/monitor")).json()
            bad = await http.post(
                "/v1/rewards", json={"rubric": "tiny", "items": [ITEM], "run": "a b"}
            )
    runs = {(r["rubric"], r["run"]): r["samples"] for r in report["runs"]}
    assert runs == {("tiny", "grpo-7"): 3, ("tiny", "default"): 1, ("tiny", "slime-1"): 1}
    assert bad.status_code == 422 and bad.json()["field"] == "run"
    lines = log.read_text().splitlines()
    assert sum('"run": "grpo-7"' in line for line in lines) == 3
