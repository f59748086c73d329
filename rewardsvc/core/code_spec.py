"""Specs of the code graders: graders that run a program in the sandbox.

``io_cases`` runs the completion's Python program on hidden stdin/stdout cases;
``check_program`` runs a trusted checker program (written in the spec) on the
completion's output; ``unit_tests`` runs a task's hidden tests with pytest against the
completion's code or an agent's workspace. Each declares ``in_sandbox``: their functions
(``rewardsvc.graders.code``) reach the sandbox's lanes, never a worker process. What a
run may use is bounded by each spec's limits, themselves bounded here, so that no request
can ask for unbounded work.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, model_validator

from rewardsvc.core.base import StrictModel
from rewardsvc.core.spec_base import Extract, SpecModel

MAX_CASES = 64
"""Most cases one io_cases item runs (each is one sandboxed run)."""
MAX_CASE_CHARS = 1_000_000
"""Longest input or expected output of one case."""


class IoCase(StrictModel):
    """One stdin/stdout case: the program reads ``input`` and must print ``output``."""

    input: str = Field(default="", max_length=MAX_CASE_CHARS, description="Standard input.")
    output: str = Field(max_length=MAX_CASE_CHARS, description="Expected standard output.")


class CodeLimitsSpec(SpecModel):
    """The limits of one sandboxed run, shared by the code graders."""

    wall_s: float = Field(
        default=5.0,
        gt=0,
        le=60,
        description="Wall-clock limit of one run (one case), from when a sandbox lane starts "
        "it; past it the run's whole process tree is killed.",
    )
    cpu_s: int = Field(default=2, ge=1, le=60, description="CPU seconds of one run.")
    memory_mb: int = Field(
        default=512, ge=64, le=4096, description="Address space of one run, in MiB."
    )
    in_workers: ClassVar[bool] = False
    in_sandbox: ClassVar[bool] = True

    def runs(self, reference: str | None) -> int:
        """The sandboxed runs grading one item takes at most (its reference given)."""
        return 1

    def sandbox_seconds(self, reference: str | None) -> float:
        """What grading one item may cost in sandbox time: each run's wall-clock limit."""
        return self.runs(reference) * self.wall_s


class IoCasesSpec(CodeLimitsSpec):
    """Runs the completion's Python program (its last fenced ``python`` block, else its
    last fenced block) once per case, with the case's input on stdin; the score is the
    fraction of cases whose output matches, after normalisation (see ``compare``)."""

    type: Literal["io_cases"]
    cases: list[IoCase] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_CASES,
        description="The cases, written in the spec. Unset: the item's reference, a JSON list "
        "of {input, output} (never the completion).",
    )
    compare: Literal["lines", "tokens"] = Field(
        default="lines",
        description="lines: equal line by line, trailing whitespace of each line and trailing "
        "empty lines ignored (a final newline or its absence does not matter); tokens: equal "
        "whitespace-separated tokens (line breaks and spacing ignored).",
    )
    float_tol: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="With compare: tokens, two tokens that both read as numbers match when "
        "they differ by at most this much, absolutely or relatively.",
    )

    def runs(self, reference: str | None) -> int:
        """One run per case: the spec's, else the reference's (none when it holds no list
        of cases: the grader then runs nothing)."""
        if self.cases is not None:
            return len(self.cases)
        try:
            cases = json.loads(reference) if reference is not None else None
        except ValueError:
            return 0
        return min(len(cases), MAX_CASES) if isinstance(cases, list) else 0

    @model_validator(mode="after")
    def _tolerance_on_tokens(self) -> IoCasesSpec:
        if self.float_tol is not None and self.compare != "tokens":
            raise ValueError("float_tol: needs compare: tokens")
        return self


class CheckProgramSpec(CodeLimitsSpec):
    """Runs a checker program (Python, written in the spec: trusted) in the sandbox as
    ``python3 checker.py output.txt reference.txt``, with the completion's extracted text
    in ``output.txt`` and the item's reference (empty when it has none) in
    ``reference.txt``; its exit code (0: score 1, else 0) or the number it prints last is
    the score."""

    type: Literal["check_program"]
    program: str = Field(
        min_length=1, max_length=100_000, description="The checker's Python source."
    )
    extract: Extract = Field(
        default="none", description="Part of the completion written to output.txt."
    )
    verdict: Literal["exit_code", "score"] = Field(
        default="exit_code",
        description="exit_code: exit 0 scores 1, any other exit 0; score: the checker exits 0 "
        "and prints a number in [0, 1] on its last line of output.",
    )


MAX_WORKSPACE_FILES = 256
"""Most files of an agent's workspace (an item's ``files``)."""
MAX_WORKSPACE_BYTES = 4 << 20
"""Most UTF-8 bytes of an agent's workspace, every file's path and text together."""
MAX_PATH_CHARS = 255
"""Longest path of a workspace or test file."""
MAX_TEST_FILES = 32
"""Most hidden test files of one unit_tests task."""
MAX_TEST_BYTES = 1 << 20
"""Most UTF-8 bytes of one task's hidden tests together (inline, a task file or a reference)."""
MAX_TESTS = 1000
"""Most tests one unit_tests task may count."""


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a file of a work directory (None when it can): it must be
    relative, POSIX, without ``..``, NUL or an empty name, at most :data:`MAX_PATH_CHARS`."""
    parts = path.split("/")
    if not path or len(path) > MAX_PATH_CHARS:
        return f"a path of 1 to {MAX_PATH_CHARS} characters, got {len(path)}"
    if "\0" in path or path.startswith("/") or "\\" in path:
        return f"{path[:80]!r}: a relative POSIX path without NUL or backslash"
    if any(part in ("", ".", "..") for part in parts):
        return f"{path[:80]!r}: no empty, '.' or '..' parts"
    return None


def files_problem(files: dict[str, str], max_files: int, max_bytes: int) -> str | None:
    """Why ``files`` (path -> text) is not a bounded set of work-directory files, or None."""
    if len(files) > max_files:
        return f"at most {max_files} files, got {len(files)}"
    size = 0
    for path, text in files.items():
        problem = path_problem(path)
        if problem is not None:
            return problem
        size += len(path.encode("utf-8", "surrogatepass")) + len(
            text.encode("utf-8", "surrogatepass")
        )
    if size > max_bytes:
        return f"at most {max_bytes} bytes of paths and text in all, got {size}"
    folders = {str(parent) for path in files for parent in PurePosixPath(path).parents}
    clash = next((path for path in files if path in folders), None)
    if clash is not None:
        return f"{clash[:80]!r}: both a file and a directory"
    return None


def sandbox_seconds(spec: SpecModel, reference: str | None) -> float:
    """The sandbox seconds ``spec`` may cost on one item (0 for a grader that runs none)."""
    return spec.sandbox_seconds(reference) if isinstance(spec, CodeLimitsSpec) else 0.0


class UnitTestsSpec(CodeLimitsSpec):
    """Runs the task's hidden tests with pytest in the sandbox against the completion's
    code: its last fenced ``python`` block written as ``<module>.py``, or, for an item
    with ``files``, the agent's workspace. The hidden tests come from ``tests``, from
    ``tests_file`` (read when the rubric or recipe file is loaded) or from the item's
    reference (a JSON object {path: text}), never from the completion; every test file and
    every file that steers pytest is restored from the task or removed before the run.
    The score is the weighted fraction of tests passed; a collection error, no tests, a
    skipped, xfailed or deselected test, a test count other than the task's or a missing
    report scores 0."""

    type: Literal["unit_tests"]
    module: str = Field(
        default="solution",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$",
        description="The module name the completion's code block is written as (<module>.py), "
        "which the tests import.",
    )
    tests: dict[str, str] | None = Field(
        default=None,
        description="The hidden tests, path -> Python source (e.g. test_solution.py). Unset: "
        "tests_file, else the item's reference (a JSON object {path: text}).",
    )
    tests_file: str | None = Field(
        default=None,
        max_length=MAX_PATH_CHARS,
        description="A test file, relative to the rubric or recipe file naming it, read when "
        "that file is loaded (never at request time); placed in the work directory under its "
        "own name. Only a file of the library may name one.",
    )
    expected_tests: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TESTS,
        description="How many tests the hidden tests hold. Unset: counted by collecting the "
        "hidden tests alone in the sandbox (one more run).",
    )
    tests_shown: bool = Field(
        default=False,
        description="Whether an agent's workspace was given the hidden test files (e.g. a "
        "repository's own tests): then a test file missing from the workspace is a deletion, "
        "flagged tamper_test_edit. Unset, a workspace without them never saw them, and only "
        "the test files it holds are compared with the task's.",
    )
    weights: dict[str, float] | None = Field(
        default=None,
        max_length=MAX_TESTS,
        description="Weight of each test by pytest node id (e.g. test_solution.py::test_edge); "
        "a test not named weighs 1.",
    )

    def runs(self, reference: str | None) -> int:
        """The pytest run, and the collect run counting the task's tests when the spec
        does not say how many."""
        return 1 if self.expected_tests is not None else 2

    @model_validator(mode="before")
    @classmethod
    def _read_tests_file(cls, data: Any, info: ValidationInfo) -> Any:
        """Fill ``tests`` from ``tests_file`` through the reader a library file's loading
        gives (``task_files`` in the validation context); a request has none."""
        if not isinstance(data, dict) or data.get("tests") is not None:
            return data
        name = data.get("tests_file")
        if not isinstance(name, str):
            return data
        reader = (info.context or {}).get("task_files")
        if reader is None:
            raise ValueError(
                "tests_file: only a rubric or recipe file of the library may name a task file"
            )
        return {**data, "tests": {PurePosixPath(name).name: reader(name)}}

    @model_validator(mode="after")
    def _tests_bounded(self) -> UnitTestsSpec:
        if self.tests is not None:
            problem = files_problem(self.tests, MAX_TEST_FILES, MAX_TEST_BYTES)
            if problem is None and not self.tests:
                problem = "at least one test file"
            if problem is not None:
                raise ValueError(f"tests: {problem}")
        if self.weights is not None and any(not 0 < w <= 1e6 for w in self.weights.values()):
            raise ValueError("weights: each weight above 0 and at most 1e6")
        return self
