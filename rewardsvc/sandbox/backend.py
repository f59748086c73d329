"""The sandbox backend strategy: what any backend (bubblewrap here; gVisor's ``runsc`` or
a remote sandbox service later) offers the rest of the room."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from rewardsvc.sandbox.run import Availability, RunRequest, RunResult


class Backend(ABC):
    """A way to run untrusted code in isolation: no network, a read-only view of the
    system, a fresh writable work directory, its own process namespace, the request's
    limits and a wall-clock kill of the whole process tree.

    :meth:`run` blocks (the lanes call it from their own threads) and never raises for
    what the program did: every outcome is a :class:`RunResult`. A backend that cannot
    isolate returns ``sandbox_unavailable`` and runs nothing."""

    name: ClassVar[str]

    @abstractmethod
    def availability(self) -> Availability:
        """Whether this backend works on this machine (checked by running a trivial
        program, so a missing binary or a kernel refusing namespaces shows here)."""

    @abstractmethod
    def run(self, request: RunRequest) -> RunResult:
        """Run ``request`` in a fresh sandbox and return its outcome."""


class NoBackend(Backend):
    """No sandbox at all (none configured, or none works here): every run is refused as
    ``sandbox_unavailable`` with ``reason``, so code is never run unsandboxed."""

    name = "none"

    def __init__(self, reason: str = "no sandbox backend is configured") -> None:
        self.reason = reason

    def availability(self) -> Availability:
        """Never available."""
        return Availability(False, self.reason)

    def run(self, request: RunRequest) -> RunResult:
        """Refuse: ``sandbox_unavailable``."""
        return RunResult.failed("sandbox_unavailable", self.reason)
