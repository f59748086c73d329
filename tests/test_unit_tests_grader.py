"""The ``unit_tests`` grader against the real sandbox (bubblewrap, with Debian's
``python3-pytest`` installed when absent): the task's hidden tests run by pytest against the
completion's program or an agent's workspace; reward = weighted pass fraction; tampering
with the tests or the runner earns nothing more than the honest wrong answer, and every
way of making pytest report nothing (an exit at import, a syntax error, a skip) scores 0,
never a pass."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rewardsvc.core.code_spec import UnitTestsSpec
from rewardsvc.core.rollout import Rollout
from rewardsvc.graders import unit_tests as unit_tests_module
from rewardsvc.graders.code import Sandbox
from rewardsvc.graders.result import GraderResult
from rewardsvc.graders.unit_tests import unit_tests
from rewardsvc.library.recipes import validate_recipe_file
from rewardsvc.library.yamlfile import InvalidFile, parse_yaml
from rewardsvc.sandbox.backend import NoBackend
from rewardsvc.sandbox.lanes import SandboxLanes
from rewardsvc.sandbox.run import RunRequest, RunResult

TESTS = {
    "test_solution.py": textwrap.dedent(
        """\
        from solution import add

        def test_small():
            assert add(1, 2) == 3

        def test_negative():
            assert add(-1, -2) == -3

        def test_zero():
            assert add(0, 0) == 0
        """
    )
}
CORRECT = "def add(a, b):\n    return a + b"
WRONG = "def add(a, b):\n    return abs(a + b)"  # fails test_negative only
PASS_ALL_CONFTEST = textwrap.dedent(
    """\
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        outcome.get_result().outcome = "passed"
    """
)


def spec(**fields: Any) -> UnitTestsSpec:
    values: dict[str, Any] = {"type": "unit_tests", "tests": TESTS, "wall_s": 20, "cpu_s": 10}
    return UnitTestsSpec.model_validate({**values, **fields})


def fenced(program: str) -> str:
    return f"My solution:\n\n```python\n{program}\n```\n"


def grade(
    lanes: SandboxLanes | None,
    program: str = "",
    the_spec: UnitTestsSpec | None = None,
    files: dict[str, str] | None = None,
    reference: str | None = None,
) -> GraderResult:
    rollout = Rollout(
        "Write add(a, b).", fenced(program), reference, files=tuple(sorted((files or {}).items()))
    )
    return asyncio.run(unit_tests(rollout, the_spec or spec(), Sandbox(lanes)))


def test_correct_code_scores_1_and_wrong_code_its_pass_fraction_with_per_test_evidence(
    lanes: SandboxLanes,
) -> None:
    right = grade(lanes, CORRECT)
    assert right.score == 1.0, right
    assert right.evidence["tests"] == 3 and right.evidence["passed"] == 3
    wrong = grade(lanes, WRONG)
    assert wrong.score == pytest.approx(2 / 3), wrong
    outcomes = {o["test"]: o["result"] for o in wrong.evidence["outcomes"]}
    assert outcomes == {
        "test_solution.py::test_small": "passed",
        "test_solution.py::test_negative": "failed",
        "test_solution.py::test_zero": "passed",
    }


def test_weights_make_the_score_a_weighted_pass_fraction(lanes: SandboxLanes) -> None:
    weighted = spec(weights={"test_solution.py::test_negative": 3})
    assert grade(lanes, WRONG, weighted).score == pytest.approx(2 / 5)
    unknown = grade(lanes, WRONG, spec(weights={"test_solution.py::test_nothing": 2}))
    assert unknown.score is None and unknown.kind == "grader_failed", unknown


def test_editing_or_deleting_the_tests_in_the_workspace_earns_no_more_than_honest_wrong(
    lanes: SandboxLanes,
) -> None:
    honest = grade(lanes, files={"solution.py": WRONG})
    edited = grade(
        lanes,
        files={"solution.py": WRONG, "test_solution.py": "def test_small():\n    pass\n"},
    )
    assert edited.score == honest.score == pytest.approx(2 / 3), (honest, edited)
    assert edited.evidence["restored"] == ["test_solution.py"]
    assert honest.evidence["restored"] == []
    # An extra test file of the agent's is not the task's: it is never run.
    extra = grade(lanes, files={"solution.py": WRONG, "test_more.py": "def test_x(): pass\n"})
    assert extra.score == honest.score and extra.evidence["tests"] == 3, extra
    # The edit is also flagged (the tamper detector): a recipe's flag_penalties and vetoes
    # see it; the honest workspace, which was never shown the hidden tests, is not flagged.
    assert "tamper_test_edit" in edited.flags and honest.flags == (), (edited, honest)
    shown = grade(lanes, files={"solution.py": WRONG, **TESTS})
    assert shown.flags == (), shown  # shown the tests, left them as they were
    # A task that gave the agent its tests (tests_shown): a workspace without them deleted
    # them, which is flagged; it still earns only what honest wrong code earns.
    deleted = grade(lanes, the_spec=spec(tests_shown=True), files={"solution.py": WRONG})
    assert deleted.flags == ("tamper_test_edit",), deleted
    assert deleted.score == honest.score, deleted


def test_runner_steering_files_are_removed_before_the_run(lanes: SandboxLanes) -> None:
    files = {
        "solution.py": WRONG,
        "conftest.py": PASS_ALL_CONFTEST,
        "sub/conftest.py": PASS_ALL_CONFTEST,
        "pytest.ini": "[pytest]\naddopts = -k small\n",
        "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-k small'\n",
        "sitecustomize.py": "import os\nos._exit(0)\n",
        "pytest.py": "raise SystemExit(0)\n",
        "x.pth": "import os; os._exit(0)\n",
    }
    result = grade(lanes, files=files)
    assert result.score == pytest.approx(2 / 3), result
    assert result.evidence["removed"] == sorted(set(files) - {"solution.py"})
    assert {"tamper_runner_config", "tamper_exit_hook"} <= set(result.flags), result.flags


@pytest.mark.parametrize(
    "program",
    [
        "import sys\nsys.exit(0)",
        "import os\nos._exit(0)",
        "def add(a, b:\n    return a + b",
        "import pytest\npytest.skip('no', allow_module_level=True)",
        "import pytest\ndef add(a, b):\n    pytest.skip('later')",
        "import pytest\ndef add(a, b):\n    pytest.xfail('later')",
    ],
    ids=["sys-exit", "os-exit", "syntax-error", "skip-module", "skip-tests", "xfail-tests"],
)
def test_making_pytest_report_nothing_scores_0_not_a_pass(
    lanes: SandboxLanes, program: str
) -> None:
    result = grade(lanes, program)
    assert result.score == 0.0, result
    assert result.evidence["failure"], result
    if "exit" in program:
        assert result.flags == ("tamper_exit_hook",), result.flags


def test_a_forged_report_that_disagrees_with_the_run_scores_0(lanes: SandboxLanes) -> None:
    forged = json.dumps(
        {
            "exit_code": 0,
            "collected": ["test_solution.py::test_small"],
            "outcomes": {"test_solution.py::test_small": "passed"},
            "errors": [],
            "deselected": 0,
        }
    )
    program = (
        "import os\n"
        f"os.write(int(os.environ['SANDBOX_REPORT_FD']), {forged!r}.encode())\n"
        "os._exit(0)"
    )
    result = grade(lanes, program)
    assert result.score == 0.0 and "the task has 3" in result.evidence["failure"], result


def test_tests_come_from_the_reference_when_the_spec_has_none(lanes: SandboxLanes) -> None:
    from_reference = spec(tests=None)
    assert grade(lanes, CORRECT, from_reference, reference=json.dumps(TESTS)).score == 1.0
    missing = grade(lanes, CORRECT, from_reference)
    assert missing.score is None and missing.kind == "grader_failed", missing
    bad = grade(lanes, CORRECT, from_reference, reference=json.dumps({"../t.py": "x"}))
    assert bad.score is None and "reference" in (bad.error or ""), bad


def test_a_completion_without_code_scores_0(lanes: SandboxLanes) -> None:
    rollout = Rollout("Write add(a, b).", "I would rather not.")
    result = asyncio.run(unit_tests(rollout, spec(), Sandbox(lanes)))
    assert result.score == 0.0 and result.evidence == {"no_code": True}


def test_without_a_sandbox_there_is_no_score_never_0() -> None:
    none = grade(None, CORRECT, spec(expected_tests=3))
    assert none.score is None and none.kind == "sandbox_unavailable", none
    unavailable = SandboxLanes(NoBackend("off"), lanes=1)
    try:
        off = grade(unavailable, CORRECT)
    finally:
        unavailable.close()
    assert off.score is None and off.kind == "sandbox_unavailable", off


RECIPE = """\
kind: recipe
id: tasked
components:
  - id: tests
    grader: {type: unit_tests, tests_file: tasks/test_solution.py, expected_tests: 3}
"""


def test_a_recipe_file_names_a_task_file_read_when_it_is_loaded(
    lanes: SandboxLanes, tmp_path: Path
) -> None:
    (tmp_path / "tasks").mkdir()
    task = tmp_path / "tasks" / "test_solution.py"
    task.write_text(TESTS["test_solution.py"])
    path = tmp_path / "tasked.yaml"
    path.write_text(RECIPE)
    recipe = validate_recipe_file(parse_yaml(RECIPE, str(path)), path, None)
    task.unlink()  # read at load time: the file is not needed to grade
    loaded = recipe.components[0].grader
    assert isinstance(loaded, UnitTestsSpec)
    assert loaded.tests == TESTS
    assert grade(lanes, WRONG, loaded).score == pytest.approx(2 / 3)
    with pytest.raises(InvalidFile, match="tests_file"):
        validate_recipe_file(parse_yaml(RECIPE, str(path)), path, None)


def test_a_request_cannot_name_a_task_file() -> None:
    with pytest.raises(ValidationError, match="only a rubric or recipe file"):
        UnitTestsSpec.model_validate({"type": "unit_tests", "tests_file": "/etc/passwd"})


def test_a_workspace_joins_the_cache_key_and_file_less_keys_do_not_change() -> None:
    plain = Rollout("p", "c", "r")
    # The digest main (a948d76) gives this rollout: cache keys of existing items stay.
    assert plain.digest() == "62a3d4d7f457ea39746c24a9ecf90d26fa8c43054140200313a939b0666a6f05"
    one = Rollout("p", "c", "r", files=(("solution.py", CORRECT),))
    other = Rollout("p", "c", "r", files=(("solution.py", WRONG),))
    renamed = Rollout("p", "c", "r", files=(("other.py", CORRECT),))
    assert len({plain.digest(), one.digest(), other.digest(), renamed.digest()}) == 4


class NoPytestLanes:
    """Lanes whose sandbox has no pytest: every run exits 1, as ``import pytest`` would."""

    def __init__(self) -> None:
        self.runs: list[RunRequest] = []

    async def arun(self, request: RunRequest, group: Any = None, deadline: Any = None) -> RunResult:
        self.runs.append(request)
        return RunResult(exit_code=1, stderr=b"ModuleNotFoundError: No module named 'pytest'")


def test_a_sandbox_without_pytest_gives_no_score_not_0(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unit_tests_module, "_runner_found", False)
    lanes = NoPytestLanes()
    rollout = Rollout("Write add(a, b).", fenced(CORRECT))
    result = asyncio.run(unit_tests(rollout, spec(expected_tests=3), Sandbox(lanes)))  # type: ignore[arg-type]
    assert result.score is None and result.kind == "sandbox_unavailable", result
    assert len(lanes.runs) == 1  # the probe only: the tests never ran


SPLIT_TESTS = {
    "test_a.py": "from solution import add\n\n\ndef test_small():\n    assert add(1, 2) == 3\n",
    "tests/test_b.py": TESTS["test_solution.py"].replace("def test_small", "def _small"),
}
# At import (while pytest collects test_a.py) the code replaces a test module pytest has
# not collected yet by one keeping its test names with trivial bodies (the same node ids):
# written in place, in a new directory put where the tests' one was moved from, or as
# the cached bytecode pytest's import would load in place of the module.
_BODY = "def test_negative():\\n    pass\\n\\n\\ndef test_zero():\\n    pass\\n"
REWRITES = {
    "in_place": f"""
with open("tests/test_b.py", "w") as _f:
    _f.write("{_BODY}")
""",
    "moved_aside": f"""
import os

os.rename("tests", "moved")
os.mkdir("tests")
with open("tests/test_b.py", "w") as _f:
    _f.write("{_BODY}")
""",
    "bytecode": f"""
import importlib.util, marshal, os, sys, pytest

_stat = os.stat("tests/test_b.py")
_tag = f"{{sys.implementation.cache_tag}}-pytest-{{pytest.__version__}}"
_code = compile("{_BODY}", os.path.abspath("tests/test_b.py"), "exec")
_header = importlib.util.MAGIC_NUMBER + bytes(4)
_header += (int(_stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
_header += (_stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")
os.makedirs("tests/__pycache__", exist_ok=True)
with open(f"tests/__pycache__/test_b.{{_tag}}.pyc", "wb") as _f:
    _f.write(_header + marshal.dumps(_code))
""",
}


@pytest.mark.parametrize("where", ["program", "workspace"])
@pytest.mark.parametrize("how", sorted(REWRITES))
def test_code_under_test_cannot_replace_a_hidden_test_before_pytest_collects_it(
    lanes: SandboxLanes, where: str, how: str
) -> None:
    split = spec(tests=SPLIT_TESTS)
    code = f"{WRONG}\n\ntry:\n{textwrap.indent(REWRITES[how], '    ')}\nexcept OSError:\n    pass\n"
    if where == "program":
        honest, attack = grade(lanes, WRONG, split), grade(lanes, code, split)
    else:
        honest = grade(lanes, the_spec=split, files={"solution.py": WRONG})
        attack = grade(lanes, the_spec=split, files={"solution.py": code})
    assert honest.score == pytest.approx(2 / 3), honest
    assert attack.score == honest.score, attack
    assert "tamper_expected_read" in attack.flags, attack.flags


def test_hidden_tests_the_sandbox_cannot_show_read_only_are_the_tasks_fault(
    lanes: SandboxLanes,
) -> None:
    # Each directory holding a read-only test is a mount of its own: at most 32 of them.
    deep = "/".join(f"d{n}" for n in range(33)) + "/test_deep.py"
    result = grade(lanes, CORRECT, spec(tests=None), reference=json.dumps({deep: ""}))
    assert result.score is None and result.kind == "grader_failed", result
    assert "reference: ro_files: in at most 32 directories" in (result.error or ""), result
