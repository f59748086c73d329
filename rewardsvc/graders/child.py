"""The grader child process and its protocol: a warm interpreter that runs each call in
a fork of itself, so that a call killed at its deadline costs the fork, not the
interpreter and its imports.

Children are fresh interpreters (``python -m rewardsvc.graders.child``): forking a
process that runs threads and an event loop is unsafe, and multiprocessing's ``spawn``
would re-run the parent's main script in every child. Calls and answers are pickled over
the child's stdin and stdout; the child moves anything printed to its stdout onto stderr,
so that no stray output can corrupt an answer. On Linux a child is killed by the kernel
when the thread that started it ends (the service died or closed), and a fork when its
child ends, so none outlives the service.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

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


class Child:
    """A warm interpreter that runs each call in a fork of itself: a call killed at its
    deadline costs the fork, not the interpreter and its imports."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rewardsvc.graders.child"],
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
        """End the child process and close its pipes."""
        self.process.kill()
        self.process.wait(timeout=5)
        self.calls.close()
        self.answers.close()


if __name__ == "__main__":
    _serve()
