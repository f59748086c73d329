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

Children are fresh interpreters (``python -m rewardsvc.graders.worker``): forking a
process that runs threads and an event loop is unsafe, and multiprocessing's ``spawn``
would re-run the parent's main script in every child. Calls and answers are pickled over
the child's stdin and stdout; the child moves anything printed to its stdout onto stderr,
so that no stray output can corrupt an answer. On Linux a child is killed by the kernel
when its lane's thread ends (the service died or closed), and a fork when its child ends,
so none outlives the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, TypeVar

log = logging.getLogger(__name__)

R = TypeVar("R")

# An answer already on its way when the caller's deadline passes still gets this long.
_ANSWER_GRACE_S = 0.5
# Time a warm child may take to fork for a call, or to report a fork it killed.
_FORK_S = 10.0


class DeadlineExceeded(Exception):
    """The call ran past its time limit and its worker was killed. ``by_caller`` is True
    when the caller's deadline (the request's, or a shutdown) cut it, not the call's own."""

    def __init__(self, message: str, by_caller: bool = False):
        super().__init__(message)
        self.by_caller = by_caller


class WorkersBusy(Exception):
    """No worker took the call before the caller's deadline: the call never ran, so its
    input is not to blame (the caller reports no score rather than a failing one)."""


class WorkerFailed(Exception):
    """The function raised in the worker, or the worker died; the message says which."""


def _die_with_parent_thread() -> None:
    """Ask Linux to kill this process when the thread that started it ends."""
    if sys.platform != "linux":
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _run_forked(fn: Callable[..., Any], args: tuple[Any, ...], answers: Connection) -> Any:
    """``fn(*args)`` in a fork of this (warm) process: announce the fork's pid, so that the
    parent can kill it at the deadline, and return its answer (or a failure)."""
    inbox_fd, outbox_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the fork: compute, answer, leave without running any cleanup
        try:
            os.close(inbox_fd)
            _die_with_parent_thread()
            outbox = Connection(outbox_fd, readable=False)
            try:
                outbox.send((True, fn(*args)))
            except Exception as exc:
                outbox.send((False, f"{type(exc).__name__}: {exc}"))
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(0)
    os.close(outbox_fd)
    answers.send(("started", pid))
    inbox = Connection(inbox_fd, writable=False)
    try:
        answer: Any = inbox.recv()
    except (EOFError, OSError):
        answer = None  # killed (at its deadline) or died before it answered
    inbox.close()
    _, status = os.waitpid(pid, 0)
    if answer is None:
        return (False, f"the call's process ended without an answer (status {status})")
    return answer


def _serve() -> None:
    """The child's loop: read ``(fn, args, in_place)``; run ``fn`` here (a warm-up, whose
    imports every later fork inherits) or in a fork; answer ``("done", ok, value or error
    text)``, after ``("started", pid)`` for a fork."""
    parent = os.getppid()
    _die_with_parent_thread()
    if os.getppid() != parent:  # the parent ended before the request took effect
        return
    answers = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)
    calls = Connection(os.dup(0), writable=False)
    while True:
        try:
            fn, args, in_place = calls.recv()
        except EOFError:
            return
        if not in_place:
            ok, value = _run_forked(fn, args, answers)
        else:
            try:
                ok, value = True, fn(*args)
            except Exception as exc:
                ok, value = False, f"{type(exc).__name__}: {exc}"
        answers.send(("done", ok, value))


class _Child:
    """A warm interpreter that runs each call in a fork of itself: a call killed at its
    deadline costs the fork, not the interpreter and its imports."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rewardsvc.graders.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.calls = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self.answers = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        self.broken = False

    def _answer(self, wait_s: float) -> Any:
        if not self.answers.poll(wait_s):
            raise TimeoutError
        return self.answers.recv()

    def call(
        self, fn: Callable[..., Any], args: tuple[Any, ...], wait_s: float, in_place: bool = False
    ) -> Any:
        """``fn(*args)`` in a fork of the child (or in the child, ``in_place``). Raises
        TimeoutError when no answer came within ``wait_s`` (the fork is killed; ``broken``
        is set when the child itself must go), WorkerFailed when ``fn`` raised, EOFError
        or OSError when the child died."""
        self.calls.send((fn, args, in_place))
        started = time.monotonic()
        if not in_place:
            _, pid = self._answer(_FORK_S)
            wait_s -= time.monotonic() - started
        try:
            message = self._answer(max(wait_s, 0.0))
        except TimeoutError:
            if in_place:
                self.broken = True
                raise
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            try:
                self._answer(_FORK_S)  # the child's report of the killed fork
            except (TimeoutError, EOFError, OSError):
                self.broken = True
            raise
        _, ok, value = message
        if not ok:
            raise WorkerFailed(value)
        return value

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=5)
        self.calls.close()
        self.answers.close()


@dataclass(eq=False)
class _Job:
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
    jobs: deque[_Job] = field(default_factory=deque)
    used_s: float = 0.0  # worker time its finished calls took
    running: int = 0


class _FairQueue:
    """Jobs in one FIFO per group; the next job comes from the group that has used the
    least worker time so far (then the one with fewest calls running, then the oldest).
    Equal calls are served round-robin, and a request that just arrived goes before
    the ones whose slow calls already took the workers' time."""

    def __init__(self) -> None:
        self._ready = threading.Condition()
        self._groups: dict[Hashable, _Group] = {}
        self._arrivals = 0
        self._closed = False

    def put(self, job: _Job) -> None:
        with self._ready:
            if self._closed:
                raise WorkersBusy("the graders are shut down")
            group = self._groups.get(job.group)
            if group is None:
                self._arrivals += 1
                group = self._groups[job.group] = _Group(self._arrivals)
            group.jobs.append(job)
            self._ready.notify()

    def take(self) -> _Job | None:
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

    def done(self, job: _Job, used_s: float) -> None:
        """Account for a job :meth:`take` handed out, which took ``used_s`` of a worker."""
        with self._ready:
            group = self._groups.get(job.group)
            if group is None:
                return
            group.running -= 1
            group.used_s += used_s
            if not group.jobs and not group.running:
                del self._groups[job.group]

    def close(self) -> list[_Job]:
        """Refuse new jobs, wake every lane, and return the jobs still queued."""
        with self._ready:
            self._closed = True
            left = [job for group in self._groups.values() for job in group.jobs]
            self._groups.clear()
            self._ready.notify_all()
        return left


class _Lane(threading.Thread):
    """One thread and the child it runs calls in."""

    def __init__(self, pool: DeadlineWorkers, queue: _FairQueue, number: int):
        super().__init__(name=f"rewardsvc-grader-{number}", daemon=True)
        self.pool = pool
        self.queue = queue
        self.ready = threading.Event()
        self._child: _Child | None = None
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

    def _start_child(self, warm: bool) -> _Child | None:
        """A new child (warmed up, when the pool has a warm-up call), or None when it
        failed to warm up."""
        with self._guard:
            if self._stopped:
                raise WorkersBusy("the graders are shut down")
            self._child = child = _Child()
        if warm and self.pool.warm_call is not None:
            fn, args = self.pool.warm_call
            try:
                child.call(fn, args, self.pool.startup_s, in_place=True)
            except (TimeoutError, WorkerFailed, EOFError, OSError) as exc:
                log.warning("a grader worker failed to warm up: %r", exc)
                self._drop()
                return None
        return child

    def _run(self, job: _Job) -> Any:
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
        self._queue: _FairQueue | None = None
        self._lanes: list[_Lane] = []

    def _lanes_started(self) -> _FairQueue:
        with self._lock:
            if self._queue is None:
                self._queue = _FairQueue()
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
        self,
        fn: Callable[..., R],
        args: tuple[Any, ...],
        timeout_s: float,
        *,
        group: Hashable | None = None,
        deadline: float | None = None,
    ) -> Future[R]:
        """Queue ``fn(*args)`` (a module-level function, picklable arguments) in ``group``'s
        queue; it may run ``timeout_s`` once a lane takes it, and not past ``deadline``
        (``time.monotonic()`` seconds). The future raises :class:`DeadlineExceeded`,
        :class:`WorkersBusy` or :class:`WorkerFailed`. Without a group the call is a
        group of its own."""
        future: Future[R] = Future()
        job = _Job(fn, args, timeout_s, deadline, future)
        job.group = group if group is not None else job
        self._lanes_started().put(job)
        return future

    async def arun(
        self,
        fn: Callable[..., R],
        args: tuple[Any, ...],
        timeout_s: float,
        *,
        group: Hashable | None = None,
        deadline: float | None = None,
    ) -> R:
        """:meth:`submit` and wait for the answer (the waiting costs no thread), not past
        ``deadline`` (then :class:`WorkersBusy`). A call still queued when its caller is
        cancelled or its deadline passes never runs."""
        future = self.submit(fn, args, timeout_s, group=group, deadline=deadline)
        waiting = asyncio.wrap_future(future)
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


if __name__ == "__main__":
    _serve()
