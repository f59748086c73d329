"""rewardsvc started the way its container starts it, configured only by environment.

The command is read from deploy/Dockerfile (ENTRYPOINT + CMD) and its ENV is
the base of the environment, which is otherwise scrubbed: PATH and REWARDSVC_*
variables only, run from an empty folder so that no default path of the
repository can stand in for a missing setting. Paths that the image has at
/etc/rewardsvc/ point at what it copies or mounts there instead: the
repository's rubrics/ and, as the judge pool, the real CPU judges.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from test_deploy_static import (
    ROOT,
    dockerfile_command,
    dockerfile_env,
    dockerfile_healthcheck,
)

from rewardsvc.core.pool import JudgePool

CPU_POOL = ROOT / "deploy" / "cpu-judge" / "judges.yaml"
GPU_POOL = ROOT / "deploy" / "judges.gpu.yaml"
RUBRICS = ROOT / "rubrics"

# Refusing to start is a matter of reading two files: allow for a slow,
# shared machine, but not for a service that started and waits on judges.
# A refusal is immediate; this only stops a service that wrongly starts from hanging the test.
REFUSE_HANG_GUARD_S = 60.0


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrubbed_env(**settings: str) -> dict[str, str]:
    """PATH (with this interpreter's scripts first) plus the image's ENV and ``settings``."""
    scripts = Path(sys.executable).parent
    env = {"PATH": f"{scripts}{os.pathsep}{os.environ.get('PATH', os.defpath)}"}
    env.update(dockerfile_env())
    env.update(
        {
            # The image listens on 0.0.0.0 inside its own network namespace; on a
            # shared machine the test keeps to loopback.
            "REWARDSVC_HOST": "127.0.0.1",
            "REWARDSVC_PORT": str(free_port()),
            "REWARDSVC_RUBRICS_DIR": str(RUBRICS),
        }
    )
    env.update(settings)
    return env


def image_command(env: dict[str, str]) -> list[str]:
    """The Dockerfile's ENTRYPOINT + CMD, its program found on ``env``'s PATH."""
    command = dockerfile_command()
    program = shutil.which(command[0], path=env["PATH"])
    assert program, f"{command[0]} is not on PATH: is rewardsvc installed (pip install -e .)?"
    return [program, *command[1:]]


def refuse(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the image command expecting it to exit by itself, non-zero, with no traceback."""
    try:
        done = subprocess.run(
            image_command(env),
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=REFUSE_HANG_GUARD_S,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"rewardsvc serve did not exit; it printed:\n{exc.stderr}") from exc
    assert done.returncode != 0, f"started anyway:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, f"a traceback is no clear message:\n{done.stderr}"
    return done


def test_refuses_a_missing_judge_pool(tmp_path: Path) -> None:
    missing = tmp_path / "judges.yaml"
    done = refuse(scrubbed_env(REWARDSVC_JUDGE_POOL=str(missing)), tmp_path)
    assert str(missing) in done.stderr and "not found" in done.stderr, done.stderr


def test_refuses_an_invalid_judge_pool(tmp_path: Path) -> None:
    pool = tmp_path / "judges.yaml"
    pool.write_text(
        "judges:\n"
        "  primary:\n"
        "    model: some-model\n"
        "    base_urls: [http://127.0.0.1:9/v1]\n"
        "    max_concurency: 8\n"
    )
    done = refuse(scrubbed_env(REWARDSVC_JUDGE_POOL=str(pool)), tmp_path)
    # file:line of the misspelt key, and its name.
    assert re.search(rf"{re.escape(str(pool))}:5:.*max_concurency", done.stderr), done.stderr


def test_refuses_unparseable_judge_pool(tmp_path: Path) -> None:
    pool = tmp_path / "judges.yaml"
    pool.write_text("judges:\n  primary: [unclosed\n")
    done = refuse(scrubbed_env(REWARDSVC_JUDGE_POOL=str(pool)), tmp_path)
    assert str(pool) in done.stderr, done.stderr


def test_refuses_when_a_judge_api_key_variable_is_unset(tmp_path: Path) -> None:
    variable = "REWARDSVC_TEST_JUDGE_KEY_UNSET"
    pool = tmp_path / "judges.yaml"
    pool.write_text(
        GPU_POOL.read_text(encoding="utf-8").replace(
            "    retries: 3\n", f"    retries: 3\n    api_key_env: {variable}\n", 1
        )
    )
    assert variable in pool.read_text()
    env = scrubbed_env(REWARDSVC_JUDGE_POOL=str(pool))
    env.pop(variable, None)
    done = refuse(env, tmp_path)
    assert variable in done.stderr, done.stderr


def test_refuses_a_missing_rubrics_dir(tmp_path: Path) -> None:
    missing = tmp_path / "rubrics"
    env = scrubbed_env(REWARDSVC_JUDGE_POOL=str(GPU_POOL), REWARDSVC_RUBRICS_DIR=str(missing))
    done = refuse(env, tmp_path)
    assert str(missing) in done.stderr, done.stderr


def test_refuses_an_invalid_setting(tmp_path: Path) -> None:
    env = scrubbed_env(REWARDSVC_JUDGE_POOL=str(GPU_POOL), REWARDSVC_MAX_ITEMS="many")
    done = refuse(env, tmp_path)
    assert "REWARDSVC_MAX_ITEMS: Input should be a valid integer" in done.stderr, done.stderr


# ----------------------------------------------------------------- the real thing


@dataclass
class Running:
    """A rewardsvc process started from the image command."""

    url: str
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log: Path
    state: Path

    def output(self) -> str:
        """What the service printed so far."""
        return self.log.read_text(errors="replace")


KEY_IN_FILE = "deploy-test-key-from-file"
KEY_IN_ENV = "deploy-test-key-from-env"


@pytest.fixture(scope="module")
def running(cpu_pool: JudgePool, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """rewardsvc serve on the CPU judges, every setting from the environment."""
    folder = tmp_path_factory.mktemp("deploy-env")
    state = folder / "state"
    state.mkdir()
    keys = folder / "api-keys"
    keys.write_text(f"# one key per line\n{KEY_IN_FILE}\n")
    env = scrubbed_env(
        REWARDSVC_JUDGE_POOL=str(CPU_POOL),
        REWARDSVC_API_KEYS=KEY_IN_ENV,
        REWARDSVC_API_KEYS_FILE=str(keys),
        REWARDSVC_MAX_BODY_BYTES=str(256 * 1024),
        REWARDSVC_MAX_ITEMS="8",
        REWARDSVC_MAX_TEXT_CHARS="4000",
        REWARDSVC_MAX_INFLIGHT="64",
        REWARDSVC_CACHE_SIZE="1000",
        REWARDSVC_CACHE_PATH=str(state / "verdicts.sqlite"),
        REWARDSVC_REWARD_LOG=str(state / "rewards.jsonl"),
        REWARDSVC_LOG_LEVEL="info",
    )
    # Judge API keys are the one thing a pool may need from outside REWARDSVC_*.
    for judge in cpu_pool.judges.values():
        if judge.api_key_env and judge.api_key_env in os.environ:
            env[judge.api_key_env] = os.environ[judge.api_key_env]
    log = folder / "service.log"
    cwd = folder / "cwd"
    cwd.mkdir()
    with log.open("wb") as out:
        process = subprocess.Popen(
            image_command(env), env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT
        )
    service = Running(f"http://127.0.0.1:{env['REWARDSVC_PORT']}", env, process, log, state)
    try:
        deadline = time.monotonic() + 120
        ready = None
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"rewardsvc serve exited {process.returncode}:\n{service.output()}")
            try:
                ready = httpx.get(f"{service.url}/readyz", timeout=5)
                if ready.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        else:
            detail = ready.text if ready is not None else "no answer"
            pytest.fail(f"not ready in 120 s ({detail}):\n{service.output()}")
        yield service
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


ITEMS = [
    {
        "id": "right",
        "prompt": "What is 2 + 2?",
        "completion": "2 + 2 = 4. The answer is 4.",
        "reference": "4",
    },
    {
        "id": "wrong",
        "prompt": "What is 3 * 3?",
        "completion": "3 * 3 = 10. The answer is 10.",
        "reference": "9",
    },
    {
        "id": "capital",
        "prompt": "What is the capital of France?",
        "completion": "The capital of France is Paris.",
        "reference": "Paris",
    },
    {"id": "no-completion", "prompt": "What is 1 + 1?", "reference": "2"},
    {"id": "too-long", "prompt": "Say hi.", "completion": "hi " * 2000, "reference": "hi"},
]


@pytest.mark.judges
def test_image_command_scores_a_batch(running: Running) -> None:
    client = httpx.Client(base_url=running.url, timeout=300)
    body = {"rubric": "short-answer-correctness", "items": ITEMS}

    # REWARDSVC_API_KEYS and REWARDSVC_API_KEYS_FILE both took effect.
    assert client.post("/v1/rewards", json=body).status_code == 401
    assert client.post("/v1/rewards", json=body, headers=_auth("wrong")).status_code == 401
    reply = client.post("/v1/rewards", json=body, headers=_auth(KEY_IN_FILE))
    assert reply.status_code == 200, reply.text
    response = reply.json()
    assert response["rubric"]["id"] == "short-answer-correctness"
    assert response["rubric"]["version"].startswith("sha256:")
    results = {r["id"]: r for r in response["results"]}
    assert list(results) == [item["id"] for item in ITEMS]
    for item_id in ("right", "wrong", "capital"):
        result = results[item_id]
        assert result["status"] in ("ok", "degraded"), result
        assert 0.0 <= result["reward"] <= 1.0, result
        assert set(result["judges"]) == {"primary", "secondary"}, result
    assert results["no-completion"]["status"] == "rejected"
    assert "completion" in results["no-completion"]["error"], results["no-completion"]
    # REWARDSVC_MAX_TEXT_CHARS=4000: the 6000-character completion is refused alone.
    assert results["too-long"]["status"] == "rejected", results["too-long"]
    assert response["usage"]["judge_calls"] > 0

    # REWARDSVC_MAX_ITEMS=8 and REWARDSVC_MAX_BODY_BYTES=256 KiB.
    many = {"rubric": "short-answer-correctness", "items": ITEMS[:1] * 9}
    assert client.post("/v1/rewards", json=many, headers=_auth(KEY_IN_ENV)).status_code == 413
    big = {"rubric": "short-answer-correctness", "items": [{"x": "y" * 300_000}]}
    assert client.post("/v1/rewards", json=big, headers=_auth(KEY_IN_ENV)).status_code == 413

    # /metrics needs a key; /healthz and /readyz do not (probes carry none).
    assert client.get("/metrics").status_code == 401
    metrics = client.get("/metrics", headers=_auth(KEY_IN_ENV))
    assert metrics.status_code == 200 and "judge" in metrics.text
    assert client.get("/healthz").status_code == 200

    # REWARDSVC_REWARD_LOG: one line per scored item (written off the request path).
    log = running.state / "rewards.jsonl"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (
        not log.exists() or len(log.read_text().splitlines()) < 3
    ):
        time.sleep(0.2)
    assert log.exists() and len(log.read_text().splitlines()) >= 3, running.output()


@pytest.mark.judges
def test_image_healthcheck_command(running: Running) -> None:
    """The Dockerfile's HEALTHCHECK passes against the service and fails without one."""
    command = dockerfile_healthcheck()
    python = sys.executable if command[0] == "python" else command[0]
    env = {"PATH": running.env["PATH"], "REWARDSVC_PORT": running.env["REWARDSVC_PORT"]}
    done = subprocess.run([python, *command[1:]], env=env, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    env["REWARDSVC_PORT"] = str(free_port())
    done = subprocess.run([python, *command[1:]], env=env, capture_output=True, timeout=30)
    assert done.returncode != 0


@pytest.mark.judges
def test_image_command_stops_cleanly_on_sigterm(running: Running) -> None:
    """`docker stop` and Kubernetes send SIGTERM: the service shuts down and keeps its state."""
    # Runs last in this module: it ends the shared service. One scored item
    # first, so that the verdict cache has something to persist.
    reply = httpx.post(
        f"{running.url}/v1/rewards",
        json={"rubric": "short-answer-correctness", "items": ITEMS[:1]},
        headers=_auth(KEY_IN_ENV),
        timeout=300,
    )
    assert reply.status_code == 200, reply.text
    running.process.send_signal(signal.SIGTERM)
    try:
        code = running.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running 30 s after SIGTERM:\n{running.output()}")
    # uvicorn re-raises the signal once it has shut down, so "killed by SIGTERM"
    # is a clean exit too, when the shutdown ran to its end.
    assert code in (0, -signal.SIGTERM), running.output()
    assert "Application shutdown complete" in running.output(), running.output()
    assert (running.state / "verdicts.sqlite").exists(), "REWARDSVC_CACHE_PATH was not used"


def test_refuses_api_keys_that_hold_no_key(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("# filled by the secret mount\n")
    env = scrubbed_env(REWARDSVC_JUDGE_POOL=str(GPU_POOL), REWARDSVC_API_KEYS_FILE=str(keys))
    done = refuse(env, tmp_path)
    assert "holds no key; refusing to serve without authentication" in done.stderr, done.stderr
