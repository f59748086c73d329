"""``rewardsvc redteam`` on the real CPU judges (vLLM, SmolLM2 and Gemma 3) with a small
budget: it stays within the budget, writes a regression file, and ``probe --replay`` of
that file scores every attack with the reward it recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsvc.cli import main
from rewardsvc.core.pool import JudgePool
from rewardsvc.redteam.regression import Regression

ROOT = Path(__file__).resolve().parent.parent
POOL = ROOT / "deploy" / "cpu-judge" / "judges.yaml"

pytestmark = pytest.mark.judges


def test_a_small_run_replays_with_the_same_rewards(
    cpu_pool: JudgePool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text(
        (ROOT / "tests/data/redteam/short-answer.jsonl").read_text().splitlines()[0] + "\n"
    )
    out = tmp_path / "regression.json"
    config = ["--rubrics", str(ROOT / "rubrics"), "--judges", str(POOL)]
    args = ["redteam", str(items), "--rubric", "short-answer-correctness", "--budget", "60"]
    code = main([*args, *config, "--out", str(out), "--json"])
    assert code in (0, 1)
    reg = Regression.model_validate_json(out.read_text())
    assert reg.summary.calls <= 60 and reg.summary.calls > 6
    assert reg.attacks and set(reg.judges) == {"primary", "secondary"}
    capsys.readouterr()
    replay = main(["probe", "--replay", str(out), "--json", *config])
    report = json.loads(capsys.readouterr().out)
    assert report["comparable"] is True
    for row, attack in zip(report["attacks"], reg.attacks, strict=True):
        assert row["reward"] == pytest.approx(attack.reward, abs=1e-3)
        assert row["baseline"] == pytest.approx(attack.baseline_reward, abs=1e-3)
    assert replay == (1 if any(r["fails"] for r in report["attacks"]) else 0)
