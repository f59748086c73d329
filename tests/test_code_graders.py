"""The code graders against the real sandbox (bubblewrap): ``io_cases`` scores the pass
fraction of the completion's program on hidden cases, ``check_program`` runs a trusted
checker on the completion's output, and the failure policy: what the program does within
the task's limits (a loop, a memory bomb, ``sys.exit(137)``) fails its case, counted in
the score; what the service cannot do (no sandbox, a full queue) is no score, never 0."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from rewardsvc.application.root import compose_local, settings_with
from rewardsvc.core.code_spec import CheckProgramSpec, IoCasesSpec
from rewardsvc.graders.code import Sandbox, check_program, io_cases
from rewardsvc.graders.result import GraderResult
from rewardsvc.sandbox.backend import NoBackend
from rewardsvc.sandbox.bubblewrap import BubblewrapBackend
from rewardsvc.sandbox.lanes import SandboxLanes
from tests.debian import debian_binary

SECRET = "expected-7f3c1d9e"
ADD_CASES = [
    {"input": "1 2\n", "output": "3\n"},
    {"input": "5 7", "output": "12"},
    {"input": "-4 4\n", "output": "0"},
]
CORRECT = "a, b = map(int, input().split())\nprint(a + b)"
WRONG = "a, b = map(int, input().split())\nprint(a * b if a > 0 else a + b)"


@pytest.fixture(scope="module")
def lanes() -> Iterator[SandboxLanes]:
    backend = BubblewrapBackend(debian_binary("bwrap", "bubblewrap"))
    available = backend.availability()
    assert available.ok, available.reason
    lanes = SandboxLanes(backend, lanes=2, queue_limit=64)
    yield lanes
    lanes.close()


def fenced(program: str) -> str:
    return f"Here is my solution.\n\n```python\n{textwrap.dedent(program).strip()}\n```\n"


def io_spec(**fields: Any) -> IoCasesSpec:
    values: dict[str, Any] = {"type": "io_cases", "cases": ADD_CASES, "wall_s": 3, "cpu_s": 1}
    return IoCasesSpec.model_validate({**values, **fields})


def grade(
    lanes: SandboxLanes, program: str, spec: IoCasesSpec, reference: str | None = None
) -> GraderResult:
    return asyncio.run(io_cases(fenced(program), reference, spec, Sandbox(lanes)))


def test_a_correct_program_scores_1_and_a_wrong_one_the_fraction_it_passes(
    lanes: SandboxLanes,
) -> None:
    right = grade(lanes, CORRECT, io_spec())
    assert right.score == 1.0, right
    assert right.evidence["passed"] == 3
    wrong = grade(lanes, WRONG, io_spec())
    assert wrong.score == pytest.approx(1 / 3), wrong  # only -4 4 takes the a + b branch
    results = [o["result"] for o in wrong.evidence["outcomes"]]
    assert results == ["wrong output", "wrong output", "pass"]


def test_cases_come_from_the_reference_when_the_spec_has_none(lanes: SandboxLanes) -> None:
    spec = io_spec(cases=None)
    assert grade(lanes, CORRECT, spec, json.dumps(ADD_CASES)).score == 1.0
    missing = grade(lanes, CORRECT, spec, None)
    assert missing.score is None and missing.kind == "grader_failed", missing
    bad = grade(lanes, CORRECT, spec, "print(3)")
    assert bad.score is None and "reference" in (bad.error or ""), bad


def test_output_normalisation_lines_and_tokens_with_float_tolerance(lanes: SandboxLanes) -> None:
    cases = [{"input": "", "output": "1.0 2\n3\n"}]
    trailing = "print('1.0 2   ')\nprint('3')\nprint()\nprint()"
    assert grade(lanes, trailing, io_spec(cases=cases)).score == 1.0
    respaced = "print('1.0\\n 2 3')"
    assert grade(lanes, respaced, io_spec(cases=cases)).score == 0.0
    assert grade(lanes, respaced, io_spec(cases=cases, compare="tokens")).score == 1.0
    near = "print('1.0000001 2 3')"
    assert grade(lanes, near, io_spec(cases=cases, compare="tokens")).score == 0.0
    tolerant = io_spec(cases=cases, compare="tokens", float_tol=1e-6)
    assert grade(lanes, near, tolerant).score == 1.0


@pytest.mark.parametrize(
    "program",
    [
        pytest.param("while True:\n    pass", id="infinite-loop"),
        pytest.param("x = bytearray(1 << 34)\nprint(3)", id="memory-bomb"),
        pytest.param("import sys\nsys.exit(137)", id="exit-137"),
    ],
)
def test_a_program_reaching_the_tasks_limits_fails_its_cases_it_does_not_escape_the_score(
    lanes: SandboxLanes, program: str
) -> None:
    result = grade(lanes, program, io_spec())
    assert result.score == 0.0, result  # counted against the program, not null
    outcomes = [o["result"] for o in result.evidence["outcomes"]]
    # A kernel kill is a CPU-limit kill unless the OOM killer acted during the run (a
    # host short of memory may kill the loop itself); exit 137 reads as a kernel kill.
    # Either counts against the program, which is what this test is about.
    assert set(outcomes) <= {"sandbox_timeout", "sandbox_memory"} and len(outcomes) == 3


def test_an_exception_is_a_failed_case_and_a_partial_program_keeps_its_passes(
    lanes: SandboxLanes,
) -> None:
    program = """
    a, b = map(int, input().split())
    if a < 0:
        while True:
            pass
    if a == 5:
        raise ValueError("no")
    print(a + b)
    """
    result = grade(lanes, program, io_spec())
    assert result.score == pytest.approx(1 / 3), result
    outcomes = result.evidence["outcomes"]
    assert [o["result"] for o in outcomes[:2]] == ["pass", "exit 1"]
    assert outcomes[2]["result"] in {"sandbox_timeout", "sandbox_memory"}
    assert "ValueError" in outcomes[1]["stderr"]


def test_no_code_block_scores_0_with_its_evidence(lanes: SandboxLanes) -> None:
    result = asyncio.run(io_cases("The answer is 3.", None, io_spec(), Sandbox(lanes)))
    assert result.score == 0.0 and result.evidence["no_code"] is True, result


def test_the_program_cannot_read_the_expected_outputs(lanes: SandboxLanes) -> None:
    """The expected output is not in the sandbox: not in a file, the environment, the
    arguments or any process's command line the program can see."""
    program = """
    import os
    seen = []
    for top in ("/work", "/tmp", "/dev/shm", "/proc/self"):
        for root, dirs, files in os.walk(top):
            dirs[:] = [] if root.startswith("/proc/self/") else dirs
            for name in files:
                try:
                    with open(os.path.join(root, name), "rb") as f:
                        seen.append(f.read(1 << 20))
                except OSError:
                    pass
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            seen.append(open(f"/proc/{pid}/cmdline", "rb").read())
            seen.append(open(f"/proc/{pid}/environ", "rb").read())
        except OSError:
            pass
    seen.append(repr(os.environ).encode())
    found = [s for s in seen if b"expected-" in s]
    print(found[0].split(b"expected-")[1][:8].decode() if found else "nothing")
    """
    spec = io_spec(cases=[{"input": "", "output": SECRET}])
    result = grade(lanes, program, spec)
    assert result.score == 0.0, result
    assert result.evidence["outcomes"][0]["result"] == "wrong output"


def test_the_service_failing_to_run_is_no_score_never_0() -> None:
    unavailable = SandboxLanes(NoBackend("not here"), lanes=1)
    try:
        result = asyncio.run(io_cases(fenced(CORRECT), None, io_spec(), Sandbox(unavailable)))
    finally:
        unavailable.close()
    assert result.score is None and result.kind == "sandbox_unavailable", result
    assert result.verdict().error_kind == "sandbox_unavailable"
    none = asyncio.run(io_cases(fenced(CORRECT), None, io_spec(), Sandbox(None)))
    assert none.score is None and none.kind == "sandbox_unavailable"


def test_a_full_sandbox_queue_is_no_score(lanes: SandboxLanes) -> None:
    busy = SandboxLanes(lanes.backend, lanes=1, queue_limit=0)
    try:

        async def both() -> list[GraderResult]:
            loop = "while True:\n    pass"
            return list(
                await asyncio.gather(
                    io_cases(fenced(loop), None, io_spec(wall_s=1), Sandbox(busy)),
                    io_cases(fenced(CORRECT), None, io_spec(), Sandbox(busy)),
                )
            )

        results = asyncio.run(both())
    finally:
        busy.close()
    assert any(r.score is None and r.kind == "sandbox_busy" for r in results), results
    assert all(r.score is None or r.score == 0.0 for r in results), results


CHECKER = """
import sys
output = open(sys.argv[1]).read().split()
reference = open(sys.argv[2]).read().split()
hits = sum(1 for word in reference if word in output)
print("checked")
print(hits / len(reference))
"""


def check(
    lanes: SandboxLanes, completion: str, reference: str | None, **fields: Any
) -> GraderResult:
    spec = CheckProgramSpec.model_validate({"type": "check_program", "wall_s": 3, **fields})
    return asyncio.run(check_program(completion, reference, spec, Sandbox(lanes)))


def test_check_program_scores_by_the_checkers_printed_score_or_exit_code(
    lanes: SandboxLanes,
) -> None:
    scored = check(lanes, "red green", "red green blue yellow", program=CHECKER, verdict="score")
    assert scored.score == 0.5, scored
    exits = "import sys\nsys.exit(0 if 'ok' in open(sys.argv[1]).read() else 3)"
    assert check(lanes, "all ok", None, program=exits).score == 1.0
    rejected = check(lanes, "not good", None, program=exits)
    assert rejected.score == 0.0 and rejected.evidence["exit_code"] == 3, rejected


def test_check_program_failures_follow_the_policy(lanes: SandboxLanes) -> None:
    unreadable = check(lanes, "x", None, program="print('maybe')", verdict="score")
    assert unreadable.score is None and unreadable.kind == "grader_failed", unreadable
    crashed = check(lanes, "x", None, program="raise SystemExit(open('nope').read())")
    assert crashed.score == 0.0, crashed
    looping = check(lanes, "x", None, program="while True:\n    pass", wall_s=1, cpu_s=1)
    assert looping.score == 0.0 and looping.evidence["result"] == "sandbox_timeout", looping
    spec = CheckProgramSpec(type="check_program", program="print(1)")
    none = asyncio.run(check_program("x", None, spec, Sandbox(None)))
    assert none.score is None and none.kind == "sandbox_unavailable", none


def test_the_specs_refuse_what_they_cannot_bound() -> None:
    with pytest.raises(ValueError, match="float_tol"):
        io_spec(float_tol=0.1)
    with pytest.raises(ValueError, match="cases"):
        io_spec(cases=[{"input": "", "output": "1"}] * 65)
    with pytest.raises(ValueError, match="wall_s"):
        io_spec(wall_s=600)
    with pytest.raises(ValueError, match="program"):
        CheckProgramSpec.model_validate({"type": "check_program", "program": ""})


def test_an_items_cases_wait_their_turn_rather_than_fill_the_queue(lanes: SandboxLanes) -> None:
    """An item queues at most a few of its cases at once: twelve cases pass through a queue
    of four (submitted all at once, eight would be refused as sandbox_busy)."""
    narrow = SandboxLanes(lanes.backend, lanes=1, queue_limit=4)
    try:
        result = asyncio.run(
            io_cases(fenced(CORRECT), None, io_spec(cases=ADD_CASES * 4), Sandbox(narrow))
        )
    finally:
        narrow.close()
    assert result.score == 1.0 and result.evidence["passed"] == 12, result


def test_the_composition_root_builds_the_lanes_from_settings() -> None:
    async def built() -> tuple[int, int, str, str]:
        settings = settings_with().model_copy(
            update={"sandbox_lanes": 3, "sandbox_queue": 5, "sandbox_backend": "none"}
        )
        app = await compose_local(settings)
        try:
            graders = app.engine.graders
            assert graders is not None and graders.sandbox is not None
            backend = app.sandbox
            assert backend is not None
            return (
                len(graders.sandbox._threads),
                graders.sandbox.queue_limit,
                backend.name,
                backend.availability().reason,
            )
        finally:
            await app.aclose()

    threads, queue, name, reason = asyncio.run(built())
    assert (threads, queue, name) == (3, 5, "none")
    assert "REWARDSVC_SANDBOX_BACKEND=none" in reason
