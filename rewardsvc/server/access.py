"""What the API key of the request being served may read and write.

:class:`~rewardsvc.server.api_keys.ApiKeyMiddleware` puts the :class:`Grant` of a scoped key
in :data:`GRANT` for the duration of its request (an unrestricted key, or no auth, leaves
None: everything is allowed, the single-tenant default), and the key's holder name in
:data:`HOLDER`: work a key leaves running (ROLL jobs, ORS sessions) is that holder's, and
other keys neither read nor close it. The service asks
:func:`check_rubric` and :func:`claim_run` before scoring, and the read routes filter
with :func:`can_read` and :func:`can_read_rubric`: each check lives in one place, whichever
route asks.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable
from contextvars import ContextVar

from rewardsvc.core.access import KeyScope
from rewardsvc.core.errors import ErrorKind, Refused
from rewardsvc.monitor.monitor import DEFAULT_RUN


def _forbidden(message: str, field: str) -> Refused:
    return Refused(message, kind=ErrorKind.FORBIDDEN, field=field)


class Grant:
    """A scoped key's rights, and the runs it created (bounded by its ``max_runs``)."""

    def __init__(self, scope: KeyScope) -> None:
        self.scope = scope
        self.runs: dict[str, None] = {}

    def check_rubric(self, rubric: str) -> None:
        """403 naming ``rubric`` when this key may not score with it."""
        if not self.scope.allows_rubric(rubric):
            raise _forbidden(
                f"API key {self.scope.name!r} may not use rubric {rubric!r} "
                f"(its rubrics: {self.scope.rubrics})",
                "rubric",
            )

    def claim_run(self, run: str, kept: Callable[[str], bool]) -> None:
        """Allow writing to ``run``, or 403 naming it: outside the key's runs, or a new run
        while the key already has ``max_runs`` runs that the monitor still ``kept``."""
        if not self.scope.allows_run(run):
            raise _forbidden(
                f"API key {self.scope.name!r} may not write to run {run!r} "
                f"(its runs: {self.scope.runs})",
                "run",
            )
        cap = self.scope.max_runs
        if cap is None or run in self.runs:
            return
        if len(self.runs) >= cap:
            # Runs evicted or expired since no longer count.
            self.runs = {r: None for r in self.runs if kept(r)}
        if len(self.runs) >= cap:
            raise _forbidden(
                f"API key {self.scope.name!r} may not create run {run!r}: it already has "
                f"max_runs={cap} runs in the monitor ({sorted(self.runs)})",
                "run",
            )
        self.runs[run] = None


def _digest(secret: str) -> bytes:
    # Comparing fixed-length digests keeps compare_digest constant-time even when
    # the presented token and the key differ in length.
    return hashlib.sha256(secret.encode()).digest()


class Keyring:
    """The service's API keys: ``keys`` unrestricted, each of ``scopes`` with its grant.
    ValueError when there is no key or a key is given twice."""

    def __init__(self, keys: Iterable[str], scopes: Iterable[KeyScope] = ()) -> None:
        self._keys: list[tuple[bytes, Grant | None]] = [(_digest(k), None) for k in keys]
        for scope in scopes:
            self._keys.append((_digest(scope.key.get_secret_value()), Grant(scope)))
        if not self._keys:
            raise ValueError("the keyring needs at least one key")
        if len({digest for digest, _ in self._keys}) < len(self._keys):
            raise ValueError("an API key is given twice (in api_keys and api_key_scopes?)")

    def find(self, token: str) -> tuple[str | None, Grant | None]:
        """The holder name of key ``token`` (None: not a key) and its grant (None:
        unrestricted). Every key is compared, in constant time."""
        presented = _digest(token)
        holder, grant = None, None
        for index, (key, key_grant) in enumerate(self._keys):
            if hmac.compare_digest(presented, key):
                # The key's place, never its text: a holder name may reach logs and errors.
                holder, grant = f"key{index}", key_grant
        return holder, grant


GRANT: ContextVar[Grant | None] = ContextVar("rewardsvc_grant", default=None)
"""The scoped key of the request being served; None for an unrestricted key or no auth."""

HOLDER: ContextVar[str] = ContextVar("rewardsvc_holder", default="")
"""The holder name of the request's API key (empty without auth: one tenant holds all)."""


def current_holder() -> str:
    """The holder of work the request being served starts (see :data:`HOLDER`)."""
    return HOLDER.get()


def check_rubric(rubric: str) -> None:
    """403 unless the request's key may score with and read ``rubric`` (a library id, or
    the monitored name of an inline rubric or recipe)."""
    grant = GRANT.get()
    if grant is not None:
        grant.check_rubric(rubric)


def claim_run(run: str | None, kept: Callable[[str], bool]) -> None:
    """403 unless the request's key may write to ``run`` (None: the default run); ``kept``
    tells whether the monitor still holds a run of that name."""
    grant = GRANT.get()
    if grant is not None:
        grant.claim_run(run or DEFAULT_RUN, kept)


def can_read(rubric: str, run: str) -> bool:
    """True when the request's key may see the monitor's run (``rubric``, ``run``)."""
    grant = GRANT.get()
    return grant is None or (grant.scope.allows_rubric(rubric) and grant.scope.allows_run(run))


def can_read_run(run: str) -> bool:
    """True when the request's key may see ``run`` (its cost and budget)."""
    grant = GRANT.get()
    return grant is None or grant.scope.allows_run(run)


def can_read_rubric(rubric: str) -> bool:
    """True when the request's key may see ``rubric`` (the library, canaries)."""
    grant = GRANT.get()
    return grant is None or grant.scope.allows_rubric(rubric)


def restricted() -> bool:
    """True when the request's key is scoped (operator routes refuse it)."""
    return GRANT.get() is not None
