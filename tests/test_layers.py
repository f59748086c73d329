"""The layer contract (import-linter, in pyproject.toml) holds, and would catch a breach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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


def test_a_core_module_importing_fastapi_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "rewardsvc", copy / "rewardsvc")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    (copy / "rewardsvc" / "core" / "leak.py").write_text(
        '"""A core module that reaches for the web framework."""\n\nimport fastapi  # noqa\n'
    )
    done = lint(copy, pythonpath=copy)
    assert done.returncode != 0, done.stdout[-3000:]
    assert "rewardsvc.core.leak -> fastapi" in done.stdout


def test_a_lower_room_importing_the_server_breaks_the_layers(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "rewardsvc", copy / "rewardsvc")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    (copy / "rewardsvc" / "scoring" / "leak.py").write_text(
        '"""A scoring module that reaches up into the server."""\n\n'
        "import rewardsvc.server.routes  # noqa\n"
    )
    done = lint(copy, pythonpath=copy)
    assert done.returncode != 0, done.stdout[-3000:]
    assert "rewardsvc.scoring is not allowed to import rewardsvc.server" in done.stdout


def test_a_wire_module_importing_serving_code_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "rewardsvc", copy / "rewardsvc")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    (copy / "rewardsvc" / "protocol" / "leak.py").write_text(
        '"""A wire module that reaches into the admission code."""\n\n'
        "import rewardsvc.server.guards  # noqa\n"
    )
    done = lint(copy, pythonpath=copy)
    assert done.returncode != 0, done.stdout[-3000:]
    assert "rewardsvc.protocol.leak -> rewardsvc.server.guards" in done.stdout


def test_a_storage_module_importing_the_engine_breaks_the_layers(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "rewardsvc", copy / "rewardsvc")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    (copy / "rewardsvc" / "storage" / "leak.py").write_text(
        '"""A storage module that reaches up into the engine."""\n\n'
        "import rewardsvc.scoring.engine  # noqa\n"
    )
    done = lint(copy, pythonpath=copy)
    assert done.returncode != 0, done.stdout[-3000:]
    assert "rewardsvc.storage is not allowed to import rewardsvc.scoring" in done.stdout


def test_a_scoring_module_importing_wire_models_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "rewardsvc", copy / "rewardsvc")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    (copy / "rewardsvc" / "scoring" / "leak.py").write_text(
        '"""A scoring module that speaks the wire."""\n\n'
        "import rewardsvc.protocol.rewards  # noqa\n"
    )
    done = lint(copy, pythonpath=copy)
    assert done.returncode != 0, done.stdout[-3000:]
    assert "rewardsvc.scoring.leak -> rewardsvc.protocol.rewards" in done.stdout


def test_the_cli_importing_the_server_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "rewardsvc", copy / "rewardsvc")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    cli = copy / "rewardsvc" / "cli.py"
    cli.write_text(cli.read_text() + "\nimport rewardsvc.server.routes  # noqa\n")
    done = lint(copy, pythonpath=copy)
    assert done.returncode != 0, done.stdout[-3000:]
    assert "rewardsvc.cli is not allowed to import rewardsvc.server" in done.stdout


def test_the_application_importing_the_server_breaks_the_layers(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "rewardsvc", copy / "rewardsvc")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    (copy / "rewardsvc" / "application" / "leak.py").write_text(
        '"""An application module that reaches up into the server."""\n\n'
        "import rewardsvc.server.routes  # noqa\n"
    )
    done = lint(copy, pythonpath=copy)
    assert done.returncode != 0, done.stdout[-3000:]
    assert "rewardsvc.application is not allowed to import rewardsvc.server" in done.stdout
