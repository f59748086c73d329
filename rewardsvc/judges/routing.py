"""Which base URL of a judge a call goes to: prefix-affine, load-bounded, breaker-aware.

The K criterion calls of one item share their whole prompt up to the last lines (see
``rewardsvc.judges.prompts``), the items of one task (a GRPO group: several completions
of one prompt) share it up to the completion, and vLLM reuses a prefix only on the
replica that computed it. So a call carrying an :class:`Affinity` (``Prompt.affinity``)
goes to the endpoint chosen by rendezvous (highest-random-weight) hashing of its
``group`` key (a digest of the rubric's part and the task) over the endpoints' URLs:
every item of the task prefers the same replica, different tasks spread evenly, and
adding or losing a replica moves only the tasks that hashed to it.

Two things override the hash, in this order:

- **load**: an endpoint with more calls in flight than :func:`load_limit` (the mean in
  flight times ``load_factor``, plus one) is passed over for the next endpoint in the
  key's rendezvous order, as in consistent hashing with bounded loads; so one hot replica
  cannot queue calls while another idles. The bound places an item, not each of its
  calls: an item that already has an endpoint (``pinned``, the one its latest call went
  to, which the caller remembers by the ``item`` key) keeps it whatever its load, since
  that is where the item's prefix is cached and a spilled call would prefill it again
  elsewhere. So a task's items gather on one replica while it has room, and a burst of
  them spreads item by item, each item's calls together;
- **failure**: a retry prefers any endpoint but the ones that failed earlier in the same
  call, and an endpoint whose circuit breaker refuses is skipped (:func:`pick`).

A call without a key (or a judge configured ``routing: round_robin``) takes the
endpoints in round-robin order from a cursor the caller keeps. Everything here is pure:
the caller (``rewardsvc.judges.backends``) owns the counts, the cursor, the pins and the
breakers.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Affinity:
    """Where a call would rather go: ``item`` is the same for every call of one item (or
    of one trajectory's steps) and pins them to one replica; ``group`` is the same for
    every item of one task and ranks the replicas for an item's first call."""

    item: str
    group: str


def affinity_key(*parts: str) -> str:
    """A short digest of ``parts`` (length-prefixed, so no two part lists collide)."""
    h = hashlib.blake2b(digest_size=8)
    for part in parts:
        data = part.encode()
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def weight(key: str, url: str) -> int:
    """The rendezvous weight of ``url`` for ``key``: a 64-bit hash of both."""
    digest = hashlib.blake2b(f"{url}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


# Orders kept: the K criterion calls of an item share its key, so all but the first
# reuse the order (one hash per URL each, otherwise); the least recently used go first.
ORDERS_KEPT = 4096


@functools.lru_cache(maxsize=ORDERS_KEPT)
def _ranked(key: str, urls: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(sorted(range(len(urls)), key=lambda i: weight(key, urls[i]), reverse=True))


def rendezvous(key: str, urls: Sequence[str]) -> list[int]:
    """Indices of ``urls`` from the highest weight for ``key`` to the lowest."""
    return list(_ranked(key, tuple(urls)))


def load_limit(in_flight: Sequence[int], load_factor: float) -> int:
    """Most calls an endpoint may have in flight and still take a keyed call:
    ``ceil(load_factor * mean + 1)``, the mean taken before the call. The ``+ 1`` keeps
    an idle judge affine: on two idle replicas at the default factor (1.25) the first six
    calls of one item all reach the same one."""
    mean = sum(in_flight) / len(in_flight) if in_flight else 0.0
    return math.ceil(load_factor * mean + 1)


def preference(
    key: str | None,
    urls: Sequence[str],
    in_flight: Sequence[int],
    *,
    load_factor: float,
    cursor: int = 0,
    avoid: Collection[int] = (),
    pinned: int | None = None,
) -> list[int]:
    """Every endpoint index, in the order a call should try them.

    With a ``key``: the ``pinned`` endpoint (where the key's calls went so far) first,
    then rendezvous order; without a pin, rendezvous order with the endpoints over
    :func:`load_limit` moved after the others (keeping their order). Without a key: round
    robin from ``cursor``. Either way the ``avoid`` indices (endpoints that failed earlier
    in this call) come last, so a retry goes elsewhere whenever anywhere else exists.
    """
    n = len(urls)
    if key is None:
        order = [(cursor + i) % n for i in range(n)]
    elif pinned is not None:
        order = [pinned] + [i for i in rendezvous(key, urls) if i != pinned]
    else:
        order = rendezvous(key, urls)
        limit = load_limit(in_flight, load_factor)
        order = [i for i in order if in_flight[i] <= limit] + [
            i for i in order if in_flight[i] > limit
        ]
    return [i for i in order if i not in avoid] + [i for i in order if i in avoid]


def pick(order: Sequence[int], allow: Callable[[int], bool]) -> int | None:
    """The first index of ``order`` that ``allow`` (the endpoint's breaker) lets through,
    or None when every one refuses. ``allow`` is asked in order and no further than the
    pick, since asking a half-open breaker reserves its probe."""
    for i in order:
        if allow(i):
            return i
    return None
