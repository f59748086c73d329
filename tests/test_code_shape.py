"""The package stays readable in pieces: no module over 400 lines and no function over 60
in ``rewardsvc/`` (architecture step 2 set these bounds; tests and benches are outside)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rewardsvc"
MODULE_LINES = 400
FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def long_functions(source: str, most: int = FUNCTION_LINES) -> list[tuple[str, int]]:
    """The functions (methods and nested ones included) longer than ``most`` lines, with
    their lengths, decorators and docstrings counted."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - start + 1
            if length > most:
                found.append((node.name, length))
    return found


def test_the_package_has_modules() -> None:
    assert len(_modules()) > 100


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert long == {}


def test_no_function_is_over_60_lines() -> None:
    long = {
        f"{p.relative_to(PACKAGE)}:{name}": n
        for p in _modules()
        for name, n in long_functions(p.read_text(encoding="utf-8"))
    }
    assert long == {}


@pytest.mark.parametrize(("body_lines", "flagged"), [(58, False), (60, True)])
def test_the_function_check_counts_every_line(body_lines: int, flagged: bool) -> None:
    """A decorated function of ``body_lines`` + 2 lines (decorator, def) is caught past 60."""
    source = "@staticmethod\ndef f():\n" + "    x = 1\n" * body_lines
    assert bool(long_functions(source)) is flagged
