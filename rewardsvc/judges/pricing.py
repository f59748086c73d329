"""What a judge call cost: the tokens its replies counted, priced by the judge's table.

A call may take several replies (a retry after a malformed 200 was billed too), and only
the backend sees them all; only the judge knows which verdict they belong to. So the
judge opens a :func:`metering` block around each call, the backend :func:`record`\\ s the
``usage`` of every 2xx reply into the block's :class:`Meter` (a context variable: the
call's own task and the tasks it starts share it), and :func:`priced` puts the cached
tokens and the cost on the call's verdict. Cached prompt tokens are read from OpenAI's
``usage.prompt_tokens_details.cached_tokens``; a reply without it has none.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, replace
from typing import Any

from rewardsvc.core.pool import Prices
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.usage import read_usage


@dataclass
class Meter:
    """The tokens the replies of one judge call counted."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    replies: int = 0

    def cost(self, prices: Prices) -> float:
        """These replies' price at ``prices``."""
        return prices.cost(self.prompt_tokens, self.cached_tokens, self.completion_tokens)


_current: contextvars.ContextVar[Meter | None] = contextvars.ContextVar(
    "rewardsvc_judge_meter", default=None
)


def reply_tokens(reply: Any) -> tuple[int, int, int]:
    """``(prompt, cached prompt, completion)`` tokens of a reply's ``usage``, as
    :func:`~rewardsvc.judges.usage.read_usage` reads them (zeros when it has none)."""
    counted = read_usage(reply)
    return counted.prompt, counted.cached, counted.completion


def record(tokens: tuple[int, int, int]) -> None:
    """Count one 2xx reply's tokens in the current call's meter (none open: nothing)."""
    meter = _current.get()
    if meter is None:
        return
    meter.prompt_tokens += tokens[0]
    meter.cached_tokens += tokens[1]
    meter.completion_tokens += tokens[2]
    meter.replies += 1


class _Metering:
    """The block of :func:`metering` (a class: it opens around every judge call, and a
    generator-based context manager costs several times as much)."""

    __slots__ = ("_token",)

    def __enter__(self) -> Meter:
        meter = Meter()
        self._token = _current.set(meter)
        return meter

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._token)


def metering() -> contextlib.AbstractContextManager[Meter]:
    """Meter the replies of the judge call made inside the block."""
    return _Metering()


def priced(verdict: Verdict, meter: Meter, prices: Prices | None) -> Verdict:
    """``verdict`` with the metered cached tokens and, when the judge has ``prices``, the
    cost of every reply of its call (a failed call that got no reply costs 0)."""
    if prices is None and meter.cached_tokens == 0:
        return verdict
    cost = None if prices is None else meter.cost(prices)
    return replace(verdict, cached_tokens=meter.cached_tokens, cost=cost)
