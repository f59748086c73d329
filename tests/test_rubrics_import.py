"""``rewardsvc rubrics import``: the test datasets convert whole; a broken line is reported
as FILE:LINE: field: message and skipped, the others written, and the exit code says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_api_support import app_client, settings_for

from rewardsvc.cli import main
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.protocol.items import Item

DATA = Path(__file__).parent / "data" / "rubric_datasets"


def _run(*args: str | Path) -> int:
    return main(["rubrics", "import", *(str(a) for a in args)])


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _source(name: str) -> list[dict[str, Any]]:
    return _read(DATA / f"{name}.jsonl")


@pytest.mark.parametrize("name", ["healthbench", "rar", "strings", "tinker"])
def test_each_test_dataset_imports_whole(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.jsonl"
    assert _run("--format", name, DATA / f"{name}.jsonl", out) == 0
    rows = _read(out)
    source = _source(name)
    assert len(rows) == len(source)
    for row in rows:
        assert set(row) <= {"id", "prompt", "reference", "criteria"}
        # Each row is an item the service reads and a valid rubric's criteria.
        Item.model_validate(
            {
                "id": row["id"],
                "prompt": row["prompt"],
                "completion": "x",
                "reference": row.get("reference"),
            }
        )
        Rubric.model_validate({"id": "r", "criteria": row["criteria"], "judges": ["j"]})
    total = sum(len(r["criteria"]) for r in rows)
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"{DATA / f'{name}.jsonl'}: {len(source)} row(s), {len(source)} imported with "
        f"{total} criteria to {out}, 0 rejected"
    )


def test_healthbench_rows_keep_their_messages_and_ids(tmp_path: Path) -> None:
    out = tmp_path / "hb.jsonl"
    assert _run("--format", "healthbench", DATA / "healthbench.jsonl", out) == 0
    source, rows = _source("healthbench"), _read(out)
    assert [r["id"] for r in rows] == [s["prompt_id"] for s in source]
    assert rows[2]["prompt"] == source[2]["prompt"]  # the chat messages, system included
    assert all("reference" not in r for r in rows)  # HealthBench's grader sees none
    weights = [c["weight"] for c in rows[0]["criteria"]]
    assert weights == [float(item["points"]) for item in source[0]["rubrics"]]


def test_rar_rows_take_question_or_prompt_and_the_reference_answer(tmp_path: Path) -> None:
    out = tmp_path / "rar.jsonl"
    assert _run("--format", "rar", DATA / "rar.jsonl", out) == 0
    source, rows = _source("rar"), _read(out)
    for s, r in zip(source, rows, strict=True):
        assert r["prompt"] == s.get("question", s.get("prompt"))
        assert r["reference"] == s["reference_answer"]
    # The last row's pitfall is written with a positive weight: it is made negative.
    assert rows[-1]["criteria"][-1]["category"] == "pitfall"
    assert rows[-1]["criteria"][-1]["weight"] == -1.0


BROKEN = [
    json.dumps(
        {"prompt_id": "ok-1", "prompt": "Hi?", "rubrics": [{"criterion": "Greets.", "points": 2}]}
    ),
    "{not json",
    "",
    json.dumps(["a", "list"]),
    json.dumps(
        {
            "prompt_id": "bad-points",
            "prompt": "Hi?",
            "rubrics": [
                {"criterion": "Greets.", "points": 2},
                {"criterion": "Waves.", "points": 0},
            ],
        }
    ),
    json.dumps({"prompt_id": "no-prompt", "rubrics": [{"criterion": "Greets.", "points": 2}]}),
    json.dumps(
        {
            "prompt_id": "ok-1",
            "prompt": "Again?",
            "rubrics": [{"criterion": "Greets.", "points": 1}],
        }
    ),
    json.dumps({"prompt": [{"content": "no role"}], "rubrics": "Greets."}),
    json.dumps(
        {
            "prompt_id": "ok-2",
            "prompt": [{"role": "user", "content": "Hi?"}],
            "rubrics": [
                {"criterion": "Greets.", "points": 2},
                {"criterion": "Is rude.", "points": -1},
            ],
        }
    ),
]


def test_broken_lines_are_reported_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "broken.jsonl"
    source.write_bytes(("\n".join(BROKEN) + "\n").encode() + b'{"prompt": "caf\xe9"}\n')
    out = tmp_path / "rows.jsonl"
    assert _run("--format", "healthbench", source, out) == 1
    assert [r["id"] for r in _read(out)] == ["ok-1", "ok-2"]
    assert capsys.readouterr().err.splitlines() == [
        f"{source}:2: not JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{source}:4: a row must be a JSON object",
        f"{source}:5: rubrics[1].points: must not be 0: such a criterion cannot change the score",
        f"{source}:6: prompt: missing",
        f"{source}:7: duplicate row id 'ok-1' (first on line 1)",
        f"{source}:8: prompt[0]: a chat message needs a role",
        f"{source}:8: rubrics: expected a list of {{criterion, points, tags}} objects, "
        "got a string",
        f"{source}:10: not UTF-8 text",
        f"{source}: 9 row(s), 2 imported with 3 criteria to {out}, 7 rejected",
    ]


def test_a_rubric_column_of_another_name_is_read_with_rubric_field(tmp_path: Path) -> None:
    source = tmp_path / "custom.jsonl"
    row = {"uid": 7, "task": "Name a prime.", "checklist": ["Names a prime number.", "Is brief."]}
    source.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    args = ["--rubric-field", "checklist", "--prompt-field", "task", "--id-field", "uid"]
    assert _run("--format", "strings", *args, source, out) == 0
    ((written,),) = [_read(out)]
    assert written["id"] == "7" and written["prompt"] == "Name a prime."
    assert [c["text"] for c in written["criteria"]] == ["Names a prime number.", "Is brief."]
    # Without the option, the default column is looked for and named in the error.
    assert _run("--format", "strings", source, out) == 1


def test_an_unreadable_input_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.jsonl"
    assert _run("--format", "rar", tmp_path / "missing.jsonl", out) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no output, no half-written part file


def test_an_unwritable_output_exits_2(tmp_path: Path) -> None:
    out = tmp_path / "no-such-folder" / "rows.jsonl"
    assert _run("--format", "rar", DATA / "rar.jsonl", out) == 2
    assert not out.parent.exists()


def _explicit(criteria: list[dict[str, Any]], scores: dict[str, Any]) -> float:
    """rewardsvc's explicit score recomputed from a judge's breakdown."""
    total = sum(c["weight"] * scores[c["id"]]["score"] for c in criteria)
    return min(1.0, max(0.0, total / sum(c["weight"] for c in criteria if c["weight"] > 0)))


@pytest.mark.judges
@pytest.mark.parametrize(("name", "row_index"), [("healthbench", 1), ("rar", 3)])
async def test_imported_rows_score_on_the_real_judges(
    name: str, row_index: int, tmp_path: Path, repo_root: Path, cpu_pool: JudgePool
) -> None:
    out = tmp_path / "rows.jsonl"
    assert _run("--format", name, DATA / f"{name}.jsonl", out) == 0
    row = _read(out)[row_index]
    rubric = {"id": row["id"], "criteria": row["criteria"], "judges": ["primary", "secondary"]}
    items = [
        {"id": "short", "prompt": row["prompt"], "completion": "I am not sure."},
        {"id": "long", "prompt": row["prompt"], "completion": "Here is a careful answer."},
    ]
    for item in items:
        if "reference" in row:
            item["reference"] = row["reference"]
    async with app_client(settings_for(repo_root / "rubrics"), cpu_pool) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": rubric, "items": items})
    assert reply.status_code == 200, reply.text
    ids = {c["id"] for c in row["criteria"]}
    for result in reply.json()["results"]:
        assert result["status"] == "ok", result
        assert 0.0 <= result["reward"] <= 1.0
        for judge in result["judges"].values():
            assert set(judge["criteria"]) == ids
            # The judge's score is the dataset's formula over its verdicts (P(yes) each).
            assert judge["score"] == pytest.approx(_explicit(row["criteria"], judge["criteria"]))
