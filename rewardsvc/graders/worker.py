"""Worker processes that run grader calls under a hard deadline, queued fairly.

Parsing a hostile expression with sympy, matching a JSON Schema's backtracking
``pattern`` or expanding an exponential ``anyOf`` schema can take unbounded time; a
signal-based timeout only works on a process's main thread (and not inside C code), and
a thread cannot be stopped at all. So grader calls run in child processes: each child is
a warm interpreter (its libraries imported once) that runs every call in a fork of itself,
and a fork that misses its call's deadline is killed. Killing it loses nothing but the
call that overran, and costs no new interpreter: the next call forks the same warm child.

:class:`DeadlineWorkers` owns ``processes`` lanes; a lane is a thread of its own (never
the event loop's default executor) that owns at most one child. Calls wait in one queue
per caller group (a request), and the lanes serve first the group that has used the least
worker time, so one request's twenty hostile items cannot starve another request's one.
A call's own time limit starts when a lane takes it, not when it is queued; the caller's
deadline (the request's) bounds the wait and the run together. A lane that lost its
child (it died, or a shutdown cut it) starts and warms the next one before it takes
another call.

The child process and its protocol live in :mod:`~rewardsvc.graders.child`, the queue in
:mod:`~rewardsvc.core.fairqueue` (shared with the sandbox's lanes).
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any, TypedDict, TypeVar, Unpack

from rewardsvc.core.fairqueue import FairQueue, Job
from rewardsvc.graders.child import Child, DeadlineExceeded, WorkerFailed, WorkersBusy

log = logging.getLogger(__name__)

R = TypeVar("R")
Args = tuple[Any, ...]


class Placement(TypedDict, total=False):
    """Where a call waits and how long it may: ``group`` is the fair queue it joins (its
    own when absent), ``deadline`` the ``time.monotonic()`` instant past which it never runs."""

    group: Hashable | None
    deadline: float | None


# An answer already on its way when the caller's deadline passes still gets this long.
_ANSWER_GRACE_S = 0.5


class _Lane(threading.Thread):
    """One thread and the child it runs calls in."""

    def __init__(self, pool: DeadlineWorkers, queue: FairQueue, number: int):
        super().__init__(name=f"rewardsvc-grader-{number}", daemon=True)
        self.pool = pool
        self.queue = queue
        self.ready = threading.Event()
        self._child: Child | None = None
        self._guard = threading.Lock()  # the child slot, between this thread and close()
        self._stopped = False
        self._cut = False  # the running call was cut by expire(), not by its own limit

    def run(self) -> None:
        try:
            while True:
                if self._child is None and self.pool.warm_call is not None:
                    try:
                        self._start_child(warm=True)
                    except WorkersBusy:
                        return  # stopped
                    except OSError as exc:
                        log.warning("could not start a grader worker: %r", exc)
                self.ready.set()
                job = self.queue.take()
                if job is None:
                    return
                if not job.future.set_running_or_notify_cancel():
                    self.queue.done(job, 0.0)  # the caller gave up while it was queued
                    continue
                started = time.monotonic()
                try:
                    job.future.set_result(self._run(job))
                except BaseException as exc:
                    job.future.set_exception(exc)
                finally:
                    self.queue.done(job, time.monotonic() - started)
        finally:
            self.ready.set()
            self._drop()

    def _start_child(self, warm: bool) -> Child | None:
        """A new child (warmed up, when the pool has a warm-up call), or None when it
        failed to warm up."""
        with self._guard:
            if self._stopped:
                raise WorkersBusy("the graders are shut down")
            self._child = child = Child()
        if warm and self.pool.warm_call is not None:
            fn, args = self.pool.warm_call
            try:
                child.call(fn, args, self.pool.startup_s, in_place=True)
            except (TimeoutError, WorkerFailed, EOFError, OSError) as exc:
                log.warning("a grader worker failed to warm up: %r", exc)
                self._drop()
                return None
        return child

    def _run(self, job: Job) -> Any:
        if job.queued_at <= self.pool.expired_at:
            raise DeadlineExceeded("the service is shutting down", by_caller=True)
        wait_s, by_caller = job.timeout_s, False
        child = self._child
        if child is None or child.process.poll() is not None:  # none yet, or cut while idle
            self._drop()
            child = self._start_child(warm=True)  # warming is not the call's time
            if child is None:
                raise WorkerFailed("a grader worker failed to start")
        if self.pool.warm_call is None:
            wait_s += self.pool.startup_s  # a cold child's forks import what they use
        if job.deadline is not None:
            left = job.deadline - time.monotonic()
            if left <= 0:
                raise WorkersBusy("no grader worker was free before the request's deadline")
            if left < wait_s:
                wait_s, by_caller = left, True
        self._cut = False
        try:
            return child.call(job.fn, job.args, wait_s)
        except TimeoutError:
            if child.broken:
                self._drop()
            self.pool.count_kill()
            raise DeadlineExceeded(f"did not finish within {wait_s:.3g} s", by_caller) from None
        except (EOFError, OSError) as exc:
            self._drop()
            if self._cut or job.queued_at <= self.pool.expired_at:
                raise DeadlineExceeded("cut at shutdown", by_caller=True) from None
            raise WorkerFailed(f"worker died: {exc!r}") from None

    def _drop(self) -> None:
        with self._guard:
            child, self._child = self._child, None
        if child is not None:
            child.kill()

    def cut(self) -> None:
        """Kill the child (the call it runs ends as cut by its caller's deadline)."""
        with self._guard:
            child = self._child
            self._cut = True
        if child is not None:
            child.process.kill()

    def stop(self) -> None:
        """Kill the child and start no other (the thread ends once its queue is closed)."""
        with self._guard:
            self._stopped = True
        self.cut()


class DeadlineWorkers:
    """``processes`` child processes behind a fair queue; :meth:`submit` and :meth:`arun`
    call a function in one of them (see the module doc).

    ``warm_up`` runs in every child when it starts (e.g. to import libraries: every call
    forks from the warm child); ``startup_s`` is the time a fresh child may take to start
    and run it, or extra time allowed to a call that has to start its child.
    """

    def __init__(
        self,
        processes: int = 1,
        startup_s: float = 60.0,
        warm_up: Callable[[], Any] | None = None,
    ) -> None:
        if processes < 1:
            raise ValueError("processes must be at least 1")
        self.processes = processes
        self.startup_s = startup_s
        self.warm_call: tuple[Callable[..., Any], tuple[Any, ...]] | None = (
            None if warm_up is None else (warm_up, ())
        )
        self.expired_at = -math.inf
        self.killed = 0
        self._lock = threading.Lock()
        self._queue: FairQueue | None = None
        self._lanes: list[_Lane] = []

    def _lanes_started(self) -> FairQueue:
        with self._lock:
            if self._queue is None:
                self._queue = FairQueue(lambda: WorkersBusy("the graders are shut down"))
                self._lanes = [_Lane(self, self._queue, n) for n in range(self.processes)]
                for lane in self._lanes:
                    lane.start()
            return self._queue

    def count_kill(self) -> None:
        """Count one child killed for overrunning its call (thread-safe)."""
        with self._lock:
            self.killed += 1

    def warm(self, fn: Callable[..., Any], *args: Any) -> None:
        """Start every child now and run ``fn(*args)`` in each (e.g. to import libraries);
        every child started later, to replace a killed one, runs it too."""
        self.warm_call = (fn, args)
        self._lanes_started()
        with self._lock:
            lanes = list(self._lanes)
        for lane in lanes:
            lane.ready.wait(self.startup_s)

    def submit(
        self, fn: Callable[..., R], args: Args, timeout_s: float, **where: Unpack[Placement]
    ) -> Future[R]:
        """Queue ``fn(*args)`` (a module-level function, picklable arguments) as ``where``
        places it; it may run ``timeout_s`` once a lane takes it. The future raises
        :class:`DeadlineExceeded`, :class:`WorkersBusy` or :class:`WorkerFailed`."""
        future: Future[R] = Future()
        job = Job(fn, args, timeout_s, where.get("deadline"), future)
        group = where.get("group")
        job.group = group if group is not None else job
        self._lanes_started().put(job)
        return future

    async def arun(
        self, fn: Callable[..., R], args: Args, timeout_s: float, **where: Unpack[Placement]
    ) -> R:
        """:meth:`submit` and wait for the answer (the waiting costs no thread), not past
        the deadline (then :class:`WorkersBusy`). A call still queued when its caller is
        cancelled or its deadline passes never runs."""
        waiting = asyncio.wrap_future(self.submit(fn, args, timeout_s, **where))
        deadline = where.get("deadline")
        if deadline is None:
            return await waiting
        wait = max(deadline - time.monotonic(), 0) + _ANSWER_GRACE_S
        try:
            return await asyncio.wait_for(waiting, wait)
        except TimeoutError:
            raise WorkersBusy("no grader worker was free before the deadline") from None

    def expire(self) -> None:
        """End every call queued or running now, as if its caller's deadline had passed
        (on shutdown): the running ones are killed, the queued ones refused; later calls
        run as usual."""
        self.expired_at = time.monotonic()
        with self._lock:
            lanes = list(self._lanes)
        for lane in lanes:
            lane.cut()

    def close(self) -> None:
        """Stop every child and lane; a later call starts fresh ones."""
        with self._lock:
            queue, lanes = self._queue, self._lanes
            self._queue, self._lanes = None, []
        if queue is None:
            return
        for job in queue.close():
            if job.future.set_running_or_notify_cancel():
                job.future.set_exception(WorkersBusy("the graders are shut down"))
        for lane in lanes:
            lane.stop()
        for lane in lanes:
            lane.join(timeout=10)
