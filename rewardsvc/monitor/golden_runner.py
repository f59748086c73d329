"""The golden schedule: re-score each rubric's golden set through each of its judges.

A (rubric, judge) pair is due when it never ran, when ``interval_s`` passed since it last
ran, or (with ``every_batches``) when the monitor observed that many batches since. Each
tick re-scores the due pairs, least recently run first, within ``budget_items``; the rest
wait for the next tick. Before each re-score the judge's identity is read (and once for
every judge at start-up). :meth:`GoldenRunner.rescore` does the same on demand, one at a
time: a re-score asked while another runs is refused (:class:`GoldenBusy`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from rewardsvc.monitor.canaries import ScoreFn
from rewardsvc.monitor.golden import GoldenRecord
from rewardsvc.monitor.golden_set import GoldenSet
from rewardsvc.monitor.monitor import Monitor

log = logging.getLogger(__name__)

IdentifyFn = Callable[[str], Awaitable[Mapping[str, str] | None]]
"""A judge's identity as its pool entry and its endpoint say (None: unreachable)."""


class GoldenBusy(Exception):
    """A golden re-score is already running: one at a time."""


@dataclass(frozen=True)
class GoldenPlan:
    """What one round re-scores, and the pairs that matched but did not fit the budget."""

    pairs: list[tuple[str, str]]
    deferred: list[tuple[str, str]]


class GoldenRunner:
    """Re-scores golden sets on a schedule and on demand, bounded by an item budget."""

    def __init__(
        self,
        monitor: Monitor,
        sets: Mapping[str, GoldenSet],
        judges: Mapping[str, Sequence[str]],
        score: ScoreFn,
        identify: IdentifyFn,
        interval_s: float = 900.0,
        every_batches: int = 0,
        budget_items: int = 128,
    ) -> None:
        self.monitor, self.sets, self.judges = monitor, sets, judges
        self.score, self.identify = score, identify
        self.interval_s, self.every_batches, self.budget_items = (
            interval_s,
            every_batches,
            budget_items,
        )
        self.last_run: dict[tuple[str, str], tuple[float, int]] = {}
        """(time, monitor batches) of each pair's last re-score."""
        self._lock = asyncio.Lock()

    def plan(self, now: float, force: Callable[[str, str], bool] | None = None) -> GoldenPlan:
        """The pairs due now (or, with ``force``, those it accepts), least recently run
        first, within the item budget."""
        batches = self.monitor.batches
        candidates = []
        for rubric in sorted(self.sets):
            for judge in self.judges.get(rubric, ()):
                when, seen = self.last_run.get((rubric, judge), (float("-inf"), 0))
                due = now - when >= self.interval_s or (
                    self.every_batches > 0 and batches - seen >= self.every_batches
                )
                if force(rubric, judge) if force is not None else due:
                    candidates.append((when, rubric, judge))
        pairs, deferred, spent = [], [], 0
        for _, rubric, judge in sorted(candidates):
            size = len(self.sets[rubric].items)
            if spent + size > self.budget_items:
                deferred.append((rubric, judge))
                continue
            spent += size
            pairs.append((rubric, judge))
        return GoldenPlan(pairs, deferred)

    async def run_once(self) -> list[GoldenRecord]:
        """Re-score every pair due now (skipped while an on-demand re-score runs)."""
        if self._lock.locked():
            return []
        async with self._lock:
            return await self._run(self.plan(self.monitor.clock()).pairs)

    async def rescore(
        self, rubric: str | None = None, judge: str | None = None, rebaseline: bool = False
    ) -> tuple[list[GoldenRecord], list[tuple[str, str]]]:
        """Re-score now the pairs of ``rubric`` and ``judge`` (None: any), within the budget;
        return the records and the pairs deferred. With ``rebaseline``, the matching
        baselines and identity alerts are reset first, so this re-score is the new
        baseline. Raises :class:`GoldenBusy` while another re-score runs."""
        if self._lock.locked():
            raise GoldenBusy("a golden re-score is running; ask again when it is done")
        async with self._lock:
            if rebaseline:
                self.monitor.golden.rebaseline(rubric, judge)
            plan = self.plan(
                self.monitor.clock(),
                lambda r, j: (rubric is None or r == rubric) and (judge is None or j == judge),
            )
            return await self._run(plan.pairs), plan.deferred

    async def identify_all(self) -> None:
        """Read every judge's identity (at start-up)."""
        for judge in sorted({j for judges in self.judges.values() for j in judges}):
            await self._identify(judge)

    async def _identify(self, judge: str) -> None:
        try:
            identity = await self.identify(judge)
        except Exception:
            log.exception("reading the identity of judge %s failed", judge)
            return
        rubrics = [r for r, judges in self.judges.items() if judge in judges]
        self.monitor.golden.identify(judge, identity, rubrics)

    async def _run(self, pairs: list[tuple[str, str]]) -> list[GoldenRecord]:
        records = []
        for rubric, judge in pairs:
            # Marked before scoring so that a failing judge is retried next interval,
            # not on every tick.
            self.last_run[(rubric, judge)] = (self.monitor.clock(), self.monitor.batches)
            await self._identify(judge)
            golden = self.sets[rubric]
            try:
                result = await self.score(rubric, golden.rollouts(), judge)
            except Exception:
                log.exception("golden set of %s through %s failed", rubric, judge)
                continue
            records.append(self.monitor.golden.record(golden, judge, result))
        return records

    async def run_forever(self, stop: asyncio.Event, tick_s: float = 30.0) -> None:
        """Read every judge's identity, then re-score due pairs every ``tick_s`` seconds
        until ``stop`` is set."""
        await self.identify_all()
        while not stop.is_set():
            try:
                await self.run_once()
            except Exception:
                log.exception("golden tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), tick_s)
