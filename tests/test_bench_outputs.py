"""A bench run as its docs show writes to the git-ignored ``bench/results/local/``, never
over the tracked results of ``bench/results/`` (``bench/outputs.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import outputs, rubric_health

ROOT = Path(__file__).resolve().parent.parent


def _status() -> str:
    done = subprocess.run(
        ["git", "status", "--porcelain", "--ignored=no", "--", "bench/results"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_a_bench_without_out_leaves_the_tracked_results_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _status()
    default = ROOT / "bench" / "results" / "local"
    assert default == outputs.LOCAL_RESULTS_DIR
    # The default folder, moved to a temporary one so the test leaves no file behind.
    local = tmp_path / "local"
    monkeypatch.setattr(outputs, "LOCAL_RESULTS_DIR", local)
    monkeypatch.setattr(sys, "argv", ["python -m bench.rubric_health", "--quick"])
    rubric_health.main()
    assert sorted(p.name for p in local.iterdir()) == ["rubric_health.json", "rubric_health.md"]
    assert _status() == before
    # The real default is git-ignored, and the tracked results are not.
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", str(default / "rubric_health.json")], cwd=ROOT
    )
    assert ignored.returncode == 0
    tracked = subprocess.run(
        ["git", "check-ignore", "-q", str(ROOT / "bench" / "results" / "rubric_health.json")],
        cwd=ROOT,
    )
    assert tracked.returncode == 1
