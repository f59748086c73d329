"""The work directory of a unit_tests run: the code under test with the task's hidden tests,
every file that could steer the test runner restored from the task or removed.

The code under test is an agent's workspace (an item's ``files``) or the completion's
program written as one module; the hidden tests are shown beside it read-only (the
sandbox's ``ro_files``), so that code running under pytest cannot rewrite a test module
before pytest collects it. Whatever the agent wrote over a hidden test file is
replaced by the task's copy (listed as ``restored``); a file of the agent's that steers
pytest or Python's start-up (``conftest.py`` anywhere, pytest's configuration files,
``sitecustomize``/``usercustomize``, ``.pth`` files, a module or package named like
``pytest``, ``_pytest``, ``py`` or like one of the hidden test modules) is dropped (listed
as ``removed``): the agent's edits to them never run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

RUNNER_CONFIG = frozenset({"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"})
"""File names that configure pytest (``setup.cfg`` and ``pyproject.toml`` can hold a
pytest section), wherever they are."""
STARTUP = frozenset({"sitecustomize.py", "usercustomize.py"})
"""Modules Python imports by itself when it starts."""
RUNNER_MODULES = frozenset({"pytest", "_pytest", "py", "pluggy"})
"""The test runner's own modules, which a file of the work directory must not shadow."""


@dataclass(frozen=True)
class WorkDir:
    """The code under test of one run (path -> text; the task's tests are not among them:
    they are shown read-only beside them), with the agent's files that were replaced by
    the task's (``restored``) or dropped (``removed``), each sorted."""

    files: dict[str, str]
    restored: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


def module_names(path: str) -> set[str]:
    """The importable names a file provides: its own module and every package above it."""
    parts = PurePosixPath(path).parts
    names = set(parts[:-1])
    stem = parts[-1]
    names.add(stem[:-3] if stem.endswith(".py") else stem)
    return names


def steers(path: str, test_modules: set[str]) -> bool:
    """Whether a file of the agent's at ``path`` could steer the runner or shadow a test."""
    name = PurePosixPath(path).name
    if name in RUNNER_CONFIG or name in STARTUP or name.endswith(".pth"):
        return True
    return bool(module_names(path) & (RUNNER_MODULES | test_modules))


def _under(path: str, tests: Mapping[str, str]) -> bool:
    """Whether ``path`` would sit inside a test file, as if that file were a directory."""
    return any(str(parent) in tests for parent in PurePosixPath(path).parents)


def work_dir(code: Mapping[str, str], tests: Mapping[str, str]) -> WorkDir:
    """The code under test with what would clash with the hidden ``tests`` taken out (see
    the module doc)."""
    test_modules = {PurePosixPath(p).stem for p in tests if PurePosixPath(p).suffix == ".py"}
    test_modules.discard("conftest")
    test_modules.discard("__init__")
    test_dirs = {str(parent) for p in tests for parent in PurePosixPath(p).parents}
    files: dict[str, str] = {}
    restored: list[str] = []
    removed: list[str] = []
    for path, text in code.items():
        if path in tests:
            if text != tests[path]:
                restored.append(path)
        elif steers(path, test_modules) or path in test_dirs or _under(path, tests):
            removed.append(path)
        else:
            files[path] = text
    return WorkDir(files, tuple(sorted(restored)), tuple(sorted(removed)))
