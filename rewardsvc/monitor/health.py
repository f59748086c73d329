"""Rubric health: does the rubric still tell the completions of a prompt apart?

GRPO's advantage is a completion's reward minus its group's mean, so a group whose rewards
are all equal teaches nothing; a criterion that (nearly) every completion passes, or none
does, adds nothing to any group's spread. Three figures over a run's rolling window, from
``ok`` rewards only (a failure is never a number):

- the **zero-spread share**: of the groups (two or more ok items of one prompt in one
  batch, or one group of ``POST /v1/groups``), those whose rewards spread (max - min) by at
  most ``epsilon``;
- per criterion, the **pass rate** (its mean score) and whether it is **saturated** (at or
  beyond ``saturated_high`` / ``saturated_low`` over at least ``min_samples`` scores);
- per criterion, the **discrimination**: the mean, over groups, of the criterion's
  variance within the group (0 when every completion of a prompt scores alike on it).

A criterion is what its rubric says it is: a criterion of an item's own rubric (per-prompt
rubrics) is keyed by its id and that rubric's version (:func:`criterion_key`), so that it
never counts as the run's rubric's criterion of the same id, nor as another prompt's.

A group is summarized once, when its batch is observed (:func:`group_of`), and travels
with the first sample of the group in the window: a group counts while that sample is in
the window, and the replicas' shared window carries it like any other sample.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol

from rewardsvc.core.monitor_spec import HealthConfig
from rewardsvc.monitor import stats

Saturation = Literal["high", "low"]
MAX_CRITERIA = 48
"""Criteria a run's health reports at most (the most scored in the window): a window of
per-item rubrics may hold many criterion ids, and the health must stay small."""
VERSION_CHARS = 12
"""Hex digits of an item rubric's version in its criteria's keys (:func:`criterion_key`)."""


def criterion_key(criterion: str, version: str | None) -> str:
    """What the monitor files a criterion's scores under: its id for a criterion of the
    run's rubric, else (``version``: an item scored with its own rubric) the id with that
    rubric's version, ``correct@1a2b3c4d``. An item's own ``correct`` ("The response
    rhymes.") is another criterion than the rubric's ``correct``: never counted as it."""
    if version is None:
        return criterion
    return f"{criterion}@{version.rpartition(':')[2][:VERSION_CHARS]}"


@dataclass(frozen=True, slots=True)
class GroupStat:
    """One group's summary: its ok items, the spread of their rewards, and each criterion's
    variance within the group (criteria that two or more of its items were scored on)."""

    size: int
    spread: float
    variances: tuple[tuple[str, float], ...] = ()

    def encode(self) -> list[Any]:
        """As a JSON value (the shared store's samples carry it)."""
        return [self.size, self.spread, [list(v) for v in self.variances]]

    @classmethod
    def decode(cls, raw: Sequence[Any]) -> GroupStat:
        """The group of :meth:`encode`."""
        size, spread, variances = raw
        return cls(int(size), float(spread), tuple((str(c), float(v)) for c, v in variances))


def group_of(rewards: Sequence[float], scores: Sequence[Mapping[str, float]]) -> GroupStat:
    """The summary of a group of two or more ok items: their rewards and, per item, its
    criteria's scores."""
    columns: dict[str, list[float]] = {}
    for item in scores:
        for cid, score in item.items():
            columns.setdefault(cid, []).append(score)
    variances = tuple(
        (cid, (stats.sd(values) or 0.0) ** 2) for cid, values in columns.items() if len(values) > 1
    )
    return GroupStat(len(rewards), max(rewards) - min(rewards), variances)


class Observed(Protocol):
    """What rubric health reads of a sample (the monitor's :class:`~.runs.Sample`)."""

    @property
    def status(self) -> str: ...
    @property
    def scores(self) -> tuple[tuple[str, float], ...]: ...
    @property
    def group(self) -> GroupStat | None: ...


@dataclass(frozen=True, slots=True)
class CriterionHealth:
    """One criterion over the window."""

    criterion: str
    samples: int
    pass_rate: float
    saturated: Saturation | None
    discrimination: float | None
    groups: int


@dataclass(frozen=True)
class Health:
    """A run's rubric health over its window."""

    samples: int
    groups: int
    zero_spread_groups: int
    criteria: tuple[CriterionHealth, ...] = ()

    @property
    def zero_spread_share(self) -> float | None:
        """The share of groups with zero spread (None without groups)."""
        return self.zero_spread_groups / self.groups if self.groups else None

    def saturated(self, exempt: Iterable[str] = ()) -> tuple[str, ...]:
        """The saturated criteria, leaving out ``exempt``."""
        skip = set(exempt)
        return tuple(c.criterion for c in self.criteria if c.saturated and c.criterion not in skip)

    def report(self) -> dict[str, Any]:
        """The figures as the monitor's route shows them (``HealthOut``), ``rewardsvc
        rubrics health`` prints them and the shared store keeps them."""
        return {
            "samples": self.samples,
            "groups": self.groups,
            "zero_spread_groups": self.zero_spread_groups,
            "zero_spread_share": self.zero_spread_share,
            "saturated": list(self.saturated()),
            "criteria": [asdict(c) for c in self.criteria],
        }

    @classmethod
    def from_report(cls, raw: Mapping[str, Any]) -> Health:
        """The health of :meth:`report` (the shared store keeps the latest report)."""
        criteria = tuple(CriterionHealth(**c) for c in raw.get("criteria", []))
        return cls(
            int(raw["samples"]), int(raw["groups"]), int(raw["zero_spread_groups"]), criteria
        )


class _Column:
    """One criterion's entries in a window, oldest first: its scores (or variances) and the
    number of each entry in the order the window's entries arrived."""

    __slots__ = ("numbers", "values")

    def __init__(self) -> None:
        self.values: deque[float] = deque()
        self.numbers: deque[int] = deque()


class Inputs:
    """What :func:`measure` reads of a window, kept as its ok samples enter and leave it.

    A run measures its health every few samples over its whole window: gathering every
    score of the window again each time cost more than the measure itself. Each criterion's
    scores are kept in window order (first in, first out), so that a pass rate sums the
    same floats in the same order as gathering them afresh; the number of a column's oldest
    entry gives the criteria their order of first appearance in the window.
    """

    def __init__(self) -> None:
        self.samples = 0
        self.scores: dict[str, _Column] = {}
        self.variances: dict[str, _Column] = {}
        self.spreads: deque[float] = deque()
        self._entries = 0

    @classmethod
    def of(cls, samples: Iterable[Observed]) -> Inputs:
        """The inputs of ``samples``, oldest first."""
        inputs = cls()
        for sample in samples:
            inputs.add(sample)
        return inputs

    def add(self, sample: Observed) -> None:
        """Take in the newest sample."""
        if sample.status != "ok":
            return
        self.samples += 1
        self._push(self.scores, sample.scores)
        if sample.group is not None:
            self.spreads.append(sample.group.spread)
            self._push(self.variances, sample.group.variances)

    def remove(self, sample: Observed) -> None:
        """Let the oldest sample go (it was taken in)."""
        if sample.status != "ok":
            return
        self.samples -= 1
        _pop(self.scores, sample.scores)
        if sample.group is not None:
            self.spreads.popleft()
            _pop(self.variances, sample.group.variances)

    def _push(self, columns: dict[str, _Column], entries: Iterable[tuple[str, float]]) -> None:
        for cid, value in entries:
            column = columns.get(cid)
            if column is None:
                column = columns[cid] = _Column()
            column.values.append(value)
            column.numbers.append(self._entries)
            self._entries += 1

    def criteria(self) -> list[tuple[str, deque[float]]]:
        """Each criterion's scores, in the order criteria first appear in the window."""
        ordered = sorted(self.scores.items(), key=lambda item: item[1].numbers[0])
        return [(cid, column.values) for cid, column in ordered]


def _pop(columns: dict[str, _Column], entries: Iterable[tuple[str, float]]) -> None:
    """Drop the oldest entry of each criterion of ``entries``, and a column left empty."""
    for cid, _ in entries:
        column = columns[cid]
        column.values.popleft()
        column.numbers.popleft()
        if not column.values:
            del columns[cid]


def measure(
    window: Iterable[Observed], config: HealthConfig, inputs: Inputs | None = None
) -> Health:
    """Rubric health over ``window`` (its ok samples and the groups they carry);
    ``inputs``: those of ``window`` when kept (:class:`~.window.Window`)."""
    kept = Inputs.of(window) if inputs is None else inputs
    columns = kept.criteria()
    if len(columns) > MAX_CRITERIA:
        # The most scored (ties: the first to appear, the sort being stable), in their order.
        most = sorted(columns, key=lambda column: len(column[1]), reverse=True)
        chosen = {cid for cid, _ in most[:MAX_CRITERIA]}
        columns = [column for column in columns if column[0] in chosen]
    criteria = []
    for cid, scores in columns:
        rate = sum(scores) / len(scores)
        saturated: Saturation | None = None
        if len(scores) >= config.min_samples:
            if rate >= config.saturated_high:
                saturated = "high"
            elif rate <= config.saturated_low:
                saturated = "low"
        within = kept.variances.get(cid)
        spreads = within.values if within is not None else ()
        criteria.append(
            CriterionHealth(cid, len(scores), rate, saturated, stats.mean(spreads), len(spreads))
        )
    flat = sum(spread <= config.epsilon for spread in kept.spreads)
    return Health(kept.samples, len(kept.spreads), flat, tuple(criteria))


def breach(health: Health, config: HealthConfig) -> tuple[float, tuple[str, ...]] | None:
    """The ``non_discriminative`` alert's value and the saturated criteria it names, or None
    while neither part has evidence enough (fewer than ``min_groups`` groups and no
    criterion with ``min_samples`` scores).

    The value is the larger of two ratios, each 1 at its threshold: the zero-spread share
    over ``zero_spread_share``, and the saturated criteria (not exempt) over
    ``saturated_criteria``; the alert breaches at 1.
    """
    saturated = health.saturated(config.exempt)
    enough_groups = health.groups >= config.min_groups
    if not enough_groups and not any(c.samples >= config.min_samples for c in health.criteria):
        return None
    flat = health.zero_spread_groups / health.groups if enough_groups else 0.0
    return max(
        flat / config.zero_spread_share, len(saturated) / config.saturated_criteria
    ), saturated
