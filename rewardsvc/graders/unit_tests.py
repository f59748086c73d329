"""The ``unit_tests`` grader: a task's hidden tests run by pytest in the sandbox against the
completion's code (its fenced program, or an agent's workspace).

The work directory holds the code under test with the hidden tests shown read-only in it,
every file that steers the runner restored or removed
(:mod:`~rewardsvc.graders.workspace`). pytest is started by a trusted launcher
(:mod:`~rewardsvc.graders.pytest_launcher`, shown read-only outside the work directory)
whose plugin writes a JSON report to a descriptor that is no file of the sandbox's. The
score is the weighted fraction of the tests passed.

The task's side is worked out once for all the completions graded against the same tests
at the same time (a group's): the reference read into tests, the collect run that counts
them; each completion's code still runs in a sandbox of its own.

Who is to blame decides between a score and no score, as for ``io_cases``
(:mod:`~rewardsvc.graders.code`): the run reaching its limits, a collection error, no
tests, a skipped, xfailed or deselected test, a count of tests other than the task's, a
missing or unreadable report, or a report that disagrees with pytest's exit code are the
policy's doing and score 0 (the evidence says which); a sandbox that could not run
(unavailable, busy, failed) is no score with its kind; hidden tests that are missing,
malformed or do not collect on their own are the task's fault: no score,
``grader_failed``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from rewardsvc.core.code_spec import MAX_TEST_BYTES, MAX_TEST_FILES, UnitTestsSpec, files_problem
from rewardsvc.core.rollout import Rollout
from rewardsvc.graders.code import PROGRAM_FAULTS, PYTHON, Sandbox, limits, no_score, program_of
from rewardsvc.graders.result import GraderResult, clip_text
from rewardsvc.graders.workspace import work_dir
from rewardsvc.safety import tamper
from rewardsvc.sandbox.run import RUNNER_DIR, Limits, RunRequest, RunResult, ro_problem

RUNNER_FILES = {
    "launcher.py": Path(__file__).with_name("pytest_launcher.py").read_bytes(),
    # The only configuration pytest reads: none of the work directory's.
    "pytest.ini": b"[pytest]\naddopts =\n",
}
ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
REPORT_BYTES = 1 << 20
"""Largest report kept (a longer one is unreadable: score 0)."""
EVIDENCE_TESTS = 32
"""Most per-test outcomes a result's evidence lists (failures first)."""
COUNTS_KEPT = 256
"""Task test counts kept in memory (one collect run per distinct set of hidden tests)."""
REFERENCES_KEPT = 16
"""References read into tests kept in memory (each at most a few MiB)."""
_TESTS = TypeAdapter(dict[str, str])


class _Report(BaseModel):
    """The launcher's report (see :mod:`~rewardsvc.graders.pytest_launcher`)."""

    exit_code: int
    collected: list[str] | None
    outcomes: dict[str, str]
    errors: list[str]
    deselected: int


@dataclass(frozen=True)
class Expected:
    """The task's tests: their node ids when a collect run found them, and their count."""

    ids: frozenset[str] | None
    count: int


_COUNTS: OrderedDict[str, Expected] = OrderedDict()
_COLLECTING: dict[str, asyncio.Future[Expected | GraderResult]] = {}
_PROBE = RunRequest((PYTHON, "-I", "-c", "import pytest"), limits=Limits(wall_s=30.0))
_runner_found = False  # once pytest was found in the sandbox; checked again until then


async def runner_missing(sandbox: Sandbox) -> GraderResult | None:
    """No score (``sandbox_unavailable``) when the sandbox's python3 cannot import pytest
    (checked by a run of its own, once it succeeds never again): a missing runner must not
    read as the code's failure."""
    global _runner_found
    if _runner_found:
        return None
    result = await sandbox.run(_PROBE)
    if result.failure is not None:
        return no_score(result, "looking for pytest")
    if result.exit_code != 0:
        message = "pytest is not importable by the sandbox's python3 (install python3-pytest)"
        return GraderResult(None, {}, message, "sandbox_unavailable")
    _runner_found = True
    return None


def hidden_tests(spec: UnitTestsSpec, reference: str | None) -> dict[str, str] | str:
    """The task's hidden tests (the spec's, else the reference's JSON {path: text}), or
    why there are none. A reference is read once for all the completions that share it
    (a group's): the same text gives the same tests, which no caller changes."""
    if spec.tests is not None:
        return _placed(spec.tests, "tests")
    if reference is None:
        return "unit_tests without tests in its spec needs a reference (the tests)"
    return reference_tests(reference)


@functools.lru_cache(maxsize=REFERENCES_KEPT)
def reference_tests(reference: str) -> dict[str, str] | str:
    """The hidden tests a reference holds (a JSON object {path: text}), or why it holds
    none."""
    try:
        tests = _TESTS.validate_json(reference)
    except ValidationError as exc:
        return f"reference: not a JSON object of test files: {exc.errors()[0]['msg']}"
    problem = files_problem(tests, MAX_TEST_FILES, MAX_TEST_BYTES) or (
        None if tests else "no test files"
    )
    return _placed(tests, "reference") if problem is None else f"reference: {problem}"


def _placed(tests: dict[str, str], where: str) -> dict[str, str] | str:
    """``tests``, or why the sandbox cannot show them read-only (a path that is both a test
    file and a directory of one, or tests in too many directories)."""
    problem = ro_problem({}, tests)
    return tests if problem is None else f"{where}: {problem}"


def tamper_findings(
    rollout: Rollout, code: Mapping[str, str], tests: Mapping[str, str], shown: bool
) -> list[tamper.Finding]:
    """The tamper findings of the code under test (:mod:`rewardsvc.safety.tamper`). A
    workspace that was given the hidden tests (``shown``, the spec's ``tests_shown``), or
    holds any of them, was shown them: its edits to them, or a deletion, are findings; a
    workspace never shown them lacks them without deleting them."""
    if not rollout.files:
        return tamper.scan(code)
    seen = shown or any(path in code for path in tests)
    return tamper.workspace(code, tests if seen else {})


def code_of(rollout: Rollout, spec: UnitTestsSpec) -> dict[str, str] | None:
    """The code under test: the agent's workspace, else the completion's program as
    ``<module>.py``; None when there is neither."""
    if rollout.files:
        return dict(rollout.files)
    program = program_of(rollout.completion)
    return None if program is None else {f"{spec.module}.py": program}


def request(
    spec: UnitTestsSpec, files: Mapping[str, str], tests: Mapping[str, str], mode: str
) -> RunRequest:
    """The sandboxed pytest run of ``tests`` (shown read-only) in a work directory of the
    code under test ``files``."""
    helpers = ("conftest.py", "__init__.py")
    test_files = [
        p for p in sorted(tests) if p.endswith(".py") and PurePosixPath(p).name not in helpers
    ]
    own_conftest = any(PurePosixPath(p).name == "conftest.py" for p in tests)
    argv = (
        PYTHON,
        "-I",
        f"{RUNNER_DIR}/launcher.py",
        mode,
        *([] if own_conftest else ["--noconftest"]),
        *test_files,
    )
    return RunRequest(
        argv,
        _encoded(files),
        env=ENV,
        limits=limits(spec),
        runner_files=RUNNER_FILES,
        report_bytes=REPORT_BYTES,
        ro_files=_encoded(tests),
    )


def _encoded(files: Mapping[str, str]) -> dict[str, bytes]:
    return {path: text.encode("utf-8", "surrogatepass") for path, text in files.items()}


def read_report(result: RunResult) -> _Report | str:
    """The run's report, or why there is none to read."""
    if result.report_truncated or not result.report:
        return "no report" if not result.report else "report over the limit"
    try:
        return _Report.model_validate_json(result.report)
    except ValidationError:
        return "unreadable report"


async def expected_tests(
    spec: UnitTestsSpec, tests: dict[str, str], sandbox: Sandbox
) -> Expected | GraderResult:
    """The task's tests: ``expected_tests``, else those a collect run of the hidden tests
    alone finds (kept by their content); no score when they do not collect. Completions
    graded at once against the same tests (a group's) wait for one collect run."""
    if spec.expected_tests is not None:
        return Expected(None, spec.expected_tests)
    key = hashlib.sha256(_TESTS.dump_json(tests)).hexdigest()
    if key in _COUNTS:
        _COUNTS.move_to_end(key)
        return _COUNTS[key]
    running = _COLLECTING.get(key)
    if running is None or running.get_loop() is not asyncio.get_running_loop():
        running = asyncio.ensure_future(_collect(spec, tests, sandbox, key))
        _COLLECTING[key] = running
        running.add_done_callback(functools.partial(_collected, key))
    # One waiter cancelled (its deadline) leaves the run to the others.
    return await asyncio.shield(running)


def _collected(key: str, done: asyncio.Future[Expected | GraderResult]) -> None:
    if _COLLECTING.get(key) is done:
        del _COLLECTING[key]


async def _collect(
    spec: UnitTestsSpec, tests: dict[str, str], sandbox: Sandbox, key: str
) -> Expected | GraderResult:
    """The collect run of the hidden tests alone (its count kept under ``key``)."""
    result = await sandbox.run(request(spec, {}, tests, "collect"))
    if result.failure is not None and result.failure not in PROGRAM_FAULTS:
        return no_score(result, "collecting the hidden tests")
    report = read_report(result)
    if isinstance(report, str) or report.errors or not report.collected:
        why = report if isinstance(report, str) else "; ".join(report.errors) or "no tests"
        stderr = result.stderr.decode("utf-8", "replace")[-300:]
        message = f"the hidden tests do not collect on their own: {why} {stderr}"
        return GraderResult(None, {}, message[:500], "grader_failed")
    found = Expected(frozenset(report.collected), len(report.collected))
    _COUNTS[key] = found
    while len(_COUNTS) > COUNTS_KEPT:
        _COUNTS.popitem(last=False)
    return found


def _fault(report: _Report, expected: Expected, exit_code: int | None) -> str | None:
    """Why a report gives the policy nothing (a failure of its run), or None."""
    if report.exit_code != exit_code:
        return f"report says exit {report.exit_code}, pytest exited {exit_code}"
    if report.errors:
        return "collection errors"
    collected = report.collected or []
    if not collected:
        return "no tests collected"
    if report.deselected:
        return f"{report.deselected} tests deselected"
    if len(collected) != expected.count or (
        expected.ids is not None and set(collected) != expected.ids
    ):
        return f"{len(collected)} tests collected, the task has {expected.count}"
    if set(report.outcomes) != set(collected):
        return "outcomes of tests other than those collected"
    odd = sorted({o for o in report.outcomes.values()} - {"passed", "failed", "error"})
    if odd:
        return f"tests {', '.join(odd)}"
    all_passed = all(o == "passed" for o in report.outcomes.values())
    if all_passed != (exit_code == 0) or (not all_passed and exit_code != 1):
        return f"exit {exit_code} disagrees with the outcomes"
    return None


def score_of(report: _Report, weights: Mapping[str, float] | None) -> float:
    """The weighted fraction of passed tests (a test ``weights`` does not name weighs 1)."""
    weight = {test: (weights or {}).get(test, 1.0) for test in report.outcomes}
    passed = sum(w for test, w in weight.items() if report.outcomes[test] == "passed")
    return passed / sum(weight.values())


def _outcomes(report: _Report) -> list[dict[str, str]]:
    ordered = sorted(report.outcomes.items(), key=lambda kv: (kv[1] == "passed", kv[0]))
    return [{"test": clip_text(t, 200) or "", "result": o} for t, o in ordered[:EVIDENCE_TESTS]]


def verdict(
    result: RunResult, expected: Expected, weights: Mapping[str, float] | None
) -> tuple[float, dict[str, Any]]:
    """The score of a run that ended (or reached a limit of the program's) and its
    evidence: per-test outcomes, or the failure that scores 0."""
    if result.failure is not None:
        return 0.0, {"failure": result.failure}
    report = read_report(result)
    if isinstance(report, str):
        return 0.0, {"failure": report, "exit_code": result.exit_code}
    fault = _fault(report, expected, result.exit_code)
    evidence: dict[str, Any] = {"outcomes": _outcomes(report)}
    if fault is not None:
        errors = [clip_text(e, 300) for e in report.errors[:4]]
        return 0.0, {"failure": fault, **evidence, **({"errors": errors} if errors else {})}
    passed = sum(o == "passed" for o in report.outcomes.values())
    return score_of(report, weights), {"tests": len(report.outcomes), "passed": passed, **evidence}


async def unit_tests(rollout: Rollout, spec: UnitTestsSpec, sandbox: Sandbox) -> GraderResult:
    """The weighted fraction of the task's hidden tests that the completion's code passes
    under pytest in a fresh sandbox (see the module doc)."""
    tests = hidden_tests(spec, rollout.reference)
    if isinstance(tests, str):
        return GraderResult(None, {}, tests, "grader_failed")
    code = code_of(rollout, spec)
    if code is None:
        return GraderResult(0.0, {"no_code": True})
    missing = await runner_missing(sandbox)
    if missing is not None:
        return missing
    expected = await expected_tests(spec, tests, sandbox)
    if isinstance(expected, GraderResult):
        return expected
    if spec.weights and expected.ids is not None and not set(spec.weights) <= expected.ids:
        unknown = sorted(set(spec.weights) - expected.ids)[:3]
        return GraderResult(None, {}, f"weights: no such tests {unknown}", "grader_failed")
    findings = await asyncio.to_thread(tamper_findings, rollout, code, tests, spec.tests_shown)
    work = work_dir(code, tests)
    result = await sandbox.run(request(spec, work.files, tests, "run"))
    if result.failure is not None and result.failure not in PROGRAM_FAULTS:
        return no_score(result, "pytest").flagged(findings)
    score, evidence = verdict(result, expected, spec.weights)
    evidence.update(restored=list(work.restored), removed=list(work.removed)[:EVIDENCE_TESTS])
    if score < 1.0 and result.stderr:
        evidence["stderr"] = clip_text(result.stderr.decode("utf-8", "replace")[-2000:], 300)
    return GraderResult(score, evidence).flagged(findings)
