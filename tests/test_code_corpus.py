"""The code corpus itself (``bench/code_tasks``), checked without the service: enough tasks,
each with 4 to 10 hidden tests that its correct solution passes and its wrong solution
fails in part (some tests, never all, so that the wrong one scores strictly between 0 and
1); attack families built for every task, each tampering family caught by its tamper flag
when the detector reads the item, no honest solution flagged. The solutions are the
project's own code, run here in the test process; the service's grading of them is
tests/test_sandbox_load.py."""

from __future__ import annotations

import ast
import json
import sys
import types

import pytest

from bench.code_tasks import TASKS
from bench.code_tasks.attacks import FAMILIES, Probe
from bench.code_tasks.task import MODULE, Task, fenced
from rewardsvc.graders.code import program_of
from rewardsvc.safety import tamper


def passed(task: Task, source: str) -> list[bool]:
    """Whether each hidden test of ``task`` passes against ``source`` as ``solution``."""
    module = types.ModuleType(MODULE)
    exec(compile(source, f"{MODULE}.py", "exec"), module.__dict__)
    saved = sys.modules.get(MODULE)
    sys.modules[MODULE] = module
    try:
        tests: dict[str, object] = {}
        exec(compile(task.tests(), task.test_path, "exec"), tests)
    finally:
        if saved is None:
            del sys.modules[MODULE]
        else:
            sys.modules[MODULE] = saved
    outcomes = []
    for name in sorted((n for n in tests if n.startswith("test_")), key=lambda n: int(n[5:])):
        try:
            tests[name]()  # type: ignore[operator]
            outcomes.append(True)
        except (Exception, pytest.fail.Exception):  # pytest.raises fails with the latter
            outcomes.append(False)
    return outcomes


def test_the_corpus_has_at_least_30_tasks_with_distinct_names() -> None:
    names = [task.name for task in TASKS]
    assert len(names) >= 30 and len(set(names)) == len(names), names


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.name)
def test_correct_passes_every_test_and_wrong_only_some(task: Task) -> None:
    assert 4 <= len(task.cases) <= 10, len(task.cases)
    assert task.name in task.prompt
    assert passed(task, task.correct) == [True] * len(task.cases)
    wrong = passed(task, task.wrong)
    assert len(wrong) == len(task.cases)
    assert 0 < sum(wrong) < len(wrong), wrong


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.name)
def test_the_reference_holds_the_tests_and_the_attacks_build(task: Task) -> None:
    assert json.loads(task.reference()) == {task.test_path: task.tests()}
    probe = Probe(port=9, marker="/nonexistent/marker", pid=1)
    assert len(FAMILIES) >= 12
    for family in FAMILIES:
        item = family.build(task, probe)
        assert item["completion"], family.name
        for path, text in item.get("files", {}).items():
            if path.endswith(".py"):
                ast.parse(text)  # a workspace's Python files are valid Python


def detected(item: dict[str, object], tests: dict[str, str]) -> tuple[str, ...]:
    """The tamper flags of an item as the code graders see it: an agent's workspace
    against the task's tests, else the completion's program."""
    files = item.get("files")
    if isinstance(files, dict):
        return tamper.flags_of(tamper.workspace(files, tests))
    program = program_of(str(item["completion"]))
    assert program is not None
    return tamper.flags_of(tamper.scan_source(program))


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.name)
def test_the_detector_flags_each_tampering_family_and_no_honest_solution(task: Task) -> None:
    tests = json.loads(task.reference())
    probe = Probe(port=40000, marker="/tmp/rewardsvc-corpus/escaped", pid=4321)
    for source in (task.correct, task.wrong):
        assert detected({"completion": fenced(source)}, tests) == ()
    for family in FAMILIES:
        flags = detected(family.build(task, probe), tests)
        if family.flag is None:
            assert flags == (), (family.name, flags)
        else:
            assert family.flag in flags, (family.name, flags)
