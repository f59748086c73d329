"""Per-prompt rubrics end to end on the real CPU judges: HealthBench- and RaR-format rows
(written for this project) sent as they are, each item carrying its dataset's rubric
column, against the ``per-prompt`` template of the rubric library."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_api_support import app_client, settings_for

from rewardsvc.cli import main
from rewardsvc.core.criteria_formats import read_criteria
from rewardsvc.core.pool import JudgePool

pytestmark = pytest.mark.judges

DATA = Path(__file__).parent / "data" / "rubric_datasets"
ANSWERS = ("I am not sure.", "Here is a careful, complete answer to your question.")


def rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()]


def explicit(criteria: list[dict[str, Any]], breakdown: dict[str, Any]) -> float:
    """The explicit score (HealthBench: points met over positive points, clipped) from a
    judge's per-criterion verdicts."""
    total = sum(c["weight"] * breakdown[c["id"]]["score"] for c in criteria)
    positive = sum(c["weight"] for c in criteria if c["weight"] > 0)
    return min(1.0, max(0.0, total / positive))


@pytest.mark.parametrize(
    ("name", "rubric_key", "prompt_key"),
    [("healthbench", "rubrics", "prompt"), ("rar", "rubric", "question")],
)
async def test_dataset_rows_score_with_their_own_rubrics(
    name: str, rubric_key: str, prompt_key: str, repo_root: Path, cpu_pool: JudgePool
) -> None:
    chosen = rows(name)[:2]
    items = [
        {
            "id": f"{row.get('prompt_id', row.get('id'))}-{k}",
            "prompt": row[prompt_key],
            "completion": answer,
            "criteria": row[rubric_key],
        }
        for row in chosen
        for k, answer in enumerate(ANSWERS)
    ]
    # One malformed rubric among them: it rejects its own item only.
    broken = json.loads(json.dumps(items[0]))
    broken["id"] = "broken"
    broken["criteria"][0]["weight" if name == "rar" else "points"] = 0
    request = {
        "rubric": "per-prompt",
        "items": [*items, broken],
        "options": {"criteria_format": name},
    }
    async with app_client(settings_for(repo_root / "rubrics"), cpu_pool) as (http, _, registry):
        reply = await http.post("/v1/rewards", json=request)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    *results, rejected = body["results"]
    assert rejected["status"] == "rejected" and rejected["reward"] is None
    assert rejected["error"].startswith(f"items[{len(items)}].criteria[0].")
    assert body["rubric"]["version"] == registry.get("per-prompt").version
    for n, result in enumerate(results):
        assert result["status"] == "ok", result
        criteria = read_criteria(name, chosen[n // 2][rubric_key])
        for judge in result["judges"].values():
            assert set(judge["criteria"]) == {c["id"] for c in criteria}
            assert judge["score"] == pytest.approx(explicit(criteria, judge["criteria"]))
    # The completions of one prompt share its rubric; the two prompts' rubrics differ.
    versions = [r["version"] for r in results]
    assert versions[0] == versions[1] != versions[2] == versions[3]


def test_eval_ranks_pairs_with_each_rows_own_rubric(
    repo_root: Path, cpu_pool: JudgePool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "pairs.jsonl"
    held_out = [
        {
            "id": row["prompt_id"],
            "prompt": row["prompt"],
            "chosen": "Drink fluids, rest, and see a doctor if it gets worse.",
            "rejected": "No idea.",
            "criteria": row["rubrics"],
        }
        for row in rows("healthbench")[:2]
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in held_out))
    pool = repo_root / "deploy" / "cpu-judge" / "judges.yaml"
    argv = ["eval", str(data), "--rubric", "per-prompt", "--criteria-format", "healthbench"]
    argv += ["--judges", str(pool), "--rubrics", str(repo_root / "rubrics")]
    argv += ["--bootstrap", "0", "--no-progress", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["pairs"]["rows"] == 2
    # Both pairs were scored (a rejected row rubric would leave no reward to compare).
    assert {c["n"] for c in report["pairs"]["scorers"]["reward"].values()} == {2}
