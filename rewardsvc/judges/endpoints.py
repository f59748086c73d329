"""The base URLs of one judge's backend: each URL's client and circuit breaker, and the
routing memory of where each recent item's calls went (``rewardsvc.judges.routing``).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from rewardsvc.core.observe import Observer
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.judges.breaker import BreakerPolicy, BreakerState, CircuitBreaker
from rewardsvc.judges.transport import JudgeTransport

# Affinity keys whose endpoint a backend remembers, the least recently used forgotten
# first: far more than the items in flight at once, at a few dozen bytes each.
PINS_KEPT = 16_384


@dataclass
class Endpoint:
    """One base URL of a judge: its client, its breaker, a count of calls sent to it
    and of those still in flight (what bounds the load in routing)."""

    url: str
    client: JudgeTransport
    breaker: CircuitBreaker
    calls: int = field(default=0)
    in_flight: int = field(default=0)


def _report_breaker(observer: Observer, judge: str, url: str, state: BreakerState) -> None:
    """Tell ``observer`` whether the breaker of ``judge``'s ``url`` is now open."""
    observer.breaker(judge, url, state == "open")


def open_endpoint(
    name: str,
    url: str,
    config: JudgeConfig,
    breaker: BreakerPolicy,
    clock: Callable[[], float],
    observer: Observer,
) -> Endpoint:
    """Judge ``name``'s endpoint at ``url``: its client sized to the judge's concurrency and
    its breaker, reported to ``observer`` (closed, to begin with)."""
    # The total of each attempt is bounded in ``Backend._send_to`` (a probe's, in
    # ``Backend._models``); the transport bounds the connect.
    client = JudgeTransport(
        url, max_connections=config.max_concurrency, connect_s=min(5.0, config.timeout_s)
    )
    observer.breaker(name, url, False)
    on_change = functools.partial(_report_breaker, observer, name, url)
    return Endpoint(
        url=url,
        client=client,
        breaker=CircuitBreaker(
            breaker.threshold, breaker.cooldown_s, clock=clock, on_change=on_change
        ),
    )


class Pins:
    """Where the latest call of each recent item (its affinity's item key) went, the least
    recently used forgotten first (routing's ``pinned``)."""

    def __init__(self) -> None:
        self._where: OrderedDict[str, int] = OrderedDict()

    def get(self, key: str) -> int | None:
        """The endpoint index ``key``'s latest call went to, if remembered."""
        return self._where.get(key)

    def pin(self, key: str, index: int) -> None:
        """Remember that ``key``'s latest call went to endpoint ``index``: its next calls
        follow, so an item's calls meet where its prefix is cached even when they reach
        the backend far apart (queued for a slot, or the steps of a long trajectory)."""
        self._where[key] = index
        self._where.move_to_end(key)
        if len(self._where) > PINS_KEPT:
            self._where.popitem(last=False)
