"""Watching one sandbox process from outside: its output read with a cap (never unbounded
memory), its wall clock (given back the time it waited for a busy host's CPU:
:mod:`~rewardsvc.sandbox.waiting`), the status its launcher reports, and a kill of its
whole tree.

The launcher (bubblewrap) writes JSON documents on a status pipe: the host pid of the
sandbox's process 1 once it exists (``child-pid``) and the program's exit code when it
ended (``exit-code``). Killing that process kills every process of the sandbox's PID
namespace; it is signalled through a pidfd, so a recycled pid is never hit.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from rewardsvc.sandbox import waiting

_CHUNK = 1 << 16
# After a kill, pipes still open this long (a process that escaped the kill) are dropped.
_KILL_GRACE_S = 2.0
# Less time than this owed for waiting on a busy host is not worth another look.
_MIN_EXTENSION_S = 0.01


@dataclass
class _Stream:
    cap: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.truncated = True
        if room > 0:
            self.data += chunk[:room]


@dataclass
class Watched:
    """What watching gave: the outputs (capped), the launcher's status documents, whether
    the wall clock killed it, and the launcher's exit status and CPU time (its tree's)."""

    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    status: dict[str, Any]
    killed: bool
    returncode: int
    cpu_s: float
    wall_s: float
    report: tuple[bytes, bool] = (b"", False)
    """What the run wrote to its report descriptor, and whether it wrote more than kept."""
    starved: bool = False
    """Killed at the wall clock having waited for a CPU longer than it ran
    (:func:`waiting.starved`)."""


class _Tree:
    """The launcher and, once it says, the sandbox's process 1 (held by a pidfd)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.init_fd: int | None = None
        self.init_pid: int | None = None

    def found_init(self, pid: int) -> None:
        if self.init_fd is None:
            with contextlib.suppress(OSError):  # already gone
                self.init_fd = os.pidfd_open(pid)
                self.init_pid = pid

    def owed_s(self, wall_s: float, elapsed_s: float) -> float:
        """The wall time the host owes the run (:func:`waiting.owed_s`); none before its
        process 1 is known."""
        if self.init_pid is None:
            return 0.0
        return waiting.owed_s(wall_s, elapsed_s, waiting.scheduled(self.init_pid))

    def starved(self, elapsed_s: float) -> bool:
        """Whether the tree, ``elapsed_s`` into its run, waited for a CPU longer than it ran
        (:func:`waiting.starved`)."""
        if self.init_pid is None:
            return False
        return waiting.starved(waiting.scheduled(self.init_pid), elapsed_s)

    def kill(self) -> None:
        """Kill the sandbox's process 1: its namespace dies with it, and the launcher reaps
        it and exits (killing the launcher too would leave process 1 to the service's own
        init as a zombie). Before process 1 is known, kill the launcher."""
        if self.init_fd is None:
            self.kill_launcher()
            return
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self.init_fd, signal.SIGKILL)

    def kill_launcher(self) -> None:
        # Not Popen.kill: it polls first, which would reap the launcher before wait4 can.
        with contextlib.suppress(OSError):
            os.kill(self.proc.pid, signal.SIGKILL)

    def close(self) -> None:
        if self.init_fd is not None:
            os.close(self.init_fd)
            self.init_fd = None


def _status_lines(buffer: bytearray, status: dict[str, Any]) -> None:
    """Move the complete JSON documents of ``buffer`` (one a line) into ``status``."""
    while b"\n" in buffer:
        line, _, rest = bytes(buffer).partition(b"\n")
        buffer[:] = rest
        with contextlib.suppress(ValueError):
            document = json.loads(line)
            if isinstance(document, dict):
                status.update(document)


def _pump(
    proc: subprocess.Popen[bytes], status_fd: int, streams: dict[int, _Stream], wall_s: float
) -> tuple[dict[str, Any], bool, bool]:
    """Read the pipes until they close (killing the tree at the wall clock): the status
    documents, whether the wall clock killed it, and whether it was starved then."""
    assert proc.stdout is not None and proc.stderr is not None
    status: dict[str, Any] = {}
    status_buffer = bytearray()
    tree = _Tree(proc)
    killed = starved = False
    started = time.monotonic()
    deadline = started + wall_s
    try:
        with selectors.DefaultSelector() as selector:
            for pipe in (proc.stdout, proc.stderr):
                selector.register(pipe, selectors.EVENT_READ)
            selector.register(status_fd, selectors.EVENT_READ)
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    if killed:
                        break  # something still holds a pipe after the kill: stop reading
                    now = time.monotonic()
                    later = started + wall_s + tree.owed_s(wall_s, now - started)
                    if later - now > _MIN_EXTENSION_S:
                        deadline = later  # it waited for a busy host's CPU: its time back
                        continue
                    starved = tree.starved(now - started)  # read before the kill ends it
                    tree.kill()
                    killed, deadline = True, time.monotonic() + _KILL_GRACE_S
                    continue
                for key, _ in selector.select(left):
                    chunk = os.read(key.fd, _CHUNK)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif key.fd == status_fd:
                        status_buffer += chunk
                        _status_lines(status_buffer, status)
                        if "child-pid" in status:
                            tree.found_init(int(status["child-pid"]))
                    else:
                        streams[key.fd].feed(chunk)
    except BaseException:
        tree.kill()  # never leave a sandbox running behind a failed watch
        tree.kill_launcher()
        raise
    finally:
        tree.close()
    return status, killed, starved


def _reap(
    proc: subprocess.Popen[bytes], grace_s: float | None
) -> tuple[int, int, resource.struct_rusage]:
    """Wait for the launcher (``os.wait4``); after a kill, give it ``grace_s`` to reap the
    sandbox's process 1 and exit, then kill it."""
    if grace_s is not None:
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            reaped = os.wait4(proc.pid, os.WNOHANG)
            if reaped[0]:
                return reaped
            time.sleep(0.01)
        _Tree(proc).kill_launcher()
    return os.wait4(proc.pid, 0)


def watch(
    proc: subprocess.Popen[bytes], status_fd: int, wall_s: float, output_bytes: int
) -> Watched:
    """Read ``proc``'s stdout and stderr (each kept up to ``output_bytes``) and its
    launcher's status pipe ``status_fd`` until they close, killing the whole tree when
    ``wall_s`` has passed; then reap the launcher. Closes the pipes and ``status_fd``."""
    started = time.monotonic()
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Stream(output_bytes), _Stream(output_bytes)
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    status, killed, starved = _pump(proc, status_fd, streams, wall_s)
    _, wait_status, usage = _reap(proc, _KILL_GRACE_S if killed else None)
    proc.returncode = os.waitstatus_to_exitcode(wait_status)
    for pipe in (proc.stdout, proc.stderr):
        pipe.close()
    os.close(status_fd)
    return Watched(
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        status=status,
        killed=killed,
        returncode=proc.returncode,
        cpu_s=usage.ru_utime + usage.ru_stime,
        wall_s=time.monotonic() - started,
        starved=starved,
    )
