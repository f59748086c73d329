"""ORS episodes run end to end by the ``openreward`` client (0.1.167, in its own cached venv)
against rewardsvc serving a shipped rubric as an environment, scored by the real CPU
judges: the reward the client reads is the one ``/v1/rewards`` gives the same item; with
the judges unreachable the client gets its tool-failure exception, never a reward of 0.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import CPU_POOL, Service, start_service, stop_service
from trainers import venvs
from trainers.harness import proxied_pool

from rewardsvc.core.pool import JudgePool

pytestmark = [pytest.mark.judges, pytest.mark.slow]

EPISODE = Path(__file__).resolve().parent / "ors" / "ors_episode.py"
RUBRIC = "short-answer-correctness"
TASKS = [
    {"prompt": "What is 2 + 3?", "reference": "5"},
    {"id": "capital", "prompt": "What is the capital of France?", "reference": "Paris"},
    {"prompt": "What is 10 - 4?", "reference": "6", "split": "test"},
]


def write_env(folder: Path) -> Path:
    """An environment ``short-answer`` over the shipped rubric, with TASKS."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    env = folder / "short-answer.yaml"
    env.write_text(f"name: short-answer\ntarget: {RUBRIC}\ntasks: tasks.jsonl\n")
    return env


def ors_service(folder: Path, pool: Path = CPU_POOL, **extra: str) -> Service:
    """``rewardsvc serve`` with the environment of ``write_env`` and judge pool ``pool``."""
    env = {
        "REWARDSVC_ORS_ENVIRONMENTS": json.dumps([str(write_env(folder / "env"))]),
        "REWARDSVC_JUDGE_POOL": str(pool),
        **extra,
    }
    return start_service(env, folder / "service.log", timeout_s=240)


@pytest.fixture(scope="module")
def ors(cpu_pool: JudgePool, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    running = ors_service(tmp_path_factory.mktemp("ors"))
    yield running
    stop_service(running)


def episode(python: Path, url: str, env: str, split: str, index: int, *answers: str,
            out: Path) -> dict[str, Any]:  # fmt: skip
    """One episode run by the openreward client (tests/ors/ors_episode.py)."""
    done = subprocess.run(
        [str(python), str(EPISODE), url, env, split, str(index), *answers, str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def direct_reward(url: str, item: dict[str, Any]) -> dict[str, Any]:
    """The item's result from /v1/rewards."""
    body = {"rubric": RUBRIC, "items": [item]}
    response = httpx.post(f"{url}/v1/rewards", json=body, timeout=300)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["results"][0]
    return result


def test_an_ors_episode_gets_the_reward_of_v1_rewards(ors: Service, tmp_path: Path) -> None:
    python = venvs.ensure("openreward")
    got = episode(python, ors.url, "short-answer", "train", 1, "Paris", "Lyon",
                  out=tmp_path / "out.json")  # fmt: skip
    assert got["splits"] == ["train", "test"] and got["num_tasks"] == 2
    assert got["tasks"][1] == {"id": "capital", "split": "train", "index": 1}  # no reference
    assert got["tools"] == ["answer"]
    assert got["prompt"] == ["What is the capital of France?"]
    scored, after = got["calls"]
    assert scored["finished"] is True and scored["metadata"]["status"] in ("ok", "degraded")
    assert scored["metadata"]["cached"] is False  # the episode's own judge calls
    assert scored["metadata"]["rubric"]["id"] == RUBRIC
    item = {"id": "capital", "prompt": "What is the capital of France?", "completion": "Paris"}
    direct = direct_reward(ors.url, {**item, "reference": "Paris"})
    assert direct["status"] == scored["metadata"]["status"]
    assert isinstance(scored["reward"], float) and scored["reward"] == direct["reward"]
    rubric = httpx.get(f"{ors.url}/v1/rubrics/{RUBRIC}", timeout=30).json()
    assert scored["metadata"]["rubric"]["version"] == rubric["version"]
    # A second answer after the episode finished: the client's ToolCallError, no reward.
    assert after["exception"] == "ToolCallError" and "episode_finished" in after["message"]


def test_the_default_environment_serves_a_client_naming_none(ors: Service, tmp_path: Path) -> None:
    python = venvs.ensure("openreward")
    got = episode(python, ors.url, "-", "test", 0, "6", out=tmp_path / "out.json")
    assert got["prompt"] == ["What is 10 - 4?"]
    (scored,) = got["calls"]
    item = {"id": "test-0", "prompt": "What is 10 - 4?", "completion": "6", "reference": "6"}
    assert scored["reward"] == direct_reward(ors.url, item)["reward"] is not None


def test_judges_unreachable_is_a_tool_failure_never_a_zero(
    cpu_pool: JudgePool, tmp_path: Path
) -> None:
    python = venvs.ensure("openreward")
    pool_file, proxies = proxied_pool(tmp_path)
    service = ors_service(tmp_path, pool_file, REWARDSVC_REQUEST_TIMEOUT_S="15")
    try:
        for proxy in proxies:
            proxy.down()
        got = episode(python, service.url, "short-answer", "train", 0, "5",
                      out=tmp_path / "down.json")  # fmt: skip
        (failed,) = got["calls"]
        assert "reward" not in failed
        assert failed["exception"] == "ToolFailed" and "judge_error" in failed["message"]
        assert sum(p.failed for p in proxies) > 0
    finally:
        stop_service(service)
        for proxy in proxies:
            proxy.close()


def test_trl_openreward_spec_trains_on_the_environment(ors: Service, tmp_path: Path) -> None:
    """TRL's own ORS adapter: dataset, one rollout's environment, its reward function."""
    python = venvs.ensure("trl-openreward")
    out = tmp_path / "trl.json"
    script = EPISODE.parent / "trl_ors.py"
    done = subprocess.run(
        [str(python), str(script), ors.url, "short-answer", "0", "5", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(out.read_text())
    assert got["task_index"] == [0, 1] and got["prompt"] == "What is 2 + 3?"
    assert got["finished"] is True
    item = {"id": "train-0", "prompt": "What is 2 + 3?", "completion": "5", "reference": "5"}
    assert got["rewards"] == [direct_reward(ors.url, item)["reward"]]
    assert isinstance(got["rewards"][0], float)
