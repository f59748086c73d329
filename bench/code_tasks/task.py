"""One task of the code corpus: its prompt, its hidden tests, a correct and a wrong solution.

A task's tests are pytest functions rendered from its cases: a pair ``(call, expected)``
is the test ``assert call == expected``; a string is a test's body as written (for the
class tasks and ``pytest.raises``). The tests import the code under test from
``solution.py``, the module the ``unit_tests`` grader writes the completion's fenced block
to.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass

MODULE = "solution"
"""The module the tests import the code under test from (``solution.py``)."""

Case = tuple[str, str] | str


@dataclass(frozen=True)
class Task:
    """A small Python task: ``name`` is the function or class the prompt asks for."""

    name: str
    prompt: str
    correct: str
    wrong: str
    cases: tuple[Case, ...]

    @property
    def test_path(self) -> str:
        """Where the hidden tests live in the work directory."""
        return f"test_{self.name.lower()}.py"

    def tests(self) -> str:
        """The hidden pytest module."""
        lines = ["import pytest", "", f"from {MODULE} import {self.name}", ""]
        for number, case in enumerate(self.cases):
            body = f"assert {case[0]} == {case[1]}" if isinstance(case, tuple) else case
            lines += ["", f"def test_{number}():", textwrap.indent(body, "    "), ""]
        return "\n".join(lines)

    def reference(self) -> str:
        """The item's reference: the hidden tests as a JSON object ``{path: text}``."""
        return json.dumps({self.test_path: self.tests()})


def fenced(source: str) -> str:
    """A completion whose code is ``source`` in a fenced python block."""
    return f"Here is my solution.\n\n```python\n{source.strip()}\n```\n"


def task(name: str, prompt: str, correct: str, wrong: str, *cases: Case) -> Task:
    """A :class:`Task`, its solutions dedented (the table writes them indented)."""
    return Task(
        name,
        " ".join(prompt.split()),
        textwrap.dedent(correct).strip() + "\n",
        textwrap.dedent(wrong).strip() + "\n",
        tuple(textwrap.dedent(c).strip() if isinstance(c, str) else c for c in cases),
    )
