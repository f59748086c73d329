"""The wall clock on a busy host: a run is given back the time it waited for a CPU (up to
WALL_CAP times its wall clock); a sleeping run and a tree using more than one CPU are not."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from rewardsvc.sandbox.bubblewrap import BubblewrapBackend
from rewardsvc.sandbox.run import Limits, RunRequest
from rewardsvc.sandbox.waiting import WALL_CAP, Scheduled, owed_s, scheduled, starved
from tests.debian import debian_binary

BUSY_0_25_S = (
    "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.25:\n    pass\n"
    "print('done')\n"
)


def test_the_wait_is_owed_only_to_a_tree_within_one_cpu() -> None:
    # starved: 0.2 s on a CPU in 1 s, 0.8 s waiting for one
    assert owed_s(1.0, 1.0, Scheduled(on_cpu_s=0.2, waited_s=0.8)) == pytest.approx(0.8)
    # sleeping: no wait, nothing owed
    assert owed_s(1.0, 1.0, Scheduled(on_cpu_s=0.0, waited_s=0.0)) == 0.0
    # its own busy processes: two CPUs' worth used, their wait is its doing
    assert owed_s(1.0, 1.0, Scheduled(on_cpu_s=2.0, waited_s=0.9)) == 0.0
    # capped
    assert owed_s(1.0, 9.0, Scheduled(on_cpu_s=1.0, waited_s=8.0)) == WALL_CAP - 1.0


def test_the_walk_reads_a_real_tree() -> None:
    tree = subprocess.Popen(
        ["sh", "-c", "sleep 2 & busy=0; while [ $busy -lt 20000 ]; do busy=$((busy+1)); done; wait"]
    )
    try:
        time.sleep(0.3)
        seen = scheduled(tree.pid)
        assert seen.on_cpu_s > 0.0 and seen.waited_s >= 0.0
        assert scheduled(2**22 + 7) == Scheduled()  # no such process: nothing
    finally:
        tree.kill()
        tree.wait()


@pytest.fixture
def busy_cpu() -> Iterator[None]:
    """This thread (and what it starts) on CPU 0, with five busy processes there, each in a
    session of its own (the scheduler shares a CPU between sessions)."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(5)
    ]
    try:
        time.sleep(0.2)
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        os.sched_setaffinity(0, before)


def test_a_starved_program_is_not_killed_before_it_waited_its_share(busy_cpu: None) -> None:
    sandbox = BubblewrapBackend(debian_binary("bwrap", "bubblewrap"))
    wall = 0.9
    run = sandbox.run(
        RunRequest(("/usr/bin/python3", "-c", BUSY_0_25_S), limits=Limits(wall_s=wall, cpu_s=5))
    )
    # A sixth of a CPU at most: 0.25 s of CPU needs more than 1.5 s. Killed at 0.9 s, its
    # case would score 0 for the host's load; it ends, or is killed only at the cap.
    assert run.failure is None or run.wall_s >= 0.95 * WALL_CAP * wall, (run.failure, run.wall_s)
    if run.failure is None:
        assert run.stdout == b"done\n" and run.wall_s > wall


def test_a_sleeping_program_is_killed_at_its_wall_clock(busy_cpu: None) -> None:
    sandbox = BubblewrapBackend(debian_binary("bwrap", "bubblewrap"))
    wall = 0.5
    run = sandbox.run(
        RunRequest(
            ("/usr/bin/python3", "-c", "import time\ntime.sleep(30)\n"),
            limits=Limits(wall_s=wall, cpu_s=5),
        )
    )
    assert run.failure == "sandbox_timeout"
    assert run.wall_s < 0.6 * WALL_CAP * wall, run.wall_s


BUSY_2_S = BUSY_0_25_S.replace("< 0.25", "< 2.0")


def test_a_run_is_starved_when_it_waited_longer_than_it_ran_and_was_runnable() -> None:
    # one busy task, runnable all along
    assert starved(Scheduled(on_cpu_s=0.3, waited_s=1.2, busiest_s=0.3), 1.5)
    # sleeping after a slow start: it waited to start, then slept until killed
    assert not starved(Scheduled(on_cpu_s=0.05, waited_s=0.25, busiest_s=0.05), 0.8)
    # its own work: it ran more than it waited
    assert not starved(Scheduled(on_cpu_s=1.0, waited_s=0.4, busiest_s=1.0), 1.5)
    # many busy tasks of its own (a fork bomb): they waited for each other
    assert not starved(Scheduled(on_cpu_s=0.3, waited_s=1.2, busiest_s=0.02), 1.5)


def test_a_starved_program_killed_at_the_cap_is_busy_not_timed_out(busy_cpu: None) -> None:
    sandbox = BubblewrapBackend(debian_binary("bwrap", "bubblewrap"))
    wall = 0.5
    run = sandbox.run(
        RunRequest(("/usr/bin/python3", "-c", BUSY_2_S), limits=Limits(wall_s=wall, cpu_s=10))
    )
    # A sixth of a CPU at most: 2 s of CPU needs 12 s, past the cap (1.5 s). It waited
    # for a CPU longer than it ran: the host's doing, so no score (busy), never a 0.
    assert run.failure == "sandbox_busy", (run.failure, run.detail, run.wall_s)
    assert run.exit_code is None and "too busy" in run.detail
