"""Cached virtual environments holding one trainer's real package each.

Each trainer gets ``$REWARDSVC_CACHE/trainer-venvs/<name>`` (default cache
``~/.cache/rewardsvc``), created on first use from a recipe of pip steps and reused while the
recipe is unchanged. Only what the trainer's reward path imports is installed (``--no-deps``
plus the few modules it needs), with torch pinned to its CPU build: an unpinned torch
resolves to a multi-GB CUDA build. The client package under test is reinstalled every time.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CLIENT = ROOT / "clients" / "python"
TORCH = "torch==2.13.0"

# name -> pip install steps (each a list of arguments after ``pip install``).
RECIPES: dict[str, list[list[str]]] = {
    # verifiers 0.4.0 with its own dependencies (renderers pulls torch: pinned to CPU).
    "verifiers": [[TORCH], ["verifiers==0.4.0", TORCH]],
    # veRL 0.9.1: its reward managers import DataProto (torch, tensordict, numpy), omegaconf,
    # transformers (tokenizer) and ray (the remote manager's worker actors).
    "verl": [
        [TORCH],
        ["--no-deps", "verl==0.9.1"],
        [
            TORCH,
            "transformers>=5.5.3,<5.11",
            "tensordict>=0.8,<=0.10,!=0.9.0",
            "omegaconf",
            "hydra-core",
            "numpy>=2",
            "pandas",
            "codetiming",
            "dill",
            "packaging",
            "ray==2.55.0",
        ],
        ["aiohttp"],
    ],
    # OpenRLHF 0.11.2: its remote-reward client (openrlhf/utils/agent.py) needs aiohttp; the
    # package's __init__ chain is bypassed by loading that module from its file.
    "openrlhf": [["--no-deps", "openrlhf==0.11.2"], ["aiohttp"]],
    # ART (openpipe-art): the newest release that installs on Python 3.11 is 0.5.18
    # (0.5.23 requires Python >= 3.12); ``import art`` needs its own dependencies (no torch).
    # The Open Reward Standard client (openreward 0.1.167): its ORS sessions, tasks and
    # tool calls against rewardsvc's ORS routes (tests/test_ors_client.py).
    "openreward": [["openreward==0.1.167"]],
    # TRL's ORS integration (trl.experimental.openreward, trl 1.16.0) with its openreward
    # client: OpenRewardSpec's dataset, environment factory and reward function.
    "trl-openreward": [[TORCH], ["trl==1.16.0", "openreward==0.1.167", TORCH]],
    "art": [
        ["--no-deps", "openpipe-art==0.5.18"],
        ["pydantic>=2", "openai>=2.14"],
        ["openpipe-art==0.5.18"],
    ],
    # Tinker cookbook with its own dependencies (tinker client, transformers, torch pinned to
    # CPU): its Env / EnvGroupBuilder code paths and the rubric recipe; no training (the tinker
    # client needs the hosted service). 0.5.8, not 0.6.1: 0.6.1 requires tml-renderers>=0.4.1,
    # which the package index does not have (0.2.1 is its newest); the rl types, rollout
    # strategies and rubric recipe the test drives are the same in both.
    "tinker-cookbook": [[TORCH], ["tinker-cookbook==0.5.8", TORCH]],
    # NeMo-RL has no usable PyPI release (``nemo-rl`` is a 0.0.0 placeholder): its contract is
    # pinned to a source commit in tests/trainers/nemo_rl_run.py; the venv holds what that
    # contract runs on (torch tensors, a Ray actor for the environment, as NeMo-RL makes it).
    "nemo-rl": [[TORCH], ["ray==2.55.0"]],
    # SkyRL's environment package (skyrl-gym 0.4.0: BaseTextEnv and its registry), no torch.
    "skyrl": [
        ["--no-deps", "skyrl-gym==0.4.0"],
        ["func_timeout", "pandas", "requests", "omegaconf"],
    ],
    # AReaL 1.0.4: only its reward API (areal/api/reward_api.py: AsyncRewardWrapper) runs, loaded
    # from its file past the package __init__ (which imports torch and the launchers); colorlog
    # is what areal.utils.logging imports.
    "areal": [["--no-deps", "areal==1.0.4"], ["colorlog"]],
    # TRL 1.16.0 with its own dependencies (torch pinned to CPU): AsyncGRPOTrainer's rollout loop
    # scores groups in a spawned CPU-only process. Pillow (not a TRL dependency) makes the PIL
    # images of a multimodal prompt (tests/test_trainer_images.py); an appended step, so a
    # venv built by the recipe before it only installs Pillow.
    "trl-async": [[TORCH], ["trl==1.16.0", TORCH], ["pillow>=11,<14"]],
}


def cache_dir() -> Path:
    """$REWARDSVC_CACHE, else $XDG_CACHE_HOME/rewardsvc, else ~/.cache/rewardsvc."""
    if os.environ.get("REWARDSVC_CACHE"):
        return Path(os.environ["REWARDSVC_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "rewardsvc"


class VenvError(RuntimeError):
    """A pip or venv step failed; the message ends with the log's tail."""


def _run(command: list[str], log: Path, timeout: float) -> None:
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
    if done.returncode != 0:
        tail = log.read_text()[-4000:]
        raise VenvError(f"command failed ({done.returncode}): {' '.join(command)}\n{tail}")


def ensure(name: str) -> Path:
    """The python of trainer venv ``name``, created if missing or made by another recipe,
    with the client under test freshly installed."""
    steps = RECIPES[name]
    base = cache_dir() / "trainer-venvs"
    venv = base / name
    python = venv / "bin" / "python"
    recipe = json.dumps(steps)
    marker = venv / ".rewardsvc-recipe"
    log = base / f"{name}.log"
    base.mkdir(parents=True, exist_ok=True)
    with (base / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer per venv across test processes
        done = json.loads(marker.read_text()) if marker.exists() and python.exists() else None
        if done != steps:
            # A recipe that only appends steps to the installed one adds just those steps.
            if not done or done != steps[: len(done)]:
                shutil.rmtree(venv, ignore_errors=True)
                _run([sys.executable, "-m", "venv", str(venv)], log, 300)
                done = []
            for step in steps[len(done) :]:
                _run([str(python), "-m", "pip", "install", "--quiet", *step], log, 1800)
            marker.write_text(recipe)
        _run(
            [str(python), "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps",
             str(CLIENT)],
            log,
            600,
        )  # fmt: skip
        _run([str(python), "-m", "pip", "install", "--quiet", "httpx>=0.27,<1"], log, 600)
    return python


if __name__ == "__main__":
    for trainer in sys.argv[1:] or list(RECIPES):
        print(trainer, ensure(trainer), flush=True)
