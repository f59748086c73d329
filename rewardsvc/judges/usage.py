"""A judge reply's ``usage``, read in one place: every token count the service keeps of a
reply (the verdict's tokens, the call's meter and cost, the rate limiter's settling, the
reasoning count) comes from :func:`read_usage`.

A count is what the judge's server says, so it is read as untrusted: a count that is not
a number (a string, a bool, an object, NaN, an infinity) is ignored (0), a negative one
is 0, a fraction is rounded down and one above :data:`MAX_TOKENS` is cut to it. Each kind
of bad count is logged once per process (a judge that sends it sends it on every reply),
with what it was read as. What comes out is a non-negative int that every sum, price,
metric and cache entry downstream can take as it is.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

log = logging.getLogger(__name__)

MAX_TOKENS = 2**31 - 1
"""The most tokens one count of a reply is read as: far above any model's context times
any ``n``, and small enough that sums stay exact and the verdict cache stores the verdict."""

_warned: set[tuple[str, str]] = set()
"""(count, what was wrong) already logged: a few fields times a few faults."""


class ReplyUsage(NamedTuple):
    """The token counts of one reply, each a non-negative int."""

    prompt: int = 0
    cached: int = 0
    completion: int = 0
    reasoning: int = 0


def read_usage(reply: Any) -> ReplyUsage:
    """The counts of ``reply``'s ``usage`` (``prompt_tokens``,
    ``prompt_tokens_details.cached_tokens``, ``completion_tokens``,
    ``completion_tokens_details.reasoning_tokens``); 0 for a count it does not give."""
    usage = reply.get("usage") if type(reply) is dict or isinstance(reply, Mapping) else None
    if type(usage) is not dict and not isinstance(usage, Mapping):
        return ReplyUsage()
    prompt = usage.get("prompt_tokens_details")
    completion = usage.get("completion_tokens_details")
    return ReplyUsage(
        _count(usage, "prompt_tokens"),
        _count(prompt, "cached_tokens", "prompt_tokens_details."),
        _count(usage, "completion_tokens"),
        _count(completion, "reasoning_tokens", "completion_tokens_details."),
    )


def _count(counts: Any, name: str, within: str = "") -> int:
    """One count of ``counts`` (a mapping, or nothing), read as the module doc says."""
    if counts is None:
        return 0  # no ``*_details`` (most judges): not worth an isinstance against an ABC
    value = counts.get(name) if type(counts) is dict or isinstance(counts, Mapping) else None
    if type(value) is int and 0 <= value <= MAX_TOKENS:
        return value  # what nearly every reply sends (read twice per call: kept cheap)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return _bad(within + name, value, "not a number", 0)
    if value < 0:
        return _bad(within + name, value, "negative", 0)
    if value > MAX_TOKENS:
        return _bad(within + name, value, "too large", MAX_TOKENS)
    if value != int(value):
        return _bad(within + name, value, "not a whole number", int(value))
    return int(value)


def _bad(field: str, value: Any, why: str, read_as: int) -> int:
    """``read_as``, logged the first time ``field`` is wrong this way."""
    if (field, why) not in _warned:
        _warned.add((field, why))
        log.warning(
            "a judge reply's usage.%s is %s (%.80r): read as %d; later ones are not logged",
            field,
            why,
            value,
            read_as,
        )
    return read_as
