"""The layer contract (import-linter, in pyproject.toml) holds, and would catch a breach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).parent / "lint-imports"


def lint(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_tree_keeps_every_contract() -> None:
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    assert " 0 broken" in done.stdout.split("Contracts:")[-1].split("\n")[0]


# Each breach: the module written (or appended to) in a copy of the package, the import it
# makes, and what lint-imports must report about it.
BREACHES = {
    "core imports fastapi": ("core/leak.py", "import fastapi", "rewardsvc.core.leak -> fastapi"),
    "scoring imports the server": (
        "scoring/leak.py",
        "import rewardsvc.server.routes",
        "rewardsvc.scoring is not allowed to import rewardsvc.server",
    ),
    "a wire module imports serving code": (
        "protocol/leak.py",
        "import rewardsvc.server.guards",
        "rewardsvc.protocol.leak -> rewardsvc.server.guards",
    ),
    "storage imports the engine": (
        "storage/leak.py",
        "import rewardsvc.scoring.engine",
        "rewardsvc.storage is not allowed to import rewardsvc.scoring",
    ),
    "scoring imports wire models": (
        "scoring/leak.py",
        "import rewardsvc.protocol.rewards",
        "rewardsvc.scoring.leak -> rewardsvc.protocol.rewards",
    ),
    "the ORS room imports the server": (
        "ors/leak.py",
        "import rewardsvc.server.routes",
        "rewardsvc.ors is not allowed to import rewardsvc.server",
    ),
    "the ORS room speaks HTTP": ("ors/leak.py", "import fastapi", "rewardsvc.ors.leak -> fastapi"),
    "the CLI imports the server": (
        "cli.py",
        "import rewardsvc.server.routes",
        "rewardsvc.cli is not allowed to import rewardsvc.server",
    ),
    "the application imports the server": (
        "application/leak.py",
        "import rewardsvc.server.routes",
        "rewardsvc.application is not allowed to import rewardsvc.server",
    ),
}


@pytest.mark.parametrize("breach", list(BREACHES))
def test_a_breach_breaks_the_contract(tmp_path: Path, breach: str) -> None:
    module, statement, reported = BREACHES[breach]
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "rewardsvc", copy / "rewardsvc")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    target = copy / "rewardsvc" / module
    head = target.read_text() if target.exists() else f'"""A module where {breach}."""\n'
    target.write_text(f"{head}\n{statement}  # noqa\n")
    done = lint(copy, pythonpath=copy)
    assert done.returncode != 0, done.stdout[-3000:]
    assert reported in done.stdout
