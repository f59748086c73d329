"""Escape tests against the real bubblewrap sandbox: untrusted programs that try to reach
the network, the host's files and processes, or to exhaust the machine, and what the
sandbox answers (Debian's ``bubblewrap`` is installed when absent)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardsvc.sandbox.bubblewrap import BubblewrapBackend, _result
from rewardsvc.sandbox.process import Watched
from rewardsvc.sandbox.run import Limits, RunRequest, RunResult
from tests.debian import debian_binary

ROOT = Path(__file__).resolve().parents[1]
PYTHON = "/usr/bin/python3"
BUSY_TRIES = 4


class PatientBackend:
    """The sandbox as a trainer meets it: a run that a busy host stopped (``sandbox_busy``,
    no score: the CI host runs CPU judges and other tests' servers beside these) is asked
    again, up to :data:`BUSY_TRIES` times. What these tests check is what the program can
    do; whether a busy host is told apart is checked in ``test_sandbox_waiting``."""

    def __init__(self, sandbox: BubblewrapBackend) -> None:
        self.sandbox = sandbox
        self.bwrap = sandbox.bwrap

    def run(self, request: RunRequest) -> RunResult:
        for _ in range(BUSY_TRIES - 1):
            result = self.sandbox.run(request)
            if result.failure != "sandbox_busy":
                return result
            time.sleep(1.0)
        return self.sandbox.run(request)


@pytest.fixture(scope="module")
def backend() -> PatientBackend:
    sandbox = BubblewrapBackend(debian_binary("bwrap", "bubblewrap"))
    available = sandbox.availability()
    assert available.ok, available.reason
    return PatientBackend(sandbox)


def run_python(backend: PatientBackend, code: str, **limits: float) -> RunResult:
    """``code`` run by the system's python3 in the sandbox, as ``main.py`` of its work dir."""
    request = RunRequest(
        (PYTHON, "main.py"),
        files={"main.py": textwrap.dedent(code).encode()},
        limits=Limits(**limits),
    )
    return backend.run(request)


def report(result: RunResult) -> dict[str, object]:
    """The JSON the program printed last (its report of what it could do)."""
    assert result.failure is None, (result.failure, result.detail, result.stderr)
    return dict(json.loads(result.stdout.splitlines()[-1]))


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A socket of the test process listening on 127.0.0.1."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.setblocking(False)
        yield server


def test_no_network_not_even_the_hosts_loopback(backend, listener) -> None:
    port = listener.getsockname()[1]
    result = run_python(
        backend,
        f"""
        import json, socket
        out = {{}}
        for name, address in [("loopback", ("127.0.0.1", {port})), ("outside", ("1.1.1.1", 53))]:
            try:
                socket.create_connection(address, timeout=2).close()
                out[name] = "connected"
            except OSError as exc:
                out[name] = type(exc).__name__
        out["interfaces"] = [name for _, name in socket.if_nameindex()]
        print(json.dumps(out))
        """,
    )
    seen = report(result)
    assert seen["loopback"] != "connected" and seen["outside"] != "connected", seen
    assert seen["interfaces"] == ["lo"], seen
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing reached the test's own socket


def test_no_read_of_host_secrets_files_or_the_repository(backend, monkeypatch) -> None:
    secret = f"sk-fake-{uuid.uuid4().hex}"
    monkeypatch.setenv("REWARDSVC_FAKE_API_KEY", secret)
    hidden = ["/etc/shadow", "/etc/passwd", str(ROOT / "pyproject.toml")]
    hidden.append(f"/proc/{os.getpid()}/environ")  # the test process's, with the key
    targets = [*hidden, "/proc/1/environ"]  # the program's own: read, and clean
    result = run_python(
        backend,
        f"""
        import json, os
        out = {{"environ": dict(os.environ), "read": {{}}}}
        for path in {targets!r}:
            try:
                with open(path, "rb") as f:
                    out["read"][path] = f.read().decode("latin-1")
            except OSError as exc:
                out["read"][path] = type(exc).__name__
        print(json.dumps(out))
        """,
    )
    assert secret not in result.stdout.decode() and secret not in result.stderr.decode()
    seen = report(result)
    environ, read = seen["environ"], seen["read"]
    assert isinstance(environ, dict) and isinstance(read, dict)
    assert set(environ) <= {"PATH", "HOME", "LANG", "PWD", "LC_CTYPE"}, environ
    for path in hidden:
        assert read[path] == "FileNotFoundError", (path, read[path][:80])


def test_no_write_outside_the_work_directory(backend, tmp_path: Path) -> None:
    host_target = tmp_path / "escaped.txt"
    targets = ["/usr/escaped", "/escaped", str(host_target), str(ROOT / "escaped.txt")]
    result = run_python(
        backend,
        f"""
        import json
        out = {{}}
        for path in {targets!r} + ["/work/inside.txt"]:
            try:
                with open(path, "w") as f:
                    f.write("x")
                out[path] = "written"
            except OSError as exc:
                out[path] = type(exc).__name__
        print(json.dumps(out))
        """,
    )
    seen = report(result)
    assert seen.pop("/work/inside.txt") == "written"
    assert "written" not in seen.values(), seen
    assert not host_target.exists() and not (ROOT / "escaped.txt").exists()


READ_ONLY_PROBE = """
import json, os
out = {}
steps = {
    "write": lambda: open("tests/deep/t.py", "w").write("x"),
    "remove": lambda: os.unlink("top.py"),
    "replace": lambda: os.rename("main.py", "top.py"),
    "move_dir": lambda: os.rename("tests", "moved"),
    "move_deep_dir": lambda: os.rename("tests/deep", "tests/moved"),
    "chmod": lambda: os.chmod("top.py", 0o666),
    "beside": lambda: open("tests/deep/mine.py", "w").write("x"),
}
for name, step in steps.items():
    try:
        step()
        out[name] = "done"
    except OSError as exc:
        out[name] = type(exc).__name__
out["read"] = open("tests/deep/t.py").read() + open("top.py").read()
print(json.dumps(out))
"""


def test_read_only_files_in_the_work_dir_cannot_be_changed_removed_or_moved_aside(
    backend,
) -> None:
    request = RunRequest(
        (PYTHON, "main.py"),
        files={"main.py": READ_ONLY_PROBE.encode(), "tests/helper.py": b""},
        ro_files={"tests/deep/t.py": b"T", "top.py": b"P"},
    )
    seen = report(backend.run(request))
    assert seen.pop("read") == "TP" and seen.pop("beside") == "done", seen
    assert "done" not in seen.values(), seen


def test_no_view_or_signal_of_host_processes(backend) -> None:
    me = os.getpid()
    result = run_python(
        backend,
        f"""
        import json, os, signal
        out = {{"pid": os.getpid(), "uid": os.getuid(), "fds": os.listdir("/proc/self/fd")}}
        out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        try:
            os.kill({me}, signal.SIGTERM)
            out["kill"] = "sent"
        except OSError as exc:
            out["kill"] = type(exc).__name__
        print(json.dumps(out))
        """,
    )
    seen = report(result)
    assert seen["kill"] == "ProcessLookupError" and seen["uid"] == 65534, seen
    assert seen["pid"] == 1 and seen["pids"] == [1], seen
    # stdin, stdout, stderr and listdir's own: nothing of the launcher (its status pipe)
    assert sorted(seen["fds"]) == ["0", "1", "2", "3"], seen


def _left_running(marker: str) -> list[str]:
    """Host processes whose command line holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_text():
                found.append(proc.name)
        except OSError:
            continue
    return found


def test_fork_bomb_is_bounded_and_killed_with_its_tree(backend) -> None:
    marker = f"bomb-{uuid.uuid4().hex}"
    result = backend.run(
        RunRequest(
            (PYTHON, "-c", BOMB, marker),
            limits=Limits(processes=16, wall_s=3.0),
        )
    )
    assert result.failure == "sandbox_timeout", (result.failure, result.detail, result.stderr)
    forked = int(result.stdout.split()[0])
    assert 0 < forked < 16  # the program itself counts as one of the 16
    assert _left_running(marker) == []


BOMB = """
import os, sys, time
forked = 0
while True:
    try:
        if os.fork() == 0:
            while True:
                time.sleep(1)
        forked += 1
    except OSError:
        break
print(forked, flush=True)
while True:
    try:
        os.fork()
    except OSError:
        pass
"""


REAPER = """
import ctypes, os, sys, time
from rewardsvc.sandbox.bubblewrap import BubblewrapBackend
from rewardsvc.sandbox.run import Limits, RunRequest
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
busy = RunRequest(("/usr/bin/python3", "-c", "while True: pass"), limits=Limits(wall_s=1.0))
result = BubblewrapBackend(sys.argv[1]).run(busy)
time.sleep(0.5)
try:
    left = os.waitpid(-1, os.WNOHANG)[0]
except ChildProcessError:
    left = 0
print(result.failure, left)
"""


def test_a_sandbox_killed_at_the_wall_clock_leaves_no_zombie(backend) -> None:
    """In a container the service is PID 1 and inherits every orphan, which it never reaps:
    a killed sandbox must be reaped by its launcher. Run as a child subreaper, the service
    would be handed any process the kill orphaned."""
    done = subprocess.run(
        [sys.executable, "-c", REAPER, backend.bwrap or "bwrap"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    # Killed at the wall clock either way; a busy host's kill is sandbox_busy.
    failure, left = done.stdout.split()
    assert failure in ("sandbox_timeout", "sandbox_busy") and left == "0", done.stdout


def test_memory_bomb_is_a_typed_memory_failure(backend) -> None:
    result = run_python(
        backend,
        """
        hoard = []
        while True:
            hoard.append(bytearray(8 << 20))
        """,
        memory_bytes=256 << 20,
    )
    assert result.failure == "sandbox_memory", (result.failure, result.detail, result.stderr)
    assert result.exit_code not in (0, None)


def test_infinite_loop_is_killed_at_the_wall_clock(backend) -> None:
    result = run_python(backend, "while True:\n    pass\n", wall_s=1.0, cpu_s=600)
    assert result.failure == "sandbox_timeout" and result.exit_code is None, result
    assert "wall clock" in result.detail


def test_cpu_limit_ends_a_busy_program_as_a_timeout(backend) -> None:
    result = run_python(backend, "while True:\n    pass\n", wall_s=60.0, cpu_s=1)
    assert result.failure == "sandbox_timeout", (result.failure, result.detail)
    assert "CPU" in result.detail and result.exit_code == 137


def _killed_by_the_kernel(cpu_s: float) -> Watched:
    """A run whose process 1 the kernel SIGKILLed, ``cpu_s`` into its CPU time."""
    return Watched(b"", b"", False, False, {"exit-code": 137}, False, 0, cpu_s, 2.0)


def test_a_kernel_kill_short_of_the_cpu_limit_is_out_of_memory_only_if_the_oom_killer_acted():
    # A loaded CI host called a program killed at its 1 s CPU limit out of memory: the CPU
    # time it read back fell short of the limit.
    limits = Limits(cpu_s=1)
    short = _killed_by_the_kernel(0.8)
    assert _result(short, limits, oom_killed=False).failure == "sandbox_timeout"
    assert _result(short, limits, oom_killed=True).failure == "sandbox_memory"
    assert _result(short, limits, oom_killed=None).failure == "sandbox_memory"
    assert _result(_killed_by_the_kernel(1.01), limits, oom_killed=True).failure == (
        "sandbox_timeout"
    )


def test_output_flood_is_capped(backend) -> None:
    result = run_python(
        backend,
        """
        import sys
        for _ in range(64):
            sys.stdout.buffer.write(b"x" * (1 << 20))
            sys.stderr.buffer.write(b"y" * (1 << 20))
        """,
        output_bytes=4096,
    )
    assert result.failure is None and result.exit_code == 0, result.detail
    assert result.stdout == b"x" * 4096 and result.stdout_truncated
    assert result.stderr == b"y" * 4096 and result.stderr_truncated


def test_a_program_gets_its_files_stdin_env_and_exit_code(backend) -> None:
    code = b"import os, sys\nprint(sys.stdin.read().upper(), os.environ['SEED'])\nsys.exit(3)\n"
    request = RunRequest(
        (PYTHON, "pkg/sub/main.py"),
        files={"pkg/sub/main.py": code, "data.txt": b"x"},
        stdin=b"hello",
        env={"SEED": "7"},
    )
    result = backend.run(request)
    assert result.failure is None and result.exit_code == 3 and result.signal is None
    assert result.stdout == b"HELLO 7\n" and not result.stdout_truncated


def test_filling_the_disk_stops_at_the_work_directorys_bound(backend) -> None:
    """The work directory, /tmp and /dev/shm are in-memory filesystems of bounded size: a
    program writing without end fills them, never the host's disk."""
    result = run_python(
        backend,
        """
        import json
        out = {}
        for place in ("/work", "/tmp", "/dev/shm"):
            written = 0
            try:
                for n in range(1000):
                    with open(f"{place}/fill{n}", "wb") as f:
                        f.write(b"x" * (1 << 20))
                    written += 1
            except OSError as exc:
                out[place] = [written, exc.errno]
        print(json.dumps(out))
        """,
        work_bytes=8 << 20,
        tmp_bytes=4 << 20,
    )
    seen = report(result)
    assert seen == {"/work": [7, 28], "/tmp": [4, 28], "/dev/shm": [4, 28]}, seen
