"""The unit_tests grader's pytest launcher: trusted code that runs only inside the sandbox,
shown read-only outside the work directory, never imported by the service.

``python3 -I launcher.py run|collect [--noconftest] TEST...`` runs pytest on the given
test files with a reporting plugin and writes a JSON report to the descriptor the sandbox
names (``SANDBOX_REPORT_FD``), outside the work directory, then exits with pytest's exit
code. ``collect`` only collects, with every module that cannot be found (the code under
test, absent then) replaced by a stub, so the hidden tests alone say how many tests the
task holds. Code the tests import runs in this process and could reach this plugin: the
grader checks the report against the exit code and the task's own count of tests.

No bytecode is written, and once the session starts none is read (``-I`` ignores
``PYTHONDONTWRITEBYTECODE``): a cached ``.pyc`` that code under test wrote into a
writable ``__pycache__`` would otherwise be run in place of a read-only test module.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
from types import ModuleType
from typing import Any

# Imported before the work directory joins sys.path: nothing there can shadow it.
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "pytest.ini")
NO_BYTECODE = os.path.join(HERE, "no-bytecode")
"""Where bytecode would be cached: a directory that does not exist in a read-only one."""
TEXT_CHARS = 300


class Report:
    """Collects what pytest did: the tests collected, each test's outcome, the collection
    errors and the deselected tests."""

    def __init__(self) -> None:
        self.collected: list[str] | None = None
        self.outcomes: dict[str, str] = {}
        self.errors: list[str] = []
        self.deselected = 0

    def pytest_collectreport(self, report: Any) -> None:
        """A module or class that failed to collect."""
        if report.failed:
            self.errors.append(f"{report.nodeid or '<session>'}: {report.longrepr}"[-TEXT_CHARS:])

    def pytest_deselected(self, items: list[Any]) -> None:
        """Tests deselected (by -k, -m or a plugin)."""
        self.deselected += len(items)

    def pytest_collection_finish(self, session: Any) -> None:
        """The tests that will run."""
        self.collected = [item.nodeid for item in session.items]

    def pytest_runtest_logreport(self, report: Any) -> None:
        """One phase of one test: the call's outcome, or a setup/teardown that did not
        pass; an xfail mark shows as xfailed/xpassed."""
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        elif report.when != "call" and report.failed:
            outcome = "error"
        elif report.when == "call" or not report.passed:
            outcome = report.outcome
        else:
            return
        if self.outcomes.get(report.nodeid, "passed") == "passed":
            self.outcomes[report.nodeid] = outcome

    def document(self, exit_code: int) -> dict[str, Any]:
        """The report as JSON data."""
        return {
            "exit_code": exit_code,
            "collected": self.collected,
            "outcomes": self.outcomes,
            "errors": self.errors[:20],
            "deselected": self.deselected,
        }


class NoBytecode:
    """From the session's start, before any module of the work directory is imported,
    Python's imports and pytest's assertion rewriting look for cached bytecode under a
    prefix where none is or can be (set no earlier: pytest's own plugins, imported before,
    keep their system's bytecode, which is many milliseconds of every run)."""

    def pytest_sessionstart(self, session: Any) -> None:
        """The session starts: collection, and the code under test, are next."""
        sys.pycache_prefix = NO_BYTECODE


class _Stub:
    """Whatever the missing code under test is asked for, in a collect run."""

    def __getattr__(self, name: str) -> _Stub:
        return _Stub()

    def __call__(self, *args: Any, **kwargs: Any) -> _Stub:
        return _Stub()

    def __iter__(self) -> Any:
        return iter(())


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on ``sys.meta_path``: a module nothing else finds is a stub package."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        module.__path__ = []
        module.__getattr__ = lambda name: _Stub()  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    """Run pytest as ``argv`` asks and write the report; pytest's exit code."""
    mode, *rest = argv
    options = ["-q", "-p", "no:cacheprovider", "--rootdir", os.getcwd(), "-c", CONFIG]
    if mode == "collect":
        options.append("--collect-only")
        sys.meta_path.append(_StubFinder())
    # As ``python -m pytest``: the work directory's modules are importable by the tests.
    sys.path.insert(0, os.getcwd())
    sys.dont_write_bytecode = True
    report = Report()
    code = int(pytest.main([*options, *rest], plugins=[report, NoBytecode()]))
    sys.stdout.flush()
    data = json.dumps(report.document(code)).encode()
    fd = int(os.environ["SANDBOX_REPORT_FD"])
    while data:
        data = data[os.write(fd, data) :]
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
