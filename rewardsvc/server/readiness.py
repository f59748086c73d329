"""Readiness: which judges answer, asked through their own backends at most every few
seconds (same endpoints, keys and breakers as the judge calls), and whether the sandbox
works when the library has a code grader (asked of the backend, which remembers)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Protocol

from rewardsvc.core.graders_spec import GraderSpec
from rewardsvc.library.recipes import RecipeEntry
from rewardsvc.library.registry import Registry
from rewardsvc.sandbox.backend import Backend

READY_TTL_S = 5.0  # how long a /readyz answer is reused before judges are asked again


class Reachable(Protocol):
    """What readiness needs of a judge (``rewardsvc.judges.judge.Judge`` provides it)."""

    async def reachable(self) -> bool: ...


class ReadinessProbe:
    """Answers /readyz from a few-second cache of the judges' reachability."""

    def __init__(self, judges: Mapping[str, Reachable], sandbox: Backend | None = None):
        self.judges = judges
        self.sandbox = sandbox
        self._lock = asyncio.Lock()
        self._checked_at = -1e9
        self._reachable: dict[str, bool] = {}

    async def _ask(self, judge: Reachable) -> bool:
        try:
            return await judge.reachable()
        except Exception:
            return False

    async def reachable(self) -> dict[str, bool]:
        """Which judges answered, asking again when the last answer is older than READY_TTL_S."""
        async with self._lock:
            if time.monotonic() - self._checked_at > READY_TTL_S:
                names = list(self.judges)
                answers = await asyncio.gather(*(self._ask(self.judges[n]) for n in names))
                self._reachable = dict(zip(names, answers, strict=True))
                self._checked_at = time.monotonic()
            return dict(self._reachable)

    async def sandbox_unavailable(self, needed_by: list[str]) -> str | None:
        """Why the sandbox cannot run the code graders of ``needed_by`` (the library's
        rubrics and recipes that have one), None when it can or none needs it."""
        if not needed_by:
            return None
        if self.sandbox is None:
            return "this service has no sandbox"
        available = await asyncio.to_thread(self.sandbox.availability)
        return None if available.ok else available.reason


def _sandboxed(specs: Iterable[GraderSpec | None]) -> bool:
    return any(spec is not None and spec.in_sandbox for spec in specs)


def code_grader_users(registry: Registry) -> list[str]:
    """The ids of the library's rubrics and recipes that have a code grader (a grader
    that runs programs in the sandbox)."""
    users = [
        e.rubric.id for e in registry.entries() if _sandboxed(c.grader for c in e.rubric.criteria)
    ]
    for entry in registry.recipe_entries():
        if isinstance(entry, RecipeEntry) and _sandboxed(c.grader for c in entry.recipe.components):
            users.append(entry.recipe.id)
    return users
