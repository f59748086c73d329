"""The sandbox's lanes and backends without running code: a bounded queue (``sandbox_busy``
when full), fairness between requests, and a backend that cannot sandbox (a typed
``sandbox_unavailable``, nothing run)."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import get_args

import pytest

from rewardsvc.core.errors import JudgeErrorKind, SandboxFailureKind
from rewardsvc.sandbox.backend import Backend, NoBackend
from rewardsvc.sandbox.bubblewrap import BubblewrapBackend
from rewardsvc.sandbox.lanes import SandboxLanes
from rewardsvc.sandbox.run import MAX_FILES, Availability, Limits, RunRequest, RunResult


class GatedBackend(Backend):
    """Records the runs it gets (by their first argument) and holds each until let go."""

    name = "gated"

    def __init__(self) -> None:
        self.order: list[str] = []
        self.started = threading.Semaphore(0)
        self.gate = threading.Event()

    def availability(self) -> Availability:
        return Availability(True)

    def run(self, request: RunRequest) -> RunResult:
        self.order.append(request.argv[0])
        self.started.release()
        assert self.gate.wait(10)
        return RunResult(exit_code=0)


def request(name: str) -> RunRequest:
    return RunRequest((name,))


def test_a_full_queue_answers_busy_at_once_and_the_queued_runs_still_run() -> None:
    backend = GatedBackend()
    lanes = SandboxLanes(backend, lanes=1, queue_limit=2)
    running = lanes.submit(request("a"))
    assert backend.started.acquire(timeout=5)
    queued = [lanes.submit(request(name)) for name in ("b", "c")]
    refused = lanes.submit(request("d"))
    result = refused.result(timeout=1)
    assert result.failure == "sandbox_busy" and result.exit_code is None
    backend.gate.set()
    assert [f.result(timeout=5).exit_code for f in [running, *queued]] == [0, 0, 0]
    assert backend.order == ["a", "b", "c"]
    lanes.close()


def test_a_request_that_arrives_later_is_not_starved_by_a_long_one() -> None:
    backend = GatedBackend()
    lanes = SandboxLanes(backend, lanes=1)
    first = [lanes.submit(request(f"A{n}"), group="A") for n in range(6)]
    assert backend.started.acquire(timeout=5)
    time.sleep(0.2)  # A's first run holds the lane: A has used the lane's time
    second = [lanes.submit(request(f"B{n}"), group="B") for n in range(2)]
    backend.gate.set()
    for future in [*first, *second]:
        future.result(timeout=5)
    assert backend.order[:3] == ["A0", "B0", "B1"], backend.order
    lanes.close()


def test_a_run_past_its_deadline_or_queued_at_close_never_runs() -> None:
    backend = GatedBackend()
    lanes = SandboxLanes(backend, lanes=1)
    lanes.submit(request("a"))
    assert backend.started.acquire(timeout=5)
    late = lanes.submit(request("late"), deadline=time.monotonic() + 0.05)
    time.sleep(0.1)
    waiting = lanes.submit(request("waiting"))
    lanes.close()
    assert waiting.result(timeout=1).failure == "sandbox_busy"
    backend.gate.set()
    assert late.result(timeout=5).failure == "sandbox_busy"
    assert backend.order == ["a"]
    assert lanes.submit(request("after")).result(timeout=1).failure == "sandbox_busy"


def test_no_backend_is_a_typed_unavailable_failure_never_a_run() -> None:
    lanes = SandboxLanes(NoBackend())
    result = lanes.submit(request("/usr/bin/true")).result(timeout=1)
    assert result.failure == "sandbox_unavailable" and result.exit_code is None
    assert "no sandbox backend" in result.detail
    lanes.close()


def test_a_missing_bwrap_is_unavailable_with_its_reason() -> None:
    backend = BubblewrapBackend("/nonexistent/bwrap")
    available = backend.availability()
    assert not available.ok and "bubblewrap" in available.reason
    result = backend.run(request("/usr/bin/true"))
    assert result.failure == "sandbox_unavailable" and result.detail == available.reason


def test_a_bwrap_that_cannot_make_a_sandbox_is_unavailable_and_runs_nothing() -> None:
    """A bwrap refused by the kernel (as in a container without user namespaces) says why;
    the program is never run outside it."""
    with tempfile.TemporaryDirectory() as where:
        _refused_bwrap(Path(where))


def _refused_bwrap(where: Path) -> None:
    where.chmod(0o755)  # run as root, the backend starts bwrap as user 65534
    ran = where / "ran"
    fake = where / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    backend = BubblewrapBackend(str(fake))
    available = backend.availability()
    assert not available.ok and "No permissions to create new namespace" in available.reason
    result = backend.run(RunRequest(("/usr/bin/touch", str(ran))))
    assert result.failure == "sandbox_unavailable" and not ran.exists()


def test_sandbox_failures_are_error_kinds_a_grader_can_report() -> None:
    assert set(get_args(SandboxFailureKind)) <= set(get_args(JudgeErrorKind))


@pytest.mark.parametrize(
    "bad",
    [
        {"argv": ()},
        {"argv": ("/usr/bin/true",), "files": {"../escape": b""}},
        {"argv": ("/usr/bin/true",), "files": {"/etc/x": b""}},
        {"argv": ("/usr/bin/true",), "files": {f"f{n}": b"" for n in range(MAX_FILES + 1)}},
        {"argv": ("/usr/bin/true",), "env": {"A=B": "c"}},
        {"argv": ("/usr/bin/true",), "ro_files": {"../escape": b""}},
        {"argv": ("/usr/bin/true",), "files": {"t.py": b""}, "ro_files": {"t.py": b""}},
        {"argv": ("/usr/bin/true",), "files": {"t/x.py": b""}, "ro_files": {"t": b""}},
        {"argv": ("/usr/bin/true",), "files": {"t": b""}, "ro_files": {"t/x.py": b""}},
        {"argv": ("/usr/bin/true",), "ro_files": {"t": b"", "t/x.py": b""}},
        {"argv": ("/usr/bin/true",), "ro_files": {f"d{n}/t.py": b"" for n in range(33)}},
        {
            "argv": ("/usr/bin/true",),
            "files": {f"f{n}": b"" for n in range(MAX_FILES)},
            "ro_files": {"t.py": b""},
        },
    ],
)
def test_a_request_that_would_reach_outside_its_work_dir_is_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        RunRequest(**bad)


@pytest.mark.parametrize("limit", ["cpu_s", "memory_bytes", "processes", "output_bytes"])
def test_limits_must_be_positive(limit: str) -> None:
    with pytest.raises(ValueError, match=limit):
        Limits(**{limit: 0})
