"""A run's rolling window of samples, with the counts its signals divide kept up to date.

A run is evaluated every ``eval_every`` samples over its whole window; counting every
sample's status, flags and criterion outcomes again at each evaluation cost more than the
rest of the signals together. The counts are integers, so keeping them as samples enter
and leave the window gives the very same shares as counting afresh. The window keeps
rubric health's inputs the same way (:class:`~.health.Inputs`).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Hashable, Iterable, Iterator
from itertools import chain
from operator import attrgetter
from typing import Generic, Protocol, TypeVar

from rewardsvc.monitor import stats
from rewardsvc.monitor.health import Inputs, Observed

_STATUS, _FLAGS, _PASSES = attrgetter("status"), attrgetter("flags"), attrgetter("passes")


STATUSES = ("judge_error", "degraded", "rejected")


class Counted(Protocol):
    """What the window's signals read of a sample (the monitor's :class:`~.runs.Sample`)."""

    @property
    def reward(self) -> float | None: ...
    @property
    def length(self) -> int: ...
    @property
    def disagreement(self) -> float | None: ...
    @property
    def uncertainty(self) -> float | None: ...
    @property
    def status(self) -> str: ...
    @property
    def flags(self) -> tuple[str, ...]: ...
    @property
    def passes(self) -> tuple[tuple[str, bool], ...]: ...


class Windowed(Counted, Observed, Protocol):
    """A sample as a window keeps it: counted for its signals, observed for rubric health."""


S = TypeVar("S", bound=Windowed)
K = TypeVar("K", bound=Hashable)


def _drop(counts: Counter[K], keys: Iterable[K]) -> None:
    """Count ``keys`` out of ``counts``, forgetting a key at zero (a window's keys stay the
    ones its samples carry)."""
    for key in keys:
        left = counts[key] - 1
        if left:
            counts[key] = left
        else:
            del counts[key]


class FlagTally:
    """How many of some samples carry each flag (a flag repeated in one sample counts once)."""

    def __init__(self) -> None:
        self.flags: Counter[str] = Counter()

    def add(self, sample: Counted) -> None:
        """Count ``sample`` in."""
        if sample.flags:
            self.flags.update(set(sample.flags))

    def remove(self, sample: Counted) -> None:
        """Count ``sample`` out (it was counted in)."""
        if sample.flags:
            _drop(self.flags, set(sample.flags))


class Tally(FlagTally):
    """The flags of some samples, and how many have each status and judged and passed each
    criterion (:attr:`outcomes`: each ``(criterion, passed)`` pair of their passes)."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: Counter[str] = Counter()
        self.outcomes: Counter[tuple[str, bool]] = Counter()

    @classmethod
    def of(cls, samples: Iterable[Counted]) -> Tally:
        """The counts of ``samples``, counted in one go (Counter's C loop over C iterators)."""
        tally = cls()
        listed = list(samples)
        tally.statuses.update(map(_STATUS, listed))
        tally.flags.update(chain.from_iterable(map(frozenset, map(_FLAGS, listed))))
        tally.outcomes.update(chain.from_iterable(map(_PASSES, listed)))
        return tally

    def add(self, sample: Counted) -> None:
        """Count ``sample`` in."""
        super().add(sample)
        self.statuses[sample.status] += 1
        self.outcomes.update(sample.passes)

    def remove(self, sample: Counted) -> None:
        """Count ``sample`` out (it was counted in)."""
        super().remove(sample)
        _drop(self.statuses, (sample.status,))
        _drop(self.outcomes, sample.passes)

    def judged(self, criterion: str) -> tuple[int, int]:
        """The samples that judged ``criterion``, and those of them that passed it."""
        passed = self.outcomes[(criterion, True)]
        return passed + self.outcomes[(criterion, False)], passed


class Window(Generic[S]):
    """The latest ``size`` samples with their :class:`Tally` and rubric health's
    :attr:`health_inputs`, and the flags of the latest ``tail`` of them (:attr:`tail_flags`;
    the attack flags' ceilings)."""

    def __init__(self, size: int, tail: int) -> None:
        self.size, self.tail = size, min(tail, size)
        self._samples: deque[S] = deque(maxlen=size)
        self.tally = Tally()
        self.tail_flags = FlagTally()
        self.health_inputs = Inputs()

    def append(self, sample: S) -> None:
        """Add the newest sample; the oldest leaves the window (and the tail) when full."""
        held = len(self._samples)
        if held >= self.size:
            self.tally.remove(self._samples[0])
            self.health_inputs.remove(self._samples[0])
        if held >= self.tail:
            self.tail_flags.remove(self._samples[-self.tail])
        self.tally.add(sample)
        self.health_inputs.add(sample)
        self.tail_flags.add(sample)
        self._samples.append(sample)

    def extend(self, samples: Iterable[S]) -> None:
        """Add ``samples``, oldest first."""
        for sample in samples:
            self.append(sample)

    def clear(self) -> None:
        """Empty the window."""
        self._samples.clear()
        self.tally, self.tail_flags, self.health_inputs = Tally(), FlagTally(), Inputs()

    def __iter__(self) -> Iterator[S]:
        return iter(self._samples)

    def __len__(self) -> int:
        return len(self._samples)


def compute_signals(
    samples: Iterable[Counted],
    flags: Iterable[str],
    criteria: Iterable[str],
    tally: Tally | None = None,
) -> dict[str, float | None]:
    """Every window signal over ``samples`` (drift is added by the run, which has the
    baseline); ``tally``: the counts of ``samples`` when kept (:class:`Window`)."""
    window = list(samples)
    counts = Tally.of(window) if tally is None else tally
    n = len(window)
    lengths = [float(s.length) for s in window]
    rewards: list[float] = []
    scored_lengths: list[float] = []
    for s, length in zip(window, lengths, strict=True):
        if s.reward is not None:
            rewards.append(s.reward)
            scored_lengths.append(length)
    ordered = sorted(rewards)
    out: dict[str, float | None] = {
        "reward_mean": stats.mean(rewards),
        "reward_sd": stats.sd(rewards),
        "reward_p10": stats.quantile(ordered, 0.1),
        "reward_p50": stats.quantile(ordered, 0.5),
        "reward_p90": stats.quantile(ordered, 0.9),
        "length_mean": stats.mean(lengths),
        "reward_length_corr": stats.spearman(rewards, scored_lengths),
        "judge_disagreement": stats.mean(
            [s.disagreement for s in window if s.disagreement is not None]
        ),
        "uncertainty_mean": stats.mean(
            [s.uncertainty for s in window if s.uncertainty is not None]
        ),
    }
    for status in STATUSES:
        out[f"{status}_share"] = counts.statuses[status] / n if n else None
    for flag in flags:
        out[f"flag_rate:{flag}"] = counts.flags[flag] / n if n else None
    for cid in criteria:
        seen, passed = counts.judged(cid)
        out[f"criterion_pass_rate:{cid}"] = passed / seen if seen else None
    return out
