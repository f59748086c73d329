"""What one sandboxed run is asked to do (:class:`RunRequest` with its :class:`Limits`)
and what it gave (:class:`RunResult`), as plain typed data."""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from rewardsvc.core.errors import SandboxFailureKind

_MIB = 1 << 20
MAX_FILES = 320
"""Most files one run may be given, ``files``, ``ro_files`` and ``runner_files`` together
(each is a descriptor while the sandbox starts): an agent's workspace (256 at most) with a
task's tests."""
MAX_RO_DIRS = 32
"""Most directories inside the work directory that hold ``ro_files`` (each its own mount)."""
RUNNER_DIR = "/runner"
"""Where a run's trusted ``runner_files`` are shown, read-only, outside the work directory."""
REPORT_FD_ENV = "SANDBOX_REPORT_FD"
"""The environment variable naming the descriptor a run may write its report to."""
MAX_REPORT_BYTES = 4 * _MIB
"""Largest report a run may ask to keep."""


@dataclass(frozen=True)
class Limits:
    """The bounds of one run. ``cpu_s``, ``memory_bytes`` (address space), ``processes``,
    ``file_bytes`` (largest file written) and ``open_files`` are rlimits of the program
    and everything it starts; ``wall_s`` is the wall clock after which the whole process
    tree is killed; ``output_bytes`` caps what is kept of stdout and of stderr each (the
    rest is read and dropped); ``work_bytes`` sizes the work directory (the files given
    included; split evenly among its mounts when ``ro_files`` sit in subdirectories) and
    ``tmp_bytes`` the run's private ``/tmp`` and ``/dev/shm`` (each an in-memory
    filesystem of that size at most)."""

    cpu_s: int = 10
    memory_bytes: int = 1024 * _MIB
    processes: int = 64
    file_bytes: int = 16 * _MIB
    open_files: int = 256
    wall_s: float = 20.0
    output_bytes: int = 1 * _MIB
    work_bytes: int = 64 * _MIB
    tmp_bytes: int = 64 * _MIB

    def __post_init__(self) -> None:
        for name in (
            "cpu_s",
            "memory_bytes",
            "processes",
            "file_bytes",
            "open_files",
            "output_bytes",
            "work_bytes",
            "tmp_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: must be a positive integer, got {value!r}")
        if not self.wall_s > 0:
            raise ValueError(f"wall_s: must be positive, got {self.wall_s!r}")


def _check_place(path: str) -> None:
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or not parts or ".." in parts or "\0" in path:
        raise ValueError(f"files[{path!r}]: must be a relative path inside the work directory")


def parents(paths: Iterable[str]) -> list[PurePosixPath]:
    """The directories that hold ``paths`` (relative), at every level, parents first."""
    found = {parent for path in paths for parent in PurePosixPath(path).parents}
    return sorted(found - {PurePosixPath(".")}, key=lambda p: (len(p.parts), p))


def ro_problem(files: Mapping[str, bytes | str], ro_files: Mapping[str, bytes | str]) -> str | None:
    """Why ``ro_files`` cannot be shown beside ``files`` (a path that is a file of one and
    a directory or file of the other, or of both, or too many directories), or None."""
    dirs = {str(d) for d in parents(ro_files)}
    if len(dirs) > MAX_RO_DIRS:
        return f"ro_files: in at most {MAX_RO_DIRS} directories, got {len(dirs)}"
    held = {str(d) for d in parents(files)}
    clash = sorted((set(ro_files) | dirs) & set(files) | (dirs | held) & set(ro_files))
    return f"ro_files[{clash[0]!r}]: also a file or a directory of the run" if clash else None


@dataclass(frozen=True)
class RunRequest:
    """Run ``argv`` (``argv[0]`` a path inside the sandbox's read-only system, e.g.
    ``/usr/bin/python3``) in a fresh work directory holding ``files`` (relative path ->
    content, at most :data:`MAX_FILES`), with ``stdin`` as its standard input and only
    ``env`` (over a fixed ``PATH``, ``HOME`` and ``LANG``) in its environment, within
    ``limits``.

    ``ro_files`` (relative path -> content) are shown read-only inside the work directory
    (the task's files, e.g. its hidden tests): the program cannot write, delete or replace
    them, nor move a directory that holds one (each such directory, at most
    :data:`MAX_RO_DIRS`, is a mount of its own, which the program's other files may share).

    ``runner_files`` (relative path -> content) are the caller's trusted files, shown
    read-only under :data:`RUNNER_DIR`, outside the work directory (a test runner and its
    plugin). With ``report_bytes``, the program gets a descriptor, named by the
    environment variable :data:`REPORT_FD_ENV`, that is no file of the sandbox's: what it
    writes there (up to ``report_bytes``) comes back as the result's ``report``."""

    argv: tuple[str, ...]
    files: Mapping[str, bytes] = field(default_factory=dict)
    stdin: bytes = b""
    env: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    runner_files: Mapping[str, bytes] = field(default_factory=dict)
    report_bytes: int = 0
    ro_files: Mapping[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.argv or any("\0" in arg for arg in self.argv):
            raise ValueError("argv: must be a non-empty list of strings without NUL")
        count = len(self.files) + len(self.ro_files) + len(self.runner_files)
        if count > MAX_FILES:
            raise ValueError(f"files: at most {MAX_FILES}, got {count}")
        for path in [*self.files, *self.ro_files, *self.runner_files]:
            _check_place(path)
        problem = ro_problem(self.files, self.ro_files)
        if problem is not None:
            raise ValueError(problem)
        if not 0 <= self.report_bytes <= MAX_REPORT_BYTES:
            raise ValueError(f"report_bytes: between 0 and {MAX_REPORT_BYTES}")
        for name, value in self.env.items():
            if not name or "=" in name or "\0" in name + value:
                raise ValueError(f"env[{name!r}]: not a valid environment variable")


@dataclass(frozen=True)
class RunResult:
    """What a run gave. ``failure`` is None when the program ran to its end (whatever its
    exit code: that is the program's answer), else why there is no usable outcome (then a
    grader reports no score with that kind, never 0). ``exit_code`` is the program's (128
    + the signal's number when a signal ended it, as shells report it; ``signal`` names
    it), None when it never ran or was killed at the wall clock. ``stdout`` and ``stderr``
    hold at most ``limits.output_bytes`` each (``*_truncated`` when there was more);
    ``wall_s`` and ``cpu_s`` are what the run took (the sandbox's own start included);
    ``report`` is what the program wrote to its report descriptor (at most the request's
    ``report_bytes``; ``report_truncated`` when it wrote more)."""

    exit_code: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    wall_s: float = 0.0
    cpu_s: float = 0.0
    failure: SandboxFailureKind | None = None
    detail: str = ""
    report: bytes = b""
    report_truncated: bool = False

    @property
    def signal(self) -> signal.Signals | None:
        """The signal that ended the program, when its exit code says one did."""
        if self.exit_code is None or self.exit_code <= 128:
            return None
        try:
            return signal.Signals(self.exit_code - 128)
        except ValueError:
            return None

    @classmethod
    def failed(cls, kind: SandboxFailureKind, detail: str) -> RunResult:
        """A run that never ran (or whose sandbox failed): ``kind`` and why."""
        return cls(failure=kind, detail=detail)


@dataclass(frozen=True)
class Availability:
    """Whether a backend can run anything here, and if not, why (for people: what is
    missing and what to install or allow)."""

    ok: bool
    reason: str = ""
