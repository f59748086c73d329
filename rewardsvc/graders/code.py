"""The code graders: ``io_cases`` and ``check_program``, run in the sandbox's lanes.

Who is to blame decides between a score and no score (docs/explanation/failure-modes.md):

- What the completion's program does within the task's limits is its answer, and counts
  against it: a wrong output, a non-zero exit (an exception, ``sys.exit(137)``), output
  over the limit, and also running past the wall clock or CPU limit (``sandbox_timeout``)
  or out of memory (``sandbox_memory``): each fails that case. Were they no score, a
  policy could trade a low score for no score by looping or allocating on purpose.
- A completion without a program (no fenced code block) is the policy's fault: score 0,
  with the evidence ``no code``.
- What the service could not do is no score, with its kind, never 0: the sandbox is
  unavailable, busy or failed to start (``sandbox_unavailable``, ``sandbox_busy``,
  ``sandbox_failed``); then the item gets no score even if other cases ran. So does a
  reference that is not a list of cases.
- A ``check_program`` checker is trusted, and it reads the completion's text: its non-zero
  exit, or its reaching a limit on that text, is a rejection (0), for the same reason;
  a checker that exits 0 without a readable score is the recipe's bug: no score
  (``grader_failed``).

The expected outputs never enter a sandbox that runs the completion's code: it gets one
case's input on stdin and its own source, nothing else. The code run is also read by the
tamper detector (``rewardsvc.safety.tamper``): its flags come with the result.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from rewardsvc.core.code_spec import (
    MAX_CASES,
    CheckProgramSpec,
    CodeLimitsSpec,
    IoCase,
    IoCasesSpec,
)
from rewardsvc.core.errors import SandboxFailureKind
from rewardsvc.graders.extract import code_block, extract
from rewardsvc.graders.result import GraderResult, clip_text
from rewardsvc.safety.tamper import scan_source
from rewardsvc.sandbox.lanes import SandboxLanes
from rewardsvc.sandbox.run import Limits, RunRequest, RunResult

PYTHON = "python3"
"""The interpreter, found on the sandbox's fixed ``PATH`` (``/usr/local/bin``, ``/usr/bin``)."""
OUTPUT_BYTES = 1 << 20
"""Most output of one run kept (a case whose output is longer fails)."""
CASES_AT_ONCE = 4
"""Most runs of one item queued or running at once: a batch's items share the sandbox's
queue, and one item's 64 cases should not fill it."""
EVIDENCE_CASES = 16
"""Most per-case outcomes a result's evidence lists (the counts cover every case)."""
# What counts against the program: the limits are the task's, reaching one is its answer.
PROGRAM_FAULTS: frozenset[SandboxFailureKind] = frozenset({"sandbox_timeout", "sandbox_memory"})
_CASES = TypeAdapter(list[IoCase])


@dataclass(frozen=True)
class Sandbox:
    """Where one grader call runs its programs: the service's lanes (None: it has no
    sandbox, every run is ``sandbox_unavailable``), queued in ``group``'s turn, none
    started after ``deadline``."""

    lanes: SandboxLanes | None
    group: Hashable = None
    deadline: float | None = None

    async def run(self, request: RunRequest) -> RunResult:
        """Run ``request`` in a fresh sandbox (typed failures, never raises)."""
        if self.lanes is None:
            return RunResult.failed("sandbox_unavailable", "this service has no sandbox")
        return await self.lanes.arun(request, self.group, self.deadline)


def limits(spec: CodeLimitsSpec) -> Limits:
    """The sandbox limits of one run of ``spec``."""
    return Limits(
        cpu_s=spec.cpu_s,
        memory_bytes=spec.memory_mb << 20,
        wall_s=spec.wall_s,
        output_bytes=OUTPUT_BYTES,
    )


def no_score(result: RunResult, what: str) -> GraderResult:
    """No score for a run the service could not make, with its kind."""
    kind = result.failure or "sandbox_failed"
    return GraderResult(None, {}, f"{what}: {kind}: {result.detail}"[:500], kind)


def program_of(completion: str) -> str | None:
    """The completion's program: its last fenced ``python`` (or ``py``) block, else its
    last fenced block of any language; None without one."""
    for language in ("python", "py", None):
        found = code_block(completion, language)
        if found is not None:
            return found
    return None


def cases_of(spec: IoCasesSpec, reference: str | None) -> list[IoCase] | str:
    """The cases of ``spec``: its own, else the reference's; an error message when the
    reference is missing or not a JSON list of cases."""
    if spec.cases is not None:
        return spec.cases
    if reference is None:
        return "io_cases without cases in its spec needs a reference (the cases)"
    try:
        cases = _CASES.validate_json(reference)
    except ValidationError as exc:
        return f"reference: not a JSON list of {{input, output}} cases: {exc.errors()[0]['msg']}"
    if not 1 <= len(cases) <= MAX_CASES:
        return f"reference: between 1 and {MAX_CASES} cases, got {len(cases)}"
    return cases


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _same_token(got: str, expected: str, tol: float | None) -> bool:
    if got == expected:
        return True
    if tol is None:
        return False
    try:
        a, b = float(got), float(expected)
    except ValueError:
        return False
    return math.isfinite(a) and math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def same_output(got: str, expected: str, spec: IoCasesSpec) -> bool:
    """Whether ``got`` matches ``expected`` under ``spec``'s normalisation."""
    if spec.compare == "lines":
        return _lines(got) == _lines(expected)
    tokens, wanted = got.split(), expected.split()
    return len(tokens) == len(wanted) and all(
        _same_token(a, b, spec.float_tol) for a, b in zip(tokens, wanted, strict=True)
    )


def case_outcome(result: RunResult, case: IoCase, spec: IoCasesSpec) -> str | None:
    """``pass`` or why the case failed, for a run that ended (or reached a limit of the
    program's); None when the service could not run it (no score)."""
    if result.failure is not None:
        return result.failure if result.failure in PROGRAM_FAULTS else None
    if result.exit_code != 0:
        return f"exit {result.exit_code}"
    if result.stdout_truncated:
        return "output over the limit"
    got = result.stdout.decode("utf-8", "replace")
    return "pass" if same_output(got, case.output, spec) else "wrong output"


async def io_cases(
    completion: str, reference: str | None, spec: IoCasesSpec, sandbox: Sandbox
) -> GraderResult:
    """The fraction of ``spec``'s cases (or the reference's) that the completion's
    program passes, each run alone in a fresh sandbox with the case's input on stdin."""
    cases = cases_of(spec, reference)
    if isinstance(cases, str):
        return GraderResult(None, {}, cases, "grader_failed")
    program = program_of(completion)
    if program is None:
        return GraderResult(0.0, {"cases": len(cases), "passed": 0, "no_code": True})
    findings = await asyncio.to_thread(scan_source, program)  # its tamper flags
    bounds = limits(spec)
    files = {"solution.py": program.encode()}
    at_once = asyncio.Semaphore(CASES_AT_ONCE)

    async def run(case: IoCase) -> RunResult:
        async with at_once:
            argv = (PYTHON, "-I", "solution.py")
            return await sandbox.run(RunRequest(argv, files, case.input.encode(), limits=bounds))

    results = await asyncio.gather(*(run(case) for case in cases))
    outcomes: list[dict[str, Any]] = []
    passed = 0
    for number, (case, result) in enumerate(zip(cases, results, strict=True)):
        outcome = case_outcome(result, case, spec)
        if outcome is None:
            return no_score(result, f"case {number}").flagged(findings)
        passed += outcome == "pass"
        if len(outcomes) < EVIDENCE_CASES:
            entry: dict[str, Any] = {"case": number, "result": outcome}
            if outcome != "pass" and result.stderr:
                entry["stderr"] = clip_text(result.stderr.decode("utf-8", "replace")[-2000:], 200)
            outcomes.append(entry)
    evidence = {"cases": len(cases), "passed": passed, "outcomes": outcomes}
    return GraderResult(passed / len(cases), evidence).flagged(findings)


def checker_score(result: RunResult, spec: CheckProgramSpec) -> float | str:
    """The score a checker's run that ended gives under ``spec.verdict``: 0 for any
    non-zero exit (a checker rejects what it cannot read); an error message when it
    exited 0 without a score to read."""
    if result.exit_code != 0:
        return 0.0
    if spec.verdict == "exit_code":
        return 1.0
    lines = result.stdout.decode("utf-8", "replace").strip().splitlines() or [""]
    try:
        score = float(lines[-1])
    except ValueError:
        score = math.nan
    if not 0.0 <= score <= 1.0:
        return f"the checker's last line is not a score in [0, 1]: {clip_text(lines[-1], 80)!r}"
    return score


async def check_program(
    completion: str, reference: str | None, spec: CheckProgramSpec, sandbox: Sandbox
) -> GraderResult:
    """The score ``spec``'s checker gives the completion's extracted text (and the
    reference), the checker run in a fresh sandbox. The checker reaching its limits on
    that text scores 0, as a rejection would; a sandbox that could not run it, no score."""
    output = extract(completion, spec.extract).text
    if output is None:
        return GraderResult(0.0, {"extracted": None})
    # A checker may run the output as code: flag it as such (prose does not parse).
    findings = await asyncio.to_thread(scan_source, output, "output.txt")
    files = {
        "checker.py": spec.program.encode(),
        "output.txt": output.encode(),
        "reference.txt": (reference or "").encode(),
    }
    argv = (PYTHON, "-I", "checker.py", "output.txt", "reference.txt")
    result = await sandbox.run(RunRequest(argv, files, limits=limits(spec)))
    if result.failure is not None and result.failure not in PROGRAM_FAULTS:
        return no_score(result, "checker").flagged(findings)
    evidence: dict[str, Any] = {"exit_code": result.exit_code}
    if result.failure is not None:
        evidence["result"] = result.failure
    if result.stderr:
        evidence["stderr"] = clip_text(result.stderr.decode("utf-8", "replace")[-2000:], 200)
    score = 0.0 if result.failure is not None else checker_score(result, spec)
    if isinstance(score, str):
        return GraderResult(None, evidence, score, "grader_failed")
    return GraderResult(score, evidence).flagged(findings)
