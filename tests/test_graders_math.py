"""Math equivalence in worker processes, and the deadlines that bound the workers."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator

import pytest

from rewardsvc.core.graders_spec import JsonSpec, MathSpec
from rewardsvc.core.rollout import Rollout
from rewardsvc.graders.child import DeadlineExceeded, WorkerFailed, WorkersBusy
from rewardsvc.graders.registry import Graders
from rewardsvc.graders.result import GraderResult
from rewardsvc.graders.worker import DeadlineWorkers

SPEC = MathSpec(type="math", timeout_s=3)


class Checker:
    """The math grader of a set of graders, called as ``check(completion, reference)``."""

    def __init__(self, graders: Graders):
        self.graders = graders
        self.workers = graders.workers

    def check(self, completion: str, reference: str, spec: MathSpec) -> GraderResult:
        return asyncio.run(self.graders.grade(spec, Rollout("", completion, reference)))


@pytest.fixture(scope="module")
def checker() -> Iterator[Checker]:
    graders = Graders(workers=1)
    graders.warm()
    yield Checker(graders)
    graders.close()


@pytest.mark.parametrize(
    ("completion", "reference"),
    [
        (r"so \boxed{0.5}", "1/2"),
        (r"\boxed{\frac{1}{2}}", "0.5"),
        (r"Hence \boxed{x = \tfrac12}", r"\frac{1}{2}"),
        (r"\boxed{\frac{\sqrt{2}}{2}}", r"\frac{1}{\sqrt{2}}"),
        (r"\boxed{2\pi}", r"\pi \cdot 2"),
        ("Final answer: 1,000", "1000"),
        (r"\boxed{(x+1)^2}", "x^2 + 2x + 1"),
    ],
)
def test_equivalent_forms_match(checker: Checker, completion: str, reference: str) -> None:
    result = checker.check(completion, reference, SPEC)
    assert result.score == 1.0, result.evidence


@pytest.mark.parametrize(
    ("completion", "reference"),
    [
        (r"\boxed{0.51}", "1/2"),
        (r"\boxed{\frac{1}{3}}", "0.5"),
        (r"\boxed{\sqrt{3}/2}", r"\frac{1}{\sqrt{2}}"),
        (r"\boxed{(x-1)^2}", "x^2 + 2x + 1"),
        ("I think it is 5 but no box", "5"),
    ],
)
def test_near_misses_do_not_match(checker: Checker, completion: str, reference: str) -> None:
    assert checker.check(completion, reference, SPEC).score == 0.0


def test_only_the_last_boxed_answer_is_compared(checker: Checker) -> None:
    """math-verify on the whole text would accept any expression of the reasoning;
    the grader hands it only the last boxed answer."""
    assert checker.check(r"Maybe \boxed{4}? No: \boxed{5}", "4", SPEC).score == 0.0
    assert checker.check(r"Maybe \boxed{5}? No: \boxed{4}", "4", SPEC).score == 1.0


def test_hostile_expression_is_stopped_at_the_deadline(checker: Checker) -> None:
    """Past its deadline the answer has no score and says so: a timeout is not a wrong
    answer (this was a score of 0.0 with status ok)."""
    spec = MathSpec(type="math", timeout_s=1)
    killed = checker.workers.killed
    result = checker.check(r"\boxed{9^{9^{9^{9^{9}}}}}", "1", spec)
    assert (result.score, result.kind) == (None, "grader_timeout"), result
    assert result.verdict().error_kind == "grader_timeout"
    assert checker.workers.killed == killed + 1
    assert checker.check(r"\boxed{2}", "2", SPEC).score == 1.0


def test_works_from_threads_other_than_the_main_one(checker: Checker) -> None:
    scores: list[float | None] = []
    thread = threading.Thread(
        target=lambda: scores.append(checker.check(r"\boxed{3/4}", "0.75", SPEC).score)
    )
    thread.start()
    thread.join()
    assert scores == [1.0]


def test_worker_deadline_kills_only_the_overrunning_call() -> None:
    workers = DeadlineWorkers(processes=2)
    try:
        workers.warm(os.getpid)
        pids = set()
        with pytest.raises(DeadlineExceeded):
            asyncio.run(workers.arun(time.sleep, (30,), 0.5))
        assert workers.killed == 1
        for _ in range(4):
            pids.add(asyncio.run(workers.arun(os.getpid, (), 30)))
        assert os.getpid() not in pids
        with pytest.raises(WorkerFailed, match="ZeroDivisionError"):
            asyncio.run(workers.arun(divmod, (1, 0), 30))
        assert asyncio.run(workers.arun(divmod, (7, 2), 30)) == (3, 1)
        assert (
            asyncio.run(workers.arun(print, ("stray output must not corrupt the answers",), 30))
            is None
        )
        assert asyncio.run(workers.arun(divmod, (8, 3), 30)) == (2, 2)
        workers.close()
        assert asyncio.run(workers.arun(divmod, (9, 2), 30)) == (4, 1)
    finally:
        workers.close()


def test_queued_calls_wait_their_turn_uncharged_until_the_callers_deadline() -> None:
    """A call's time limit starts when a worker takes it: behind a 2 s call, a call with a
    0.5 s limit still runs. A caller's deadline bounds the wait: then it never ran."""
    workers = DeadlineWorkers(processes=1)
    try:
        workers.warm(os.getpid)
        busy = workers.submit(time.sleep, (2,), 30)
        queued = workers.submit(divmod, (7, 2), 0.5)
        with pytest.raises(WorkersBusy, match="no grader worker was free"):
            asyncio.run(workers.arun(os.getpid, (), 30, deadline=time.monotonic() + 0.2))
        assert queued.result(timeout=30) == (3, 1)
        assert busy.result(timeout=30) is None
        assert workers.killed == 0
    finally:
        workers.close()


def test_backtracking_schema_pattern_is_stopped_at_the_deadline() -> None:
    """jsonschema runs `pattern` with Python's re; (a+)+$ on 'aaa…b' would not return."""
    spec = JsonSpec(type="json", schema={"type": "string", "pattern": "^(a+)+$"})
    graders = Graders(workers=1, timeout_s=1)
    try:
        # A cold import of jsonschema in the worker can outlast the deadline on a busy machine.
        graders.warm()
        assert asyncio.run(graders.grade(spec, Rollout("", '"aaaa"'))).score == 1.0
        hostile = asyncio.run(graders.grade(spec, Rollout("", '"' + "a" * 40 + 'b"')))
        assert (hostile.score, hostile.kind) == (None, "grader_timeout"), hostile
    finally:
        graders.close()


@pytest.mark.parametrize(
    "completion", [r"\boxed{\neq 51}", "The answer is not 51.", r"Final answer: x \ne 51"]
)
def test_negated_answer_is_wrong(checker: Checker, completion: str) -> None:
    """Found by rewardsvc fuzz-graders: math-verify read these as 51."""
    result = checker.check(completion, "51", SPEC)
    assert result.score == 0.0 and result.evidence["refused"] == "the answer is negated"


@pytest.mark.parametrize(
    "completion",
    [
        "We start from the setup.\nFinal answer: \\frac{2000000}{2",
        "Final answer: \\frac{2000000}2}",
        "Final answer: \\sqrt{1000000000000",
    ],
)
def test_unbalanced_answer_is_wrong(checker: Checker, completion: str) -> None:
    """Found by ``rewardsvc fuzz-graders --seed 11 --rounds 2`` (a truncated completion):
    math-verify closed the open brace itself and read ``\\frac{2000000}{2`` as 1000000."""
    result = checker.check(completion, "1000000", SPEC)
    assert (
        result.score == 0.0 and result.evidence["refused"] == "the answer's braces do not balance"
    )


def test_balanced_and_escaped_braces_still_match(checker: Checker) -> None:
    """The balance check skips escaped braces and leaves a whole answer alone."""
    assert checker.check("Final answer: \\frac{2000000}{2}", "1000000", SPEC).score == 1.0
    assert checker.check("Final answer: \\{1, 2\\}", "\\{1, 2\\}", SPEC).score == 1.0
