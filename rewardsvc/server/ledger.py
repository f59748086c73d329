"""What requests make the service hold beyond their own exchange, counted before it is held.

Some work outlives the HTTP exchange that asked for it, or waits outside the in-flight
limiter: a ROLL job scores after ``submit_task`` answered, an ORS tool call runs (or waits
for its session) while its stream is cut and resumed, an OpenRLHF or slime request is held
through a judge outage between its tries, and ``options.explain`` builds a response many
times its request. Each of these takes a :class:`Holding` from the :class:`Ledger` before the
work starts, sized by the bytes it keeps (the request text, or the explain output it plans)
plus a fixed charge for its task, and gives it back when the work ends. What a finished job
keeps for its poll (its answer, never its exception) is small and bounded on its own.

The ledger refuses at admission, in the API's usual form: 413 when one holding alone is larger
than ``max_held_bytes``, 429 with ``Retry-After`` while the bytes held by everyone, or the
holdings of the request's API key (``max_held_per_key``), are full. A key is the holder of
what it started: other keys neither see nor cancel it (:func:`holder`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rewardsvc.core.errors import ErrorKind, TooLarge, Unavailable
from rewardsvc.server.access import current_holder
from rewardsvc.server.guards import RetryAfter

TASK_CHARGE_BYTES = 16 * 1024
"""What one holding costs beyond its bytes: its asyncio task, frames and records (measured
at about 9 KiB for a ROLL job in ``tests/test_ledger.py``'s memory test; charged with margin)."""


def held_size(value: Any) -> int:
    """What holding ``value`` (a request's text) in a task costs: its UTF-8 size as compact
    JSON, measured the same way whichever route took it, plus the task's charge."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass")) + TASK_CHARGE_BYTES


@dataclass
class Holding:
    """What one piece of held work takes from the ledger until :meth:`release`."""

    ledger: Ledger
    holder: str
    size: int
    released: bool = False

    def release(self) -> None:
        """Give the bytes and the holder's slot back (once; later calls do nothing)."""
        if not self.released:
            self.released = True
            self.ledger._give_back(self)


@dataclass
class Ledger:
    """The bytes and holdings that held work takes, bounded as a whole and per API key."""

    max_bytes: int
    max_per_holder: int
    held_bytes: int = 0
    per_holder: Counter[str] = field(default_factory=Counter)
    retry_after: RetryAfter = field(default_factory=RetryAfter)

    def hold(self, size: int, what: str, field_name: str | None = None) -> Holding:
        """A holding of ``size`` bytes for the request's key, or the refusal: 413 when it
        alone exceeds ``max_bytes``, 429 when it does not fit now. ``what`` says in the
        message what would be held; ``field_name`` is the field named."""
        who = current_holder()
        if size > self.max_bytes:
            raise TooLarge(
                f"{what} would hold {size} bytes, more than max_held_bytes={self.max_bytes}; "
                "send less",
                kind=ErrorKind.PAYLOAD_TOO_LARGE,
                field=field_name or "max_held_bytes",
            )
        if self.per_holder[who] >= self.max_per_holder:
            raise self._busy(
                f"this API key already holds {self.per_holder[who]} jobs, sessions and held "
                f"requests, max_held_per_key={self.max_per_holder}",
                "max_held_per_key",
            )
        if self.held_bytes + size > self.max_bytes:
            raise self._busy(
                f"held work takes {self.held_bytes} bytes and {what} needs {size} more, over "
                f"max_held_bytes={self.max_bytes}",
                "max_held_bytes",
            )
        self.held_bytes += size
        self.per_holder[who] += 1
        return Holding(self, who, size)

    def _busy(self, why: str, field_name: str) -> Unavailable:
        wait = self.retry_after()
        message = f"{why}; retry after {wait} s"
        return Unavailable(message, kind=ErrorKind.OVERLOADED, field=field_name, retry_after=wait)

    def _give_back(self, holding: Holding) -> None:
        self.held_bytes -= holding.size
        self.per_holder[holding.holder] -= 1
        if self.per_holder[holding.holder] <= 0:
            del self.per_holder[holding.holder]


__all__ = ["TASK_CHARGE_BYTES", "Holding", "Ledger", "held_size"]
