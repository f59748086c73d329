"""Bounded lanes: at most ``lanes`` sandboxed runs at once, the rest queued fairly between
requests, and a bounded queue.

Each lane is a thread of its own that takes the next run from a
:class:`~rewardsvc.core.fairqueue.FairQueue` (one FIFO per caller group, a request: the
group that has used the least sandbox time goes first, so one request's twenty bombs do
not starve another request's one) and runs it on the backend. A run that finds the queue
full, or whose caller's deadline passed before a lane took it, or that was queued at a
shutdown, never runs: ``sandbox_busy``. A backend that is not available answers
``sandbox_unavailable`` when a lane hands it the run (checking takes a process, so it is
never done on the caller's thread, which may be the event loop's).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Hashable
from concurrent.futures import Future

from rewardsvc.core.fairqueue import FairQueue, Job, QueueClosed
from rewardsvc.sandbox.backend import Backend
from rewardsvc.sandbox.run import RunRequest, RunResult


def _closed() -> RunResult:
    return RunResult.failed("sandbox_busy", "the sandbox lanes are shut down")


class SandboxLanes:
    """``lanes`` threads running requests on ``backend``, with at most ``queue_limit``
    requests waiting (see the module doc)."""

    def __init__(self, backend: Backend, lanes: int = 2, queue_limit: int = 64) -> None:
        if lanes < 1 or queue_limit < 0:
            raise ValueError("lanes must be at least 1 and queue_limit at least 0")
        self.backend = backend
        self.queue_limit = queue_limit
        self._queue = FairQueue()
        self._threads = [
            threading.Thread(target=self._lane, name=f"rewardsvc-sandbox-{n}", daemon=True)
            for n in range(lanes)
        ]
        for thread in self._threads:
            thread.start()

    def submit(
        self, request: RunRequest, group: Hashable = None, deadline: float | None = None
    ) -> Future[RunResult]:
        """Queue ``request`` in ``group``'s FIFO (its own when None); it never starts
        after ``deadline`` (a ``time.monotonic()`` instant). The future never raises: a
        run that cannot happen resolves to its typed failure."""
        future: Future[RunResult] = Future()
        job = Job(self.backend.run, (request,), request.limits.wall_s, deadline, future)
        job.group = group if group is not None else job
        try:
            queued = self._queue.put(job, limit=self.queue_limit)
        except QueueClosed:
            future.set_result(_closed())
            return future
        if not queued:
            future.set_result(
                RunResult.failed("sandbox_busy", f"{self.queue_limit} runs are already waiting")
            )
        return future

    async def arun(
        self, request: RunRequest, group: Hashable = None, deadline: float | None = None
    ) -> RunResult:
        """:meth:`submit` and wait for the outcome without holding a thread."""
        return await asyncio.wrap_future(self.submit(request, group, deadline))

    def _lane(self) -> None:
        while (job := self._queue.take()) is not None:
            if not job.future.set_running_or_notify_cancel():
                self._queue.done(job, 0.0)  # its caller gave up while it waited
                continue
            started = time.monotonic()
            try:
                if job.deadline is not None and started > job.deadline:
                    result = RunResult.failed(
                        "sandbox_busy", "no lane was free before the deadline"
                    )
                else:
                    result = job.fn(*job.args)
            except Exception as exc:  # a backend bug must not take the lane down
                result = RunResult.failed("sandbox_failed", f"{type(exc).__name__}: {exc}")
            finally:
                self._queue.done(job, time.monotonic() - started)
            job.future.set_result(result)

    def close(self) -> None:
        """Refuse new runs and answer the queued ones ``sandbox_busy``; the running ones
        finish (their own wall clock bounds them), then the lanes end."""
        for job in self._queue.close():
            if job.future.set_running_or_notify_cancel():
                job.future.set_result(_closed())
