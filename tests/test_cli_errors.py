"""Every command that reads a file named on its command line: a missing file is one line
on stderr naming it and exit status 2, never a traceback (``rewardsvc.cli.main``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rewardsvc.cli import main

ROOT = Path(__file__).resolve().parent.parent
POOL = str(ROOT / "deploy" / "cpu-judge" / "judges.yaml")
LIBRARY = str(ROOT / "rubrics")
POINTWISE = str(ROOT / "rubrics" / "data" / "pointwise-small.jsonl")
ITEMS = str(ROOT / "tests" / "data" / "redteam" / "short-answer.jsonl")
PROMPTS = str(ROOT / "tests" / "data" / "generate_prompts.jsonl")
CONFIG = ["--judges", POOL, "--rubrics", LIBRARY]
ONE = ["--prompt", "What is 7 * 8?", "--completion", "56"]

NO_POOL = ["--judges", "MISSING", "--rubrics", LIBRARY]
NO_LIBRARY = ["--judges", POOL, "--rubrics", "MISSING"]
HELPFUL = ["--rubric", "helpful-answer"]
SHORT = ["--rubric", "short-answer-correctness", "--out", "OUT"]

# Each command line, with MISSING where the missing file goes and OUT for a file it writes.
COMMANDS = {
    "label": ["label", "MISSING", "OUT", *HELPFUL, *CONFIG],
    "label --rubrics": ["label", POINTWISE, "OUT", *HELPFUL, *NO_LIBRARY],
    "eval": ["eval", "MISSING", *HELPFUL, *CONFIG],
    "eval --judges": ["eval", POINTWISE, *HELPFUL, *NO_POOL],
    "eval --rubrics": ["eval", POINTWISE, *HELPFUL, *NO_LIBRARY],
    "redteam": ["redteam", "MISSING", *SHORT, *CONFIG],
    "redteam --judges": ["redteam", ITEMS, *SHORT, *NO_POOL],
    "rubrics import": ["rubrics", "import", "MISSING", "OUT", "--format", "healthbench"],
    "rubrics generate": ["rubrics", "generate", "MISSING", "OUT", "--judges", POOL],
    "rubrics generate --judges": ["rubrics", "generate", PROMPTS, "OUT", "--judges", "MISSING"],
    "rubrics health": ["rubrics", "health", "default", "--log", "MISSING"],
    "score --judges": ["score", *HELPFUL, *ONE, *NO_POOL],
    "score --rubrics": ["score", *HELPFUL, *ONE, *NO_LIBRARY],
    "probe --judges": ["probe", *HELPFUL, *ONE, *NO_POOL],
    "probe --replay": ["probe", "--replay", "MISSING", *CONFIG],
    "validate": ["validate", "MISSING", "--judges", POOL],
    "validate --judges": ["validate", LIBRARY, "--judges", "MISSING"],
    "serve --judges": ["serve", *NO_POOL],
    "serve --rubrics": ["serve", *NO_LIBRARY],
}


def _run(argv: list[str]) -> int:
    """The exit status of the command (some end by raising SystemExit, as a script may)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_missing_file_is_one_line_and_exit_2(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing.jsonl")
    out = str(tmp_path / "out.jsonl")
    argv = [missing if a == "MISSING" else out if a == "OUT" else a for a in COMMANDS[name]]
    assert _run(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and missing in lines[0], err
    assert "Traceback" not in err
    assert not Path(out).exists()


def test_the_console_command_prints_no_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "items.jsonl"
    argv = ["eval", str(missing), "--rubric", "helpful-answer", *CONFIG]
    done = subprocess.run(
        [sys.executable, "-m", "rewardsvc.cli", *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"rewardsvc: error: {missing}: No such file or directory"


def test_an_unknown_rubric_id_is_one_line_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["eval", POINTWISE, "--rubric", "no-such-rubric", *CONFIG]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rewardsvc: error: unknown rubric 'no-such-rubric'; known: ")
    assert "helpful-answer" in err and "math-verified" in err and "\n" not in err


def test_serve_takes_the_reward_log_file_the_monitor_docs_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewardsvc.cli import build_parser
    from rewardsvc.cli_local import _settings

    monkeypatch.delenv("REWARDSVC_REWARD_LOG", raising=False)
    log = tmp_path / "rewards.jsonl"
    args = build_parser().parse_args(["serve", "--reward-log", str(log), *CONFIG])
    assert _settings(args).reward_log == log
    assert _settings(build_parser().parse_args(["serve", *CONFIG])).reward_log is None


def test_eval_names_every_row_it_cannot_measure_and_scores_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before, a row of neither shape was silently left out of the figures (exit 0), a
    # text label and a line that is not JSON were tracebacks.
    data = tmp_path / "labelled.jsonl"
    rows = [
        '{"prompt": "q", "completion": "a", "label": "yes"}',
        '{"id": "k", "prompt": "q", "chosen": "a", "rejected": "b"}',
        '{"prompt": "q", "completion": "a", "label": 1}',
        "",
        '{"prompt": "q", "chosen": "a"}',
    ]
    data.write_text("\n".join(rows) + "\n")
    assert _run(["eval", str(data), *HELPFUL, *CONFIG]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"rewardsvc: error: {data}:1: label must be a number in [0, 1], got 'yes'",
        f"rewardsvc: error: {data}:5: a row needs completion and label, or chosen and rejected",
    ]
    data.write_text(rows[2] + "\nnot json\n")
    assert _run(["eval", str(data), *HELPFUL, *CONFIG]) == 2
    assert (
        capsys.readouterr().err.strip() == f"rewardsvc: error: {data}:2: not JSON: Expecting value"
    )
