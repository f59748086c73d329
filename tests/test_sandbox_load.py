"""The sandbox under load, and the code corpus through the real grader.

- ``/healthz`` of a served app (uvicorn, a real socket) keeps answering while 16 fork and
  memory bombs run through its sandbox lanes (a timeout of a few seconds; no timing
  assertion beyond it: the machine is shared).
- A smoke test of the corpus (``bench/code_tasks``): 3 tasks, each with its correct
  solution, its wrong one and 2 attacks, graded by ``unit_tests`` on the real bubblewrap
  sandbox: correct 1.0, wrong below 1.0, no attack above its task's wrong solution. The
  whole corpus is ``python -m bench.code_corpus``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_api_support import uvicorn_server

from bench.code_tasks import TASKS
from bench.code_tasks.attacks import Probe, family
from bench.code_tasks.service import grade, recipe, serving, settings
from bench.code_tasks.task import Task, fenced
from rewardsvc.server.app import create_app
from tests.debian import debian_binary

BOMBS = 16
HEALTH_TIMEOUT_S = 5.0
# What each bomb may use: short, so that 16 of them on 2 lanes take seconds.
LIMITS = {"wall_s": 3, "cpu_s": 2, "memory_mb": 256}


@pytest.fixture(scope="module", autouse=True)
def bubblewrap() -> None:
    debian_binary("bwrap", "bubblewrap")
    debian_binary("pytest-3", "python3-pytest")  # pytest for the sandbox's python3


def _bombs(task: Task) -> list[dict[str, Any]]:
    probe = Probe(port=9, marker="/nonexistent/escaped", pid=1)
    base = {"prompt": task.prompt, "reference": task.reference()}
    return [
        {**base, "id": f"bomb{n}", **family(("fork_bomb", "memory_bomb")[n % 2]).build(task, probe)}
        for n in range(BOMBS)
    ]


def test_healthz_answers_while_16_bombs_run_through_the_lanes(tmp_path: Path) -> None:
    app = create_app(settings(tmp_path, lanes=2))
    body = {"rubric": recipe(**LIMITS), "items": _bombs(TASKS[0])}
    graded: dict[str, Any] = {}
    with uvicorn_server(app) as url:

        def send() -> None:
            graded["reply"] = httpx.post(f"{url}/v1/rewards", json=body, timeout=300)

        sender = threading.Thread(target=send)
        sender.start()
        answers = 0
        while sender.is_alive():
            reply = httpx.get(f"{url}/healthz", timeout=HEALTH_TIMEOUT_S)
            assert reply.status_code == 200, reply.text
            answers += 1
            sender.join(0.2)
        assert httpx.get(f"{url}/healthz", timeout=HEALTH_TIMEOUT_S).status_code == 200
    reply = graded["reply"]
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert len(results) == BOMBS and answers > 1
    # A bomb is the program's own doing: it fails its tests (0), it is never null.
    assert all(r["reward"] == 0.0 for r in results), [(r["reward"], r["status"]) for r in results]


# Two attacks per task, tampering of different kinds: the workspace and the code's own.
SMOKE = {
    "reverse_words": ("conftest", "always_equal"),
    "merge_intervals": ("edit_tests", "read_tests"),
    "Account": ("sys_exit", "patch_pytest"),
}


async def test_corpus_smoke_correct_wrong_and_attacks_through_the_grader() -> None:
    tasks = {task.name: task for task in TASKS if task.name in SMOKE}
    probe = Probe(port=9, marker="/nonexistent/escaped", pid=1)
    items = []
    for name, attacks in SMOKE.items():
        task = tasks[name]
        base = {"prompt": task.prompt, "reference": task.reference()}
        items.append({**base, "id": f"{name}/correct", "completion": fenced(task.correct)})
        items.append({**base, "id": f"{name}/wrong", "completion": fenced(task.wrong)})
        for attack in attacks:
            items.append({**base, "id": f"{name}/{attack}", **family(attack).build(task, probe)})
    async with serving(lanes=2) as client:
        results = {r["id"]: r for r in await grade(client, items)}
    for name, attacks in SMOKE.items():
        correct, wrong = results[f"{name}/correct"], results[f"{name}/wrong"]
        assert correct["reward"] == 1.0, correct
        assert wrong["reward"] is not None and wrong["reward"] < 1.0, wrong
        for attack in attacks:
            got = results[f"{name}/{attack}"]
            assert got["reward"] is not None and got["reward"] <= wrong["reward"], (got, wrong)
