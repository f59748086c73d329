"""A held request's tries, recorded once.

The trainer routes (``rewardsvc.server.compat``) hold a request through a judge outage:
they score its ``judge_error`` items again, several times, through the service's one
scoring path, which writes the reward log and reports every batch to the observers
(metrics and the reward monitor). Inside :func:`kept_back` those records wait instead:
each item's latest try replaces its earlier ones, and :meth:`HeldTries.record` writes
them once, when the request is answered with them. A request answered without them (a
503 that the trainer will retry) records nothing; the try that answers records it.
:class:`Attempts` counts which try of the trainer's own retry loop a request is.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsvc.core.observe import Observers
from rewardsvc.core.results import BatchResult, ItemReward, Usage
from rewardsvc.core.scoped import bound
from rewardsvc.protocol.rewards import RewardResult, RubricRef

LineSink = Callable[[RubricRef, Sequence[tuple[Any, RewardResult]], str | None], None]
"""Writes reward-log lines: the rubric, (raw item, result) pairs, the run."""
BatchSink = Callable[[str, BatchResult], None]
"""Reports a scored batch under its metrics label."""


@dataclass
class _Lines:
    sink: LineSink
    rubric: RubricRef
    run: str | None
    latest: dict[str, tuple[Any, RewardResult]] = field(default_factory=dict)


@dataclass
class _Batches:
    sink: BatchSink
    version: str
    usage: Usage = field(default_factory=Usage)
    latest: dict[str, ItemReward] = field(default_factory=dict)


class HeldTries:
    """The reward-log lines and observed batches of one held request's tries, the latest
    of each item (by id) replacing the earlier ones, until :meth:`record`."""

    def __init__(self) -> None:
        self._lines: dict[tuple[str, str | None], _Lines] = {}
        self._batches: dict[tuple[str, str, str | None], _Batches] = {}

    def keep_lines(
        self,
        sink: LineSink,
        rubric: RubricRef,
        pairs: Sequence[tuple[Any, RewardResult]],
        run: str | None,
    ) -> None:
        """Keep one try's lines back (``sink`` writes them at :meth:`record`)."""
        kept = self._lines.setdefault((rubric.id, run), _Lines(sink, rubric, run))
        kept.rubric = rubric
        for raw, result in pairs:
            kept.latest[result.id] = (raw, result)

    def keep_batch(self, sink: BatchSink, label: str, batch: BatchResult) -> None:
        """Keep one try's batch back (``sink`` reports it at :meth:`record`)."""
        key = (label, batch.rubric_id, batch.run)
        kept = self._batches.setdefault(key, _Batches(sink, batch.version))
        kept.version = batch.version
        kept.usage = kept.usage + batch.usage
        for item in batch.items:
            kept.latest[item.id] = item

    def record(self) -> None:
        """Write what was kept, each item once with its latest try (then nothing is kept)."""
        lines, batches = self._lines, self._batches
        self._lines, self._batches = {}, {}
        for kept in lines.values():
            kept.sink(kept.rubric, list(kept.latest.values()), kept.run)
        for (label, rubric_id, run), b in batches.items():
            b.sink(label, BatchResult(rubric_id, b.version, list(b.latest.values()), b.usage, run))


_current: contextvars.ContextVar[HeldTries | None] = contextvars.ContextVar(
    "rewardsvc_held_tries", default=None
)


def current() -> HeldTries | None:
    """The held request whose records are being kept back here, if any."""
    return _current.get()


@contextlib.contextmanager
def kept_back() -> Iterator[HeldTries]:
    """Keep the reward-log lines and batches of the scorings inside back (see module doc);
    what :meth:`HeldTries.record` did not write when the block ends is dropped."""
    with bound(_current, HeldTries()) as tries:
        yield tries


class HoldAwareObservers(Observers):
    """The service's observers: a batch scored inside :func:`kept_back` waits for its
    request's :meth:`HeldTries.record`; everything else goes through at once."""

    def batch(self, label: str, result: BatchResult) -> None:
        """Forward to each, now or when the held request is answered."""
        tries = _current.get()
        if tries is None:
            super().batch(label, result)
        else:
            tries.keep_batch(super().batch, label, result)


__all__ = ["HeldTries", "HoldAwareObservers", "current", "kept_back"]


RETRY_WITHIN_S = 120.0
"""How long after a refused try the trainer's retry may come (OpenRLHF waits 1 s, slime at
most 31 s between tries)."""


class Attempts:
    """Which try of the trainer's retry loop a request is.

    Neither trainer marks a retry: it sends the same body again after a try that got no
    reward. So every answer that is not a reward (a 503 after the hold, a 429, a 422)
    leaves a token for its body with its try number, and a request of that body takes the
    token with the highest number: its try is the next one; with no token it is a first
    try. Identical samples in flight at once (the copies of one prompt and completion in a
    GRPO group) are separate requests with their own counts, never one shared count.
    Tokens last ``retry_within_s``; at most ``size`` bodies are remembered.
    """

    def __init__(
        self,
        size: int = 10_000,
        retry_within_s: float = RETRY_WITHIN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.size = size
        self.retry_within_s = retry_within_s
        self.clock = clock
        self.refusals: OrderedDict[str, list[tuple[float, int]]] = OrderedDict()

    @staticmethod
    def _key(where: str, body: Any) -> str:
        text = json.dumps([where, body], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def begin(self, where: str, body: Any) -> int:
        """The try number of a request of ``body`` to ``where`` (1 for a first try)."""
        key = self._key(where, body)
        now = self.clock()
        tokens = [t for t in self.refusals.pop(key, []) if t[0] > now]
        if not tokens:
            return 1
        latest = max(tokens, key=lambda t: t[1])
        tokens.remove(latest)
        if tokens:
            self.refusals[key] = tokens
        return latest[1] + 1

    def refused(self, where: str, body: Any, tries: int) -> None:
        """The request of try ``tries`` was answered without a reward: its retry is next."""
        key = self._key(where, body)
        self.refusals.setdefault(key, []).append((self.clock() + self.retry_within_s, tries))
        self.refusals.move_to_end(key)
        while len(self.refusals) > self.size:
            self.refusals.popitem(last=False)
