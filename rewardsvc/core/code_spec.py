"""Specs of the code graders: graders that run a program in the sandbox.

``io_cases`` runs the completion's Python program on hidden stdin/stdout cases;
``check_program`` runs a trusted checker program (written in the spec) on the
completion's output. Both declare ``in_sandbox``: their functions
(``rewardsvc.graders.code``) reach the sandbox's lanes, never a worker process. What a
run may use is bounded by each spec's limits, themselves bounded here, so that no request
can ask for unbounded work.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

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
