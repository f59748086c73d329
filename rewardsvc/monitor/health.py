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


def measure(window: Iterable[Observed], config: HealthConfig) -> Health:
    """Rubric health over ``window`` (its ok samples and the groups they carry)."""
    ok = [s for s in window if s.status == "ok"]
    groups = [s.group for s in ok if s.group is not None]
    columns: dict[str, list[float]] = {}
    for s in ok:
        for cid, score in s.scores:
            # Not setdefault: it would build a list for every score (this runs for every
            # score in the window at every evaluation).
            column = columns.get(cid)
            if column is None:
                columns[cid] = [score]
            else:
                column.append(score)
    within: dict[str, list[float]] = {}
    for g in groups:
        for cid, variance in g.variances:
            within.setdefault(cid, []).append(variance)
    kept = None  # every criterion, unless there are more than MAX_CRITERIA
    if len(columns) > MAX_CRITERIA:
        kept = set(sorted(columns, key=lambda c: len(columns[c]), reverse=True)[:MAX_CRITERIA])
    criteria = []
    for cid, scores in columns.items():
        if kept is not None and cid not in kept:
            continue
        rate = sum(scores) / len(scores)
        saturated: Saturation | None = None
        if len(scores) >= config.min_samples:
            if rate >= config.saturated_high:
                saturated = "high"
            elif rate <= config.saturated_low:
                saturated = "low"
        spreads = within.get(cid, [])
        criteria.append(
            CriterionHealth(cid, len(scores), rate, saturated, stats.mean(spreads), len(spreads))
        )
    flat = sum(g.spread <= config.epsilon for g in groups)
    return Health(len(ok), len(groups), flat, tuple(criteria))


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
