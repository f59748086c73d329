"""The escalation share of a run scored with a cascaded rubric (``core.cascade``).

A cascade's cheap stage decides the questions it is sure of; the share it passes on to
later stages is what the run costs, and a policy drifting into the uncertain band moves
it. :class:`Escalation` counts, per run, the questions each item's cascade row answered
and how many of them a later stage decided (``CriterionOutcome.stage`` above 1), over the
run's rolling window and over its first ``baseline`` items. Its signals join the run's:
``escalation_share`` (the window's) and ``escalation_shift`` (how far it moved from the
baseline's, either way), whose default rule (``core.monitor_spec``) alerts past 0.15
(a rubric's ``monitor.rules`` may set another). Counted in each replica's own process
(a shared monitor merges the other signals, not this one).
"""

from __future__ import annotations

from collections import deque

from rewardsvc.core.results import ItemReward


def escalated(item: ItemReward) -> tuple[int, int]:
    """The questions ``item``'s cascade row answered, and how many a later stage decided
    ((0, 0) for an item scored without a cascade)."""
    stages = [c.stage for j in item.judges.values() for c in j.criteria.values()]
    decided = [s for s in stages if s is not None]
    return len(decided), sum(s > 1 for s in decided)


class Escalation:
    """One run's escalation counts: a rolling window of ``window`` items and the first
    ``baseline`` items that answered any cascaded question."""

    def __init__(self, window: int, baseline: int) -> None:
        self.window: deque[tuple[int, int]] = deque(maxlen=window)
        self.baseline: list[tuple[int, int]] = []
        self.baseline_size = baseline

    def add(self, item: ItemReward) -> None:
        """Count one scored item (nothing for one without a cascade)."""
        counts = escalated(item)
        if counts[0] == 0:
            return
        self.window.append(counts)
        if len(self.baseline) < self.baseline_size:
            self.baseline.append(counts)

    def signals(self) -> dict[str, float | None]:
        """``escalation_share`` and ``escalation_shift`` (None until the baseline is
        complete); nothing for a run that answered no cascaded question."""
        share = _share(self.window)
        if share is None:
            return {}
        complete = len(self.baseline) >= self.baseline_size
        base = _share(self.baseline) if complete else None
        shift = None if base is None else abs(share - base)
        return {"escalation_share": share, "escalation_shift": shift}


def _share(counts: deque[tuple[int, int]] | list[tuple[int, int]]) -> float | None:
    """Escalated questions over questions, None with none."""
    asked = sum(n for n, _ in counts)
    return None if asked == 0 else sum(e for _, e in counts) / asked
