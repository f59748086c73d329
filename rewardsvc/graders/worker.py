"""Worker processes that run a function under a hard deadline.

Parsing a hostile expression with sympy, or matching a JSON Schema's backtracking
``pattern``, can take unbounded time; a signal-based timeout only works on a process's
main thread, and the service calls graders from worker threads of its event loop. So
such work runs in a child process: the caller waits at most ``timeout_s`` for the answer,
and a child that misses its deadline is killed and replaced. Each child serves one call
at a time, so killing it loses nothing but the call that overran.

Children are fresh interpreters (``python -m rewardsvc.graders.worker``) started only
when first needed: forking a process that runs threads and an event loop is unsafe, and
multiprocessing's ``spawn`` would re-run the parent's main script in every child. Calls
and answers are pickled over the child's stdin and stdout; the child moves anything
printed to its stdout onto stderr, so that no stray output can corrupt an answer.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any


class DeadlineExceeded(Exception):
    """The call did not finish within its deadline (its worker was killed)."""


class WorkersBusy(DeadlineExceeded):
    """No worker became free before the deadline: the call never ran, so its input is not
    to blame (the caller reports no score rather than a failing one)."""


class WorkerFailed(Exception):
    """The function raised in the worker, or the worker died; the message says which."""


def _serve() -> None:
    """The child's loop: read ``(fn, args)``, answer ``(ok, value or error text)``."""
    answers = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)
    calls = Connection(os.dup(0), writable=False)
    while True:
        try:
            fn, args = calls.recv()
        except EOFError:
            return
        try:
            answers.send((True, fn(*args)))
        except Exception as exc:
            answers.send((False, f"{type(exc).__name__}: {exc}"))


class _Child:
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

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=5)
        self.calls.close()
        self.answers.close()


class DeadlineWorkers:
    """A small set of child processes; :meth:`run` calls a function in one of them.

    ``startup_s`` is extra time allowed to a call that has to start its child (a fresh
    interpreter importing sympy takes a second or two); :meth:`warm` starts them ahead.
    """

    def __init__(self, processes: int = 1, startup_s: float = 60.0) -> None:
        self._idle: queue.LifoQueue[_Child | None] = queue.LifoQueue()
        for _ in range(processes):
            self._idle.put(None)
        self._startup_s = startup_s
        self._lock = threading.Lock()
        self._children: set[_Child] = set()
        self.killed = 0

    def warm(self, fn: Callable[..., Any], *args: Any) -> None:
        """Start every child now and run ``fn(*args)`` in each (e.g. to import libraries)."""
        held: list[_Child | None] = []
        try:
            while True:
                held.append(self._idle.get_nowait())
        except queue.Empty:
            pass
        outcomes = [self._call(child, fn, args, self._startup_s) for child in held]
        for child, _, _ in outcomes:
            self._idle.put(child)

    def run(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout_s: float) -> Any:
        """``fn(*args)`` in a child; waits at most ``timeout_s`` (plus start-up, once).

        ``fn`` must be a module-level function and ``args`` picklable. Raises
        :class:`DeadlineExceeded` (also when every child stays busy past the deadline)
        or :class:`WorkerFailed`.
        """
        deadline = time.monotonic() + timeout_s
        try:
            child = self._idle.get(timeout=timeout_s)
        except queue.Empty:
            raise WorkersBusy(f"no worker free within {timeout_s:g} s") from None
        remaining = max(deadline - time.monotonic(), 0.0)
        if child is None:
            remaining += self._startup_s
        child, ok, value = self._call(child, fn, args, remaining)
        self._idle.put(child)
        if ok:
            return value
        raise value

    def _call(
        self, child: _Child | None, fn: Callable[..., Any], args: tuple[Any, ...], wait_s: float
    ) -> tuple[_Child | None, bool, Any]:
        """Run one call; returns the child to put back (None when it was killed), whether
        the call succeeded, and its value or the exception to raise."""
        try:
            if child is None:
                child = _Child()
                with self._lock:
                    self._children.add(child)
            child.calls.send((fn, args))
            if child.answers.poll(wait_s):
                ok, value = child.answers.recv()
                return child, ok, value if ok else WorkerFailed(value)
        except (EOFError, OSError) as exc:
            if child is not None:
                self._discard(child)
            return None, False, WorkerFailed(f"worker died: {exc!r}")
        self._discard(child)
        self.killed += 1
        return None, False, DeadlineExceeded(f"did not finish within {wait_s:.3g} s")

    def _discard(self, child: _Child) -> None:
        child.kill()
        with self._lock:
            self._children.discard(child)

    def close(self) -> None:
        """Stop every child; a later call starts fresh ones."""
        with self._lock:
            children, self._children = list(self._children), set()
        for child in children:
            child.kill()
        slots = 0
        try:
            while True:
                self._idle.get_nowait()
                slots += 1
        except queue.Empty:
            pass
        for _ in range(slots):
            self._idle.put(None)


if __name__ == "__main__":
    _serve()
