"""Golden re-scores: per judge, accuracy and agreement with the labels, drift from its baseline.

:class:`GoldenBoard` keeps, per (rubric, judge), the answers of the judge's first re-score
of the golden set in this process (its baseline) and each later re-score's report:

- ``accuracy``: the share of labels the judge's answer matches (P(yes) read at 0.5);
- ``agreement``: the mean probability the judge gives to the labelled answer (1 - |p - label|),
  which, unlike accuracy, sees a judge grow unsure before it flips;
- ``shift``: the mean, over the set's (item, criterion) answers, of |P(yes) now - P(yes) at
  baseline|. Few samples suffice (one answer per golden question) and one wild answer moves
  it by at most 1/n. At or above the set's ``max_shift`` the ``golden:<judge>`` alert fires;
  it resolves at the first re-score below.

It also keeps each judge's identity (its configured model and revision, and what its
endpoint reports: ``GET /v1/models`` id, root and ``max_model_len``); a change raises the
``judge_identity:<judge>`` alert and marks the runs of the judge's rubrics.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from rewardsvc.core.results import BatchResult
from rewardsvc.monitor.alerts import AlertEvent, Transition
from rewardsvc.monitor.golden_set import GoldenSet

GOLDEN_RUN = "golden"
"""The ``run`` of golden and identity alert events (as ``canary`` is the canaries')."""
GOLDEN_HISTORY = 256
MAX_GOLDEN_RECORDS = 1024

Key = tuple[str, str]
"""(item id, criterion id); criterion ``""`` is the judge's score of the whole item."""


def answers(result: BatchResult, judge: str) -> dict[Key, float]:
    """The judge's answers in a scored golden batch: P(yes) per (item, criterion), and its
    score of each item under criterion ``""`` (its own score, before flag penalties)."""
    out: dict[Key, float] = {}
    for item in result.items:
        outcome = item.judges.get(judge)
        if outcome is None:
            continue
        for criterion, verdict in outcome.criteria.items():
            if verdict.score is not None:
                out[(item.id, criterion)] = verdict.score
        if outcome.score is not None:
            out[(item.id, "")] = outcome.score
    return out


def labels(golden: GoldenSet) -> dict[Key, bool]:
    """The set's labels by (item, criterion); an item's own label under criterion ``""``."""
    out: dict[Key, bool] = {}
    for item in golden.items:
        out.update({(item.id, c): v for c, v in item.labels.items()})
        if item.label is not None:
            out[(item.id, "")] = item.label
    return out


def accuracy_agreement(
    scores: Mapping[Key, float], truth: Mapping[Key, bool]
) -> tuple[float | None, float | None]:
    """(accuracy, agreement) of ``scores`` against the labels they answer (None: none)."""
    known = [(scores[k], label) for k, label in truth.items() if k in scores]
    if not known:
        return None, None
    hits = sum((p >= 0.5) == label for p, label in known)
    agree = sum(p if label else 1.0 - p for p, label in known)
    return hits / len(known), agree / len(known)


def drift_keys(scores: Mapping[Key, float]) -> list[Key]:
    """The answers the shift is measured on: the criteria, or each item's score when the
    rubric asks no criterion separately (a holistic judge)."""
    criteria = [k for k in scores if k[1]]
    return criteria or list(scores)


def mean_shift(now: Mapping[Key, float], baseline: Mapping[Key, float]) -> float | None:
    """Mean |P(yes) now - P(yes) at baseline| over the answers both have (None: none)."""
    common = [k for k in drift_keys(now) if k in baseline]
    if not common:
        return None
    return sum(abs(now[k] - baseline[k]) for k in common) / len(common)


@dataclass
class GoldenRecord:
    """One judge on one rubric's golden set: its baseline and its latest re-score."""

    rubric: str
    judge: str
    max_shift: float
    baseline: dict[Key, float] = field(default_factory=dict)
    baseline_time: float | None = None
    rescores: int = 0
    time: float | None = None
    answered: int = 0
    """Golden items the judge scored at the latest re-score (of ``expected``)."""
    expected: int = 0
    accuracy: float | None = None
    agreement: float | None = None
    shift: float | None = None
    alert: bool = False
    since: float | None = None
    history: deque[tuple[float, float | None, float | None, float | None]] = field(
        default_factory=lambda: deque(maxlen=GOLDEN_HISTORY)
    )
    """(time, accuracy, agreement, shift) of each re-score."""


@dataclass
class IdentityRecord:
    """What a judge is, as last read, and its previous identity when it changed."""

    judge: str
    identity: dict[str, str]
    checked: float
    previous: dict[str, str] | None = None
    changed: float | None = None
    alert: bool = False
    rubrics: tuple[str, ...] = ()
    """The rubrics its alert was raised for (the judge's, when it changed)."""


MarkRuns = Callable[[Iterable[str], str, float], None]
"""Puts a named mark on the timeline of every run of the given rubrics."""


class GoldenBoard:
    """The golden records and judge identities of one process, bounded in memory."""

    def __init__(
        self,
        emit: Callable[[AlertEvent], None],
        mark_runs: MarkRuns,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._emit, self._mark_runs, self.clock = emit, mark_runs, clock
        self._records: OrderedDict[tuple[str, str], GoldenRecord] = OrderedDict()
        self._identities: dict[str, IdentityRecord] = {}

    def record(self, golden: GoldenSet, judge: str, result: BatchResult) -> GoldenRecord:
        """Count one re-score of ``golden`` by ``judge``: the first one (or the first after
        :meth:`rebaseline`) is the baseline; later ones are compared with it."""
        now = self.clock()
        rec = self._record_of(golden, judge)
        scores = answers(result, judge)
        truth = labels(golden)
        rec.rescores += 1
        rec.time, rec.expected = now, len(golden.items)
        rec.answered = len({item for item, criterion in scores if not criterion})
        rec.accuracy, rec.agreement = accuracy_agreement(scores, truth)
        rec.shift = mean_shift(scores, rec.baseline) if rec.baseline else None
        if rec.baseline_time is None and scores:
            rec.baseline_time = now
        for key, p in scores.items():  # answers missing from the baseline (a failed call)
            rec.baseline.setdefault(key, p)
        rec.history.append((now, rec.accuracy, rec.agreement, rec.shift))
        if rec.shift is not None:
            self._judge_drift(rec, rec.shift >= rec.max_shift, now)
        return rec

    def rebaseline(self, rubric: str | None = None, judge: str | None = None) -> int:
        """Forget the baselines (and resolve the alerts) of the matching records, and the
        identity alerts of ``judge`` (or every judge): an operator accepting a change.
        Returns how many golden records were reset."""
        now = self.clock()
        reset = 0
        for rec in self._records.values():
            if (rubric is None or rec.rubric == rubric) and (judge is None or rec.judge == judge):
                rec.baseline, rec.baseline_time, rec.shift = {}, None, None
                self._judge_drift(rec, False, now)
                reset += 1
        for ident in self._identities.values():
            if (judge is None or ident.judge == judge) and ident.alert:
                self._identity_alert(ident, "resolved", now)
        return reset

    def identify(
        self, judge: str, identity: Mapping[str, str] | None, rubrics: Iterable[str]
    ) -> bool:
        """Record what ``judge`` is now (None: its endpoint did not say; nothing is
        recorded). A change from what was recorded before raises the identity alert and
        marks the runs of ``rubrics``; returns True then."""
        if identity is None:
            return False
        now = self.clock()
        current = dict(identity)
        known = self._identities.get(judge)
        if known is None:
            self._identities[judge] = IdentityRecord(judge, current, now)
            return False
        known.checked = now
        if known.identity == current:
            return False
        known.previous, known.identity, known.changed = known.identity, current, now
        changed = ", ".join(
            f"{k}: {known.previous.get(k)} -> {current.get(k)}"
            for k in sorted(set(current) | set(known.previous))
            if current.get(k) != known.previous.get(k)
        )
        self._mark_runs(rubrics, f"{judge} changed ({changed})", now)
        if not known.alert:
            known.rubrics = tuple(sorted(set(rubrics))) or ("*",)
            self._identity_alert(known, "firing", now)
        return True

    def records(self, rubric: str | None = None) -> list[GoldenRecord]:
        """The golden records, optionally of one rubric, in a stable order."""
        return sorted(
            (r for r in self._records.values() if rubric is None or r.rubric == rubric),
            key=lambda r: (r.rubric, r.judge),
        )

    def identities(self) -> list[IdentityRecord]:
        """Every judge identity read, by judge name."""
        return [self._identities[j] for j in sorted(self._identities)]

    def _record_of(self, golden: GoldenSet, judge: str) -> GoldenRecord:
        key = (golden.rubric, judge)
        rec = self._records.get(key)
        if rec is None:
            rec = self._records[key] = GoldenRecord(golden.rubric, judge, golden.max_shift)
            while len(self._records) > MAX_GOLDEN_RECORDS:
                self._records.popitem(last=False)
        rec.max_shift = golden.max_shift
        return rec

    def _identity_alert(self, ident: IdentityRecord, state: Transition, now: float) -> None:
        """The identity alert of ``ident`` fired or resolved, once per rubric of the judge
        (``*`` for a judge no golden rubric names)."""
        ident.alert = state == "firing"
        for rubric in ident.rubrics:
            name = f"judge_identity:{ident.judge}"
            self._emit(AlertEvent(rubric, GOLDEN_RUN, name, state, now, 0, 1.0, 1.0))

    def _judge_drift(self, rec: GoldenRecord, breached: bool, now: float) -> None:
        if breached == rec.alert:
            return
        rec.alert, rec.since = breached, now
        state: Transition = "firing" if breached else "resolved"
        value = rec.shift if rec.shift is not None else 0.0
        self._emit(
            AlertEvent(
                rec.rubric,
                GOLDEN_RUN,
                f"golden:{rec.judge}",
                state,
                now,
                rec.rescores,
                value,
                rec.max_shift,
            )
        )
