"""Reading a service's reward log in tests (no tests here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def reward_lines(path: Path) -> list[dict[str, Any]]:
    """The reward lines of the reward log at ``path`` (none while it does not exist).

    The log holds event lines too (a monitor alert, a rubric version change: ``"event"``
    instead of a reward), written beside the reward lines by the same service; a test that
    reads rewards must skip them.
    """
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if "event" not in line]
