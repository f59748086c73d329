"""A value bound to a context variable for the duration of a block.

The judges meter the replies of one call and the server keeps a held request's records
back by putting an object where code far below reads it (a ``contextvars.ContextVar``),
so that the value follows the task and its children and never leaks into other requests.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def bound(var: contextvars.ContextVar[T | None], value: T) -> Iterator[T]:
    """``var`` holds ``value`` inside the block (and the tasks it starts); after it, what
    it held before."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)
