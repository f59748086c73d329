"""The wall time per test module (tests/module_durations.py): summed, ranked, printed at the
end of a session and merged into its file, registered for every run of the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from module_durations import ModuleDurations, Timing, read_table, render_table

HERE = Path(__file__).resolve().parent


def test_registered_for_the_suite(request: pytest.FixtureRequest) -> None:
    plugin = request.config.pluginmanager.get_plugin("module-durations")
    assert isinstance(plugin, ModuleDurations)


def test_phases_summed_per_module_and_ranked(tmp_path: Path) -> None:
    durations = ModuleDurations(tmp_path / "t.md")
    for nodeid, when, seconds in [
        ("tests/test_a.py::test_one", "setup", 4.0),
        ("tests/test_a.py::test_one", "call", 0.5),
        ("tests/test_a.py::test_one", "teardown", 0.25),
        ("tests/test_a.py::TestX::test_two[p]", "call", 0.25),
        ("tests/test_b.py::test_three", "call", 2.0),
        ("tests/test_c.py::test_four", "call", 9.0),
    ]:
        durations.add(nodeid, when, seconds)
    assert durations.slowest() == [
        ("tests/test_c.py", 9.0, 1),
        ("tests/test_a.py", 5.0, 2),
        ("tests/test_b.py", 2.0, 1),
    ]
    assert durations.slowest(1) == [("tests/test_c.py", 9.0, 1)]


def test_a_run_replaces_its_modules_and_keeps_the_others(tmp_path: Path) -> None:
    earlier = {
        "tests/test_a.py": Timing(7.0, 2, "yesterday"),
        "tests/test_z.py": Timing(100.0, 40, "yesterday"),
    }
    path = tmp_path / "t.md"
    path.write_text(render_table(earlier), encoding="utf-8")
    assert read_table(path.read_text(encoding="utf-8")) == earlier
    durations = ModuleDurations(path)
    durations.add("tests/test_a.py::test_one", "call", 3.0)
    durations.write("today")
    table = read_table(path.read_text(encoding="utf-8"))
    assert table["tests/test_a.py"] == Timing(3.0, 1, "today")
    assert table["tests/test_z.py"] == earlier["tests/test_z.py"]
    assert "| `tests/test_a.py` | 3.0 | 1 | 7.0 | today |" in path.read_text(encoding="utf-8")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines.index("| `tests/test_z.py` | 100.0 | 40 |  | yesterday |") < lines.index(
        "| `tests/test_a.py` | 3.0 | 1 | 7.0 | today |"
    )  # slowest first


def test_a_session_prints_its_slowest_modules_and_writes_the_file(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tmp_path / "test_two.py").write_text("def test_c():\n    pass\n")
    out = tmp_path / "times.md"
    command = [sys.executable, "-m", "pytest", "-p", "module_durations", "-p", "no:cacheprovider"]
    command += ["--module-times", str(out), "-q", "test_one.py", "test_two.py"]
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    for _ in range(2):
        run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
    assert "slowest 15 test modules" in run.stdout
    assert "2 tests  test_one.py" in run.stdout and "1 tests  test_two.py" in run.stdout
    table = read_table(out.read_text(encoding="utf-8"))
    assert {module: t.tests for module, t in table.items()} == {"test_one.py": 2, "test_two.py": 1}
    rows = [line for line in out.read_text(encoding="utf-8").splitlines() if "test_one" in line]
    assert rows[0].split(" | ")[3].strip(), rows  # the second run shows the first one's time
