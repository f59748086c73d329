"""The client distribution installs on its own: httpx only, none of the service's stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "clients" / "python"

PROBE = """
import importlib.util, json
names = ["rewardsvc_client", "rewardsvc_client.trl", "rewardsvc_client.verl",
         "rewardsvc_client.openrlhf", "rewardsvc_client.verifiers", "rewardsvc_client.slime",
         "rewardsvc_client.art", "rewardsvc_judge", "verifiers", "httpx",
         "rewardsvc", "fastapi", "vllm", "pydantic", "uvicorn", "openai", "torch"]
found = {}
for name in names:
    try:
        found[name] = importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        found[name] = False
import rewardsvc_client.trl, rewardsvc_client.verl, rewardsvc_client.openrlhf
import rewardsvc_client.verifiers, rewardsvc_client.slime, rewardsvc_client.art
print(json.dumps(found))
"""


def test_client_installs_alone_in_a_fresh_venv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(CLIENT)],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the repo root: nothing importable by accident
    )
    assert install.returncode == 0, install.stdout + install.stderr
    probe = subprocess.run(
        [str(python), "-c", PROBE], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert {name for name, ok in found.items() if ok} == {
        "rewardsvc_client",
        "rewardsvc_client.trl",
        "rewardsvc_client.verl",
        "rewardsvc_client.openrlhf",
        "rewardsvc_client.verifiers",
        "rewardsvc_client.slime",
        "rewardsvc_client.art",
        "rewardsvc_judge",  # the verifiers plugin: importable where verifiers is installed
        "httpx",
    }
    freeze = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True
    )
    installed = {p["name"].lower() for p in json.loads(freeze.stdout)}
    assert "pydantic" not in installed and "fastapi" not in installed
