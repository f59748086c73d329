"""The default backend: bubblewrap (``bwrap``, Debian package ``bubblewrap``).

Each run gets new namespaces of every kind (``--unshare-all``: no network but its own
empty loopback; its own PID namespace, in which the program is process 1, so that when it
ends or is killed every process it started dies with it), user 65534 inside with no
capabilities and no further user namespaces, a read-only view of ``/usr`` (and the paths
the backend is given), a private ``/proc``, a minimal ``/dev``, a small private ``/tmp``,
and one writable directory, ``/work``: a fresh tmpfs bounded by ``work_bytes`` into which
bwrap copies the request's files from anonymous in-memory files, so a run never writes
to the host's disk and leaves nothing behind. The request's read-only files (a task's
tests) are bound read-only over their places in ``/work``, and every directory holding one
is a tmpfs of its own: the program can neither change such a file nor move it aside. The
root is sealed read-only and the environment cleared. The rlimits are set by ``prlimit``
inside the sandbox, on the program alone, just before it starts. When the service runs
as root, bubblewrap itself is started as user 65534: inside a user namespace owned by
root the kernel does not count processes against ``RLIMIT_NPROC``, so a fork bomb would
not be bounded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from rewardsvc.core.errors import SandboxFailureKind
from rewardsvc.sandbox.backend import Backend
from rewardsvc.sandbox.process import Watched, watch
from rewardsvc.sandbox.run import (
    REPORT_FD_ENV,
    RUNNER_DIR,
    Availability,
    Limits,
    RunRequest,
    RunResult,
    parents,
)

NOBODY = 65534
WORKDIR = PurePosixPath("/work")
PRLIMIT = "/usr/bin/prlimit"
_PATH = "/usr/local/bin:/usr/bin:/bin"
# A program's own words for an allocation its address-space limit refused.
_OUT_OF_MEMORY = (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc", b"out of memory")
_EXIT_SIGKILL = 128 + 9
_VMSTAT = Path("/proc/vmstat")
# A backend found not working is checked again after this long (a package installed, a
# setting fixed), not on every run.
RECHECK_S = 30.0
_PROBE = RunRequest(("/usr/bin/true",), limits=Limits(wall_s=10.0))


class BubblewrapBackend(Backend):
    """Runs each request in a fresh bubblewrap sandbox (see the module doc).

    ``bwrap`` is the binary (found on ``PATH`` when None); ``ro_paths`` are host paths
    shown read-only at the same place inside (e.g. a virtualenv holding pytest)."""

    name = "bubblewrap"

    def __init__(
        self,
        bwrap: str | None = None,
        ro_paths: Sequence[str] = (),
    ) -> None:
        self.bwrap = bwrap or shutil.which("bwrap")
        self.ro_paths = tuple(ro_paths)
        self._checked: Availability | None = None
        self._checked_at = 0.0
        self._lock = threading.Lock()

    def availability(self) -> Availability:
        """Whether bwrap is installed and can make a sandbox here (checked by running
        ``/usr/bin/true`` in one: once when it works, again ``RECHECK_S`` after a failure)."""
        with self._lock:
            if self._checked is not None and (
                self._checked.ok or time.monotonic() - self._checked_at < RECHECK_S
            ):
                return self._checked
        if not self.bwrap or not os.access(self.bwrap, os.X_OK):
            found = Availability(
                False, f"bwrap not found ({self.bwrap or 'not on PATH'}): install 'bubblewrap'"
            )
        elif not os.access(PRLIMIT, os.X_OK):
            found = Availability(False, f"{PRLIMIT} not found: install 'util-linux'")
        else:
            probe = self._run(_PROBE)
            found = (
                Availability(True)
                if probe.failure is None and probe.exit_code == 0
                else Availability(False, f"bwrap cannot make a sandbox here: {probe.detail}")
            )
        with self._lock:
            self._checked, self._checked_at = found, time.monotonic()
        return found

    def run(self, request: RunRequest) -> RunResult:
        """Run ``request`` in a fresh sandbox; ``sandbox_unavailable`` when bwrap does not
        work here (nothing runs then)."""
        available = self.availability()
        if not available.ok:
            return RunResult.failed("sandbox_unavailable", available.reason)
        return self._run(request)

    def _run(self, request: RunRequest) -> RunResult:
        assert self.bwrap is not None
        as_root = os.geteuid() == 0
        status_read, status_write = os.pipe()
        held = [status_read, status_write]  # descriptors this run still has to close
        report = None
        try:
            files = {path: _memfd(content, held) for path, content in request.files.items()}
            runner = {p: _memfd(content, held) for p, content in request.runner_files.items()}
            fixed = {p: _memfd(content, held) for p, content in request.ro_files.items()}
            stdin = _memfd(request.stdin, held)
            work = _work(request.limits, files, fixed)
            argv = [self.bwrap, *self._options(request.limits, status_write, runner, work)]
            env = dict(request.env)
            if request.report_bytes:
                report = _memfd(b"", held)
                env[REPORT_FD_ENV] = str(report)
            for name, value in env.items():
                argv += ["--setenv", name, value]
            argv += [*_prlimit(request.limits), *request.argv]
            given = (*files.values(), *fixed.values(), *runner.values())
            given += (report,) if report is not None else ()
            oom_kills = _oom_kills()
            proc = subprocess.Popen(
                argv,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(status_write, *given),
                env={},
                start_new_session=True,
                # As root, bwrap itself runs as 65534 with no other groups.
                user=NOBODY if as_root else None,
                group=NOBODY if as_root else None,
                extra_groups=[] if as_root else None,
            )
            # The report's descriptor stays open here, to be read once the run ends.
            for fd in [fd for fd in held if fd not in (status_read, report)]:
                os.close(fd)
            held[:] = [report] if report is not None else []
            watched = watch(proc, status_read, request.limits.wall_s, request.limits.output_bytes)
            after = _oom_kills()
            oom_killed = None if oom_kills is None or after is None else after > oom_kills
            if report is not None:
                watched.report = _read_back(report, request.report_bytes)
        except OSError as exc:
            return RunResult.failed("sandbox_failed", f"could not start bwrap: {exc}")
        finally:
            for fd in held:
                os.close(fd)
        return _result(watched, request.limits, oom_killed)

    def _options(
        self, limits: Limits, status_fd: int, runner: dict[str, int], work: list[str]
    ) -> list[str]:
        system = ["--ro-bind", "/usr", "/usr"]
        for link in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
            if Path(f"/usr/{link}").is_dir():
                system += ["--symlink", f"usr/{link}", f"/{link}"]
        for path in self.ro_paths:
            system += ["--ro-bind", path, path]
        for parent in parents(runner):
            system += ["--dir", f"{RUNNER_DIR}/{parent}"]
        for path, fd in runner.items():
            system += ["--perms", "0444", "--ro-bind-data", str(fd), f"{RUNNER_DIR}/{path}"]
        return [
            *system,
            *("--proc", "/proc", "--dev", "/dev"),
            *("--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"),
            *("--size", str(limits.tmp_bytes), "--tmpfs", "/dev/shm"),
            *work,
            # bwrap's own root is a writable tmpfs (host memory): seal it once built.
            *("--remount-ro", "/", "--chdir", str(WORKDIR)),
            *("--unshare-all", "--unshare-user", "--disable-userns"),
            *("--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL"),
            *("--hostname", "sandbox", "--die-with-parent", "--new-session", "--as-pid-1"),
            *("--clearenv", "--setenv", "PATH", _PATH, "--setenv", "HOME", str(WORKDIR)),
            *("--setenv", "LANG", "C.UTF-8"),
            *("--json-status-fd", str(status_fd)),
        ]


def _work(limits: Limits, files: dict[str, int], fixed: dict[str, int]) -> list[str]:
    """The options that build ``/work``: a tmpfs, with one more mounted at each directory
    that holds a read-only file (a mount point cannot be moved or removed, so neither can
    the file), the work directory's bytes shared among them; then the ``files``, copied in
    writable, and the ``fixed`` files, bound read-only over their places."""
    mounts = [PurePosixPath("."), *parents(fixed)]
    share = str(max(1, limits.work_bytes // len(mounts)))
    work: list[str] = []
    for mount in mounts:
        work += ["--perms", "0755", "--size", share, "--tmpfs", str(WORKDIR / mount)]
    for parent in parents(files):
        work += ["--dir", str(WORKDIR / parent)]
    for path, fd in files.items():
        work += ["--perms", "0755", "--file", str(fd), str(WORKDIR / path)]
    for path, fd in fixed.items():
        work += ["--perms", "0444", "--ro-bind-data", str(fd), str(WORKDIR / path)]
    return work


def _read_back(fd: int, cap: int) -> tuple[bytes, bool]:
    """What a run wrote to its report descriptor: at most ``cap`` bytes, and whether there
    was more."""
    os.lseek(fd, 0, os.SEEK_SET)
    data = bytearray()
    while len(data) <= cap and (chunk := os.read(fd, min(1 << 16, cap + 1 - len(data)))):
        data += chunk
    return bytes(data[:cap]), len(data) > cap


def _memfd(content: bytes, held: list[int]) -> int:
    """An anonymous in-memory file holding ``content``, read from its start (it is added to
    ``held``, the descriptors to close)."""
    fd = os.memfd_create("rewardsvc-sandbox")
    held.append(fd)
    with open(fd, "wb", closefd=False) as out:
        out.write(content)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _prlimit(limits: Limits) -> list[str]:
    """The ``prlimit`` command that sets the rlimits (soft = hard: the program is its PID
    namespace's init, which ignores SIGXCPU, so the CPU limit ends it with SIGKILL) and
    then executes the program."""
    return [
        PRLIMIT,
        f"--cpu={limits.cpu_s}",
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}",
        f"--nofile={limits.open_files}",
        "--",
    ]


def _oom_kills() -> int | None:
    """How many processes the kernel's OOM killer has killed since boot (``oom_kill`` of
    ``/proc/vmstat``), None where the kernel does not say."""
    with contextlib.suppress(OSError, ValueError):
        for line in _VMSTAT.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    return None


def _result(watched: Watched, limits: Limits, oom_killed: bool | None) -> RunResult:
    """The run's outcome from what watching it gave (see :class:`RunResult`);
    ``oom_killed``: whether the kernel's OOM killer killed a process during the run (None:
    not known)."""
    exit_code = watched.status.get("exit-code")
    failure: SandboxFailureKind | None = None
    detail = ""
    if watched.killed and watched.starved:
        # The host's load stopped it, not the program: no score, never a 0.
        failure = "sandbox_busy"
        detail = (
            f"killed after {watched.wall_s:.3g} s (wall clock {limits.wall_s:g} s) having waited "
            "for a CPU longer than it ran on one: the host was too busy"
        )
        exit_code = None
    elif watched.killed:
        failure, detail = "sandbox_timeout", f"killed at the wall clock ({limits.wall_s:g} s)"
        exit_code = None
    elif not isinstance(exit_code, int):
        # bwrap reports no exit code when it failed before the program could start.
        failure = "sandbox_failed"
        detail = watched.stderr.decode("utf-8", "replace").strip()[-500:] or (
            f"bwrap exited with {watched.returncode} before the program started"
        )
        exit_code = None
    elif exit_code == _EXIT_SIGKILL:
        # The program is its namespace's init: no process inside can SIGKILL it, and bwrap,
        # which reported the exit, was alive; so the kernel did: at the CPU limit, or the
        # host's OOM killer. The CPU time read back is the first witness; when it falls
        # short, the kernel's count of OOM kills says which (a loaded CI host once
        # reported a CPU-limit kill with less CPU time than the limit).
        cpu = f"{watched.cpu_s:.3g} s of CPU"
        if watched.cpu_s >= 0.9 * limits.cpu_s or oom_killed is False:
            failure, detail = "sandbox_timeout", f"CPU limit ({limits.cpu_s} s) reached ({cpu})"
        else:
            failure, detail = "sandbox_memory", f"killed by the kernel (out of memory) ({cpu})"
    elif exit_code != 0 and any(m in watched.stderr[-4096:] for m in _OUT_OF_MEMORY):
        failure, detail = "sandbox_memory", f"address space limit ({limits.memory_bytes} B)"
    return RunResult(
        exit_code=exit_code,
        stdout=watched.stdout,
        stderr=watched.stderr,
        stdout_truncated=watched.stdout_truncated,
        stderr_truncated=watched.stderr_truncated,
        wall_s=watched.wall_s,
        cpu_s=watched.cpu_s,
        failure=failure,
        detail=detail,
        report=watched.report[0],
        report_truncated=watched.report[1],
    )
