"""A real TRL GRPO training run on CPU whose only reward is rewardsvc with the real judges.

TRL runs in its own virtual environment ($REWARDSVC_CACHE/trl-venv: torch CPU, trl, and
this repository's client package), created here on first use, never in the service's.
The policy is the SmolLM2-135M-Instruct folder that deploy/cpu-judge converts. The run is
tiny (4 prompts, 2 generations each, 16-token completions, 2 optimizer steps) and the test
checks that the rewards TRL logged are exactly the rewards the service returned.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from conftest import Service
from rewardlog import reward_lines

pytestmark = [pytest.mark.slow, pytest.mark.judges]

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "trl_run_script.py"
RUBRIC = "short-answer-correctness"

# torch first and pinned: an unpinned torch (or trl's own torch requirement) resolves to a
# multi-GB CUDA build; 2.13.0 has a CPU build. trl 1.16 works with it and transformers 5.x.
TRL_VENV_STEPS = (("torch==2.13.0",), ("trl==1.16.0", "torch==2.13.0"))


def cache_dir() -> Path:
    if os.environ.get("REWARDSVC_CACHE"):
        return Path(os.environ["REWARDSVC_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "rewardsvc"


def run(command: list[str], log: Path, timeout: float) -> None:
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
    if done.returncode != 0:
        tail = log.read_text()[-4000:]
        pytest.fail(f"command failed ({done.returncode}): {' '.join(command)}\n{tail}")


def ensure_trl_venv() -> Path:
    """$REWARDSVC_CACHE/trl-venv with torch CPU + trl, and the client installed fresh."""
    venv = cache_dir() / "trl-venv"
    python = venv / "bin" / "python"
    recipe = json.dumps(TRL_VENV_STEPS)
    marker = venv / ".rewardsvc-trl-recipe"
    log = cache_dir() / "trl-venv.log"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with (cache_dir() / "trl-venv.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time across test processes
        if not (marker.exists() and marker.read_text() == recipe and python.exists()):
            shutil.rmtree(venv, ignore_errors=True)
            run([sys.executable, "-m", "venv", str(venv)], log, 300)
            for step in TRL_VENV_STEPS:
                run([str(python), "-m", "pip", "install", *step], log, 1800)
            marker.write_text(recipe)
        # The client under test changes between runs: reinstall it (no dependency changes).
        run(
            [str(python), "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps",
             str(ROOT / "clients" / "python")],
            log,
            600,
        )  # fmt: skip
        run([str(python), "-m", "pip", "install", "--quiet", "httpx>=0.27,<1"], log, 600)
    return python


def policy_model() -> Path:
    """The converted SmolLM2 HF folder made by deploy/cpu-judge (the judges' own model)."""
    override = os.environ.get("REWARDSVC_TRL_POLICY")
    models = cache_dir() / "cpu-judge" / "models"
    candidates = [Path(override)] if override else []
    candidates += [models / "smollm2", models / "smollm2-135m-instruct"]
    for path in candidates:
        if (path / "config.json").exists():
            return path
    pytest.fail(f"no policy model folder among {[str(c) for c in candidates]}")


def same(a: float | None, b: float | None, rel: float = 1e-6) -> bool:
    """Equal rewards, where TRL stores float32 and None/NaN mean "no reward"."""
    a_missing = a is None or (isinstance(a, float) and math.isnan(a))
    b_missing = b is None or (isinstance(b, float) and math.isnan(b))
    if a_missing or b_missing:
        return a_missing and b_missing
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-7)


def grpo_run(service: Service, tmp_path: Path, rubric: str, *args: str) -> dict[str, Any]:
    """A two-step GRPO run of tests/trl_run_script.py (its further ``args``) against the
    service with ``rubric``; the script's report, after printing how long the run took."""
    python = ensure_trl_venv()
    report_path = tmp_path / "report.json"
    log = tmp_path / "trl.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSVC_")}
    env.update({"HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    command = [str(python), str(SCRIPT), "--model", str(policy_model()), "--out", str(report_path)]
    command += ["--url", service.url, "--rubric", rubric, "--steps", "2", *args]
    started = time.monotonic()
    with log.open("w") as out:
        done = subprocess.run(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path, timeout=3600
        )
    assert done.returncode == 0, log.read_text()[-6000:]
    report: dict[str, Any] = json.loads(report_path.read_text())
    print(
        f"\nTRL run ({rubric}): {report['global_step']} steps, {time.monotonic() - started:.0f} s"
        f" (train {report['train_seconds']:.0f} s); {report['versions']}"
    )
    return report


def test_trl_grpo_run_rewards_are_the_service_rewards(service: Service, tmp_path: Path) -> None:
    report = grpo_run(service, tmp_path, RUBRIC)

    name = f"rewardsvc/{RUBRIC}"
    assert report["reward_func_name"] == name
    assert report["global_step"] == 2  # two optimizer steps

    # What the adapter returned to TRL, one call per generation batch (= per step here).
    calls = report["calls"]
    assert len(calls) == 2
    for call in calls:
        assert len(call["completions"]) == 4  # 2 prompts x num_generations=2
        assert call["prompts"][0] == call["prompts"][1]  # a group shares its prompt
        assert isinstance(call["completions"][0], list)  # conversational: messages
        assert {"log_metric", "log_extra", "trainer_state", "answer"} <= set(call["kwargs"])
    assert any(r is not None for call in calls for r in call["rewards"])

    # 1. The adapter returned what the service returned: the service's reward log.
    rewards = reward_lines(Path(service.env["REWARDSVC_REWARD_LOG"]))
    ours = [r for r in rewards if r["metadata"].get("run") == report["run_id"]]
    by_batch: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in ours:
        by_batch[record["metadata"]["batch"]].append(record)
    assert sorted(by_batch) == [0, 1]
    for batch, call in enumerate(calls):
        records = sorted(by_batch[batch], key=lambda r: int(r["id"]))
        assert [r["rubric"] for r in records] == [RUBRIC] * 4
        assert [r["metadata"]["step"] for r in records] == [call["step"]] * 4
        service_rewards = [r["reward"] for r in records]
        assert all(same(a, b, 0) for a, b in zip(service_rewards, call["rewards"], strict=True))

    # 2. TRL logged those rewards per completion (its completions tables) ...
    tables = report["completions_tables"]
    assert len(tables) == 2
    for table, call in zip(tables, calls, strict=True):
        rows = table["rows"]
        assert [row["completion"] for row in rows] == call["completions"]
        logged = [row[name] for row in rows]
        assert all(same(a, b) for a, b in zip(logged, call["rewards"], strict=True)), (
            logged,
            call["rewards"],
        )
        assert [row[f"{name}/status"] for row in rows] == [
            r["status"] for r in sorted(by_batch[tables.index(table)], key=lambda r: int(r["id"]))
        ]

    # 3. ... and as the step's mean reward in log_history.
    steps = [h for h in report["log_history"] if "reward" in h]
    assert len(steps) == 2
    for entry, call in zip(steps, calls, strict=True):
        scored = [r for r in call["rewards"] if r is not None]
        assert math.isclose(entry["reward"], sum(scored) / len(scored), rel_tol=1e-5)
        assert math.isclose(entry[f"rewards/{name}/mean"], entry["reward"], rel_tol=1e-6)
        assert entry[f"{name}/ok"] + entry[f"{name}/degraded"] == pytest.approx(
            len(scored) / len(call["rewards"])
        )


PER_PROMPT = ROOT / "tests" / "data" / "per_prompt_grpo.jsonl"


def test_trl_grpo_run_judges_each_prompt_by_its_own_rubric(
    service: Service, tmp_path: Path
) -> None:
    """A GRPO run on a dataset with a HealthBench-style rubric per prompt: the adapter sends
    the ``rubrics`` column as each item's criteria, and every completion is scored with its
    prompt's own rubric version (not the template's), as TRL logged it."""
    from rewardsvc_client import Client

    report = grpo_run(
        service, tmp_path, "per-prompt", "--dataset", str(PER_PROMPT), "--reference-column", "",
        "--criteria-column", "rubrics", "--criteria-format", "healthbench",
    )  # fmt: skip
    name = "rewardsvc/per-prompt"
    assert report["global_step"] == 2
    rows = {json.dumps(r["prompt"]): r["rubrics"] for r in map(json.loads, PER_PROMPT.open())}

    # The version each prompt's own rubric has: the service's answer for its criteria.
    def own_version(prompt: Any, criteria: Any) -> tuple[str | None, str]:
        with Client(service.url) as client:
            reply = client.rewards(
                "per-prompt",
                [{"prompt": prompt, "completion": "-", "criteria": criteria}],
                {"criteria_format": "healthbench"},
            )
        return reply.results[0].version, reply.rubric.version

    calls, tables = report["calls"], report["completions_tables"]
    assert len(calls) == len(tables) == 2
    seen: set[str] = set()
    for call, table in zip(calls, tables, strict=True):
        # TRL handed the adapter the dataset's rubric column, one entry per completion.
        assert call["criteria"] == [rows[json.dumps(p)] for p in call["prompts"]]
        logged = table["rows"]
        assert [row["completion"] for row in logged] == call["completions"]
        for prompt, row in zip(call["prompts"], logged, strict=True):
            version, template = own_version(prompt, rows[json.dumps(prompt)])
            assert row[f"{name}/version"] == version != template
            assert row[f"{name}/status"] in ("ok", "degraded")
            assert isinstance(row[name], float) and 0.0 <= row[name] <= 1.0
            seen.add(version or "")
        assert all(
            same(a, b) for a, b in zip([r[name] for r in logged], call["rewards"], strict=True)
        )
    assert len(seen) >= 2  # different prompts, different rubrics


OBJECTIVES_DATA = ROOT / "tests" / "data" / "math_objectives_grpo.jsonl"


def test_trl_grpo_run_objectives_are_the_service_objectives(
    service: Service, tmp_path: Path
) -> None:
    """A GRPO run (GDPO aggregation) with two objectives of one recipe, each its own reward
    function (``trl_objective_funcs``): TRL logs each function's rewards per completion,
    and they are the objectives the service returned for those items; the two functions
    shared one request per generation batch."""
    report = grpo_run(
        service, tmp_path, "math-objectives", "--dataset", str(OBJECTIVES_DATA),
        "--objectives", "correct,explanation",
    )  # fmt: skip
    names = ["rewardsvc/math-objectives/correct", "rewardsvc/math-objectives/explanation"]
    assert report["reward_func_names"] == names
    assert report["global_step"] == 2
    assert report["requests"] == 2  # one request per batch for both objective functions

    # What the service returned, from its reward log: 4 items per batch, one request each.
    records = reward_lines(Path(service.env["REWARDSVC_REWARD_LOG"]))
    ours = [r for r in records if r["metadata"].get("run") == report["run_id"]]
    by_batch: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in ours:
        by_batch[record["metadata"]["batch"]].append(record)
    assert sorted(by_batch) == [0, 1]
    tables = report["completions_tables"]
    assert len(tables) == 2
    values: dict[str, list[float | None]] = defaultdict(list)
    for batch, table in enumerate(tables):
        served = sorted(by_batch[batch], key=lambda r: int(r["id"]))
        assert [r["rubric"] for r in served] == ["math-objectives"] * 4  # not 8: shared
        rows = table["rows"]
        assert len(rows) == 4
        for objective, name in zip(("correct", "explanation"), names, strict=True):
            logged = [row[name] for row in rows]
            service_values = [r["objectives"][objective] for r in served]
            assert all(same(a, b) for a, b in zip(logged, service_values, strict=True)), (
                name,
                logged,
                service_values,
            )
            values[objective] += service_values
    # Both objectives were scored, on the scale the recipe gives them.
    assert all(v in (0.0, 1.0) for v in values["correct"] if v is not None)
    assert any(v is not None for v in values["explanation"])

    # TRL's per-function mean reward of each step is the mean of the service's values.
    steps = [h for h in report["log_history"] if "reward" in h]
    assert len(steps) == 2
    for entry, batch in zip(steps, (0, 1), strict=True):
        served = by_batch[batch]
        for objective, name in zip(("correct", "explanation"), names, strict=True):
            got = [
                r["objectives"][objective] for r in served if r["objectives"][objective] is not None
            ]
            if got:
                assert math.isclose(
                    entry[f"rewards/{name}/mean"], sum(got) / len(got), rel_tol=1e-5
                )
