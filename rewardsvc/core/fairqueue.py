"""Calls waiting for a lane: one FIFO per caller group (a request), served fairly (see
:class:`FairQueue`). Shared by the rooms that run bounded work in lanes of their own (the
graders' worker processes, the sandbox's runs); it holds no I/O, only threads' waiting."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Job:
    """One queued call: ``fn(*args)`` with its own time limit, its caller's deadline and
    the future that gets its answer."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    timeout_s: float
    deadline: float | None
    future: Future[Any]
    group: Hashable = None
    queued_at: float = field(default_factory=time.monotonic)


@dataclass(eq=False)
class _Group:
    order: int  # arrival, to break ties
    jobs: deque[Job] = field(default_factory=deque)
    used_s: float = 0.0  # worker time its finished calls took
    running: int = 0


class QueueClosed(Exception):
    """The queue is closed: the job was not taken."""


class FairQueue:
    """Jobs in one FIFO per group; the next job comes from the group that has used the
    least worker time so far (then the one with fewest calls running, then the oldest).
    Equal calls are served round-robin, and a request that just arrived goes before
    the ones whose slow calls already took the workers' time.

    ``closed`` makes the exception :meth:`put` raises once the queue is closed (its
    owner's own "busy" error)."""

    def __init__(self, closed: Callable[[], Exception] = QueueClosed) -> None:
        self._closed_error = closed
        self._ready = threading.Condition()
        self._groups: dict[Hashable, _Group] = {}
        self._arrivals = 0
        self._closed = False

    def put(self, job: Job, limit: int | None = None) -> bool:
        """Queue ``job`` at the end of its group's FIFO; False (not queued) when ``limit``
        jobs are already waiting."""
        with self._ready:
            if self._closed:
                raise self._closed_error()
            if limit is not None and self._waiting() >= limit:
                return False
            group = self._groups.get(job.group)
            if group is None:
                self._arrivals += 1
                group = self._groups[job.group] = _Group(self._arrivals)
            group.jobs.append(job)
            self._ready.notify()
            return True

    def _waiting(self) -> int:
        return sum(len(group.jobs) for group in self._groups.values())

    def take(self) -> Job | None:
        """The next job (waiting for one), or None once the queue is closed. The taker
        reports it with :meth:`done`."""
        with self._ready:
            while True:
                waiting = [g for g in self._groups.values() if g.jobs]
                if waiting:
                    group = min(waiting, key=lambda g: (g.used_s, g.running, g.order))
                    group.running += 1
                    return group.jobs.popleft()
                if self._closed:
                    return None
                self._ready.wait()

    def done(self, job: Job, used_s: float) -> None:
        """Account for a job :meth:`take` handed out, which took ``used_s`` of a worker."""
        with self._ready:
            group = self._groups.get(job.group)
            if group is None:
                return
            group.running -= 1
            group.used_s += used_s
            if not group.jobs and not group.running:
                del self._groups[job.group]

    def close(self) -> list[Job]:
        """Refuse new jobs, wake every lane, and return the jobs still queued."""
        with self._ready:
            self._closed = True
            left = [job for group in self._groups.values() for job in group.jobs]
            self._groups.clear()
            self._ready.notify_all()
        return left
