"""How long a sandbox's processes waited for a CPU: the wall clock's allowance on a busy host.

A program's wall clock is the task's limit, counted against the program (a program that
never ends scores 0 for that case). On a host busier than the limits assumed, an honest
program can reach it while it waits in the kernel's run queue for a CPU it never got.
That wait is the host's, not the program's: :func:`owed_s` gives it back, read from the
kernel's per-task scheduler statistics (``/proc/<pid>/task/<tid>/schedstat``: time on a
CPU, time runnable but waiting) over the tree under the sandbox's process 1.

Only a tree that used at most one CPU's worth of time is owed its wait: a program that
starts busy processes of its own makes them wait for each other, and that wait is its
doing. A sleeping program waits for no CPU, so it is killed at its wall clock as before.
The allowance is capped (:data:`WALL_CAP` times the wall clock), so a run holds its lane
for a bounded time whatever the host does; admission counts each run at that cap. A run
killed at its wall clock that waited for a CPU longer than it ran on one, runnable nearly
all its time (:func:`starved`), was stopped by the host's load, not by its own doing: it is
``sandbox_busy`` (no score), never a program that timed out (0).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

WALL_CAP = 3.0
"""A run is killed at this many times its wall clock whatever it waited."""
RUNNABLE_SHARE = 0.8
"""The share of its time a starved run was runnable at least (:func:`starved`)."""
SOLO_SHARE = 0.8
"""The share of a starved tree's CPU time its busiest task took at least: a tree of many
busy tasks (a fork bomb) waits for itself (:func:`starved`)."""
_MAX_TASKS = 4096  # the walk is bounded (the sandbox's process limit bounds it too)
_NS = 1e-9


@dataclass(frozen=True)
class Scheduled:
    """A process tree's scheduler times, in seconds: on a CPU (summed over its tasks), the
    longest any one task waited runnable for a CPU, and the most any one task was on a CPU."""

    on_cpu_s: float = 0.0
    waited_s: float = 0.0
    busiest_s: float = 0.0


def owed_s(wall_s: float, elapsed_s: float, seen: Scheduled) -> float:
    """The wall time owed to a run ``elapsed_s`` into its ``wall_s``: its longest wait for
    a CPU, when its tree used at most one CPU's worth, up to ``(WALL_CAP - 1) * wall_s``."""
    if seen.on_cpu_s > elapsed_s:
        return 0.0
    return min(seen.waited_s, (WALL_CAP - 1.0) * wall_s)


def starved(seen: Scheduled, elapsed_s: float) -> bool:
    """Whether a tree ``elapsed_s`` into its run waited for a CPU longer than it ran on one,
    having been runnable (running or waiting) for at least :data:`RUNNABLE_SHARE` of that
    time, as one busy task using at most one CPU's worth: a run killed so was the host's
    doing. A sleeping program that waited for a CPU only to start was not runnable most of
    its time, and a tree of many busy tasks (a fork bomb) waited for itself: their kills are
    their own (a 0, never a null the trainer would mask)."""
    runnable = seen.waited_s + seen.on_cpu_s
    solo = seen.busiest_s >= SOLO_SHARE * seen.on_cpu_s and seen.on_cpu_s <= elapsed_s
    return solo and seen.waited_s > seen.on_cpu_s and runnable >= RUNNABLE_SHARE * elapsed_s


def scheduled(root_pid: int, proc: Path = Path("/proc")) -> Scheduled:
    """The scheduler times of ``root_pid`` and every process under it (tasks that are gone
    by the time they are read count as nothing)."""
    on_cpu = waited = busiest = 0.0
    pids, seen = [root_pid], 0
    while pids and seen < _MAX_TASKS:
        pid = pids.pop()
        with contextlib.suppress(OSError):
            for task in (proc / str(pid) / "task").iterdir():
                seen += 1
                with contextlib.suppress(OSError, ValueError, IndexError):
                    fields = (task / "schedstat").read_text().split()
                    ran = int(fields[0]) * _NS
                    on_cpu += ran
                    busiest = max(busiest, ran)
                    waited = max(waited, int(fields[1]) * _NS)
                with contextlib.suppress(OSError, ValueError):
                    pids.extend(int(p) for p in (task / "children").read_text().split())
    return Scheduled(on_cpu, waited, busiest)
