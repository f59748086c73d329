"""Task files a library file names (a unit_tests grader's ``tests_file``): read when the
rubric or recipe file is loaded, relative to it and bounded in size, never at request
time (a request's own specs have no reader, so they cannot name one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rewardsvc.core.code_spec import MAX_TEST_BYTES


class TaskFiles:
    """Reads the task files named by the library file at ``origin``."""

    def __init__(self, origin: Path, max_bytes: int = MAX_TEST_BYTES) -> None:
        self.base = origin.parent
        self.max_bytes = max_bytes

    def __call__(self, name: str) -> str:
        """The UTF-8 text of task file ``name`` (relative to the library file); raises
        ValueError saying why it cannot be read."""
        if Path(name).is_absolute():
            raise ValueError(f"tests_file: {name!r} must be relative to the file naming it")
        path = self.base / name
        try:
            with path.open("rb") as handle:
                data = handle.read(self.max_bytes + 1)
        except OSError as exc:
            raise ValueError(f"tests_file: cannot read {name!r}: {exc.strerror}") from exc
        if len(data) > self.max_bytes:
            raise ValueError(f"tests_file: {name!r} is over {self.max_bytes} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"tests_file: {name!r} is not UTF-8 text") from exc


def with_task_files(context: dict[str, Any] | None, origin: Path) -> dict[str, Any]:
    """``context`` with the reader of the task files of the library file at ``origin``."""
    return {**(context or {}), "task_files": TaskFiles(origin)}
