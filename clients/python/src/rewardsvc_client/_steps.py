"""One implementation for blocking and asyncio callers: logic written as a generator of steps.

Retries, backoff and re-sends are written once, as a generator that yields what it needs done
and gets the outcome sent back in; ``run_sync`` and ``run_async`` are the only places that
know whether that happens blocking or in an event loop. A step is either a number (seconds to
wait; ``None`` comes back) or a request that the caller's ``perform`` function carries out
(its answer comes back, or the exception it raised is thrown into the generator at the
``yield``, where the logic may catch it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

T = TypeVar("T")
S = TypeVar("S")

Steps = Generator[S | float, Any, T]
"""Yields requests of type ``S`` or seconds to wait; returns ``T``."""


def run_sync(steps: Steps[S, T], perform: Callable[[S], Any]) -> T:
    """Drive ``steps`` to its result, blocking: sleep its waits, ``perform`` its requests."""
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            result: T = done.value
            return result
        reply = error = None
        if isinstance(step, float | int):
            time.sleep(step)
            continue
        try:
            reply = perform(step)
        except Exception as exc:  # handed to the logic, which re-raises what it does not handle
            error = exc


async def run_async(steps: Steps[S, T], perform: Callable[[S], Awaitable[Any]]) -> T:
    """Drive ``steps`` to its result in the running event loop; see ``run_sync``."""
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            result: T = done.value
            return result
        reply = error = None
        if isinstance(step, float | int):
            await asyncio.sleep(step)
            continue
        try:
            reply = await perform(step)
        except Exception as exc:  # handed to the logic, which re-raises what it does not handle
            error = exc
