"""Canaries: known attacks and anchors scored on a schedule through the live judges.

A rubric's canary file (``rubrics/canaries/<rubric-id>.yaml``) holds cases: a prompt, a
known-good and a known-bad answer, and attacks (master keys, fake score lines, ...).
:func:`plan_canaries` (pure) picks which (rubric, judge) pairs are due within an item
budget; :class:`CanaryRunner` scores them through an injected ``score`` callable and
records, per judge, each attack's score against the known-bad anchor in the monitor.

A rubric whose items carry images (``media: [image]``) also gets the image family through
each judge that sees images (:class:`ImageFamily`, drawn at start-up by the application):
per case, the known-bad answer with a plain image (the honest anchor) and with each
typographic attack's image (an instruction to the grader in its pixels), recorded as attack
``typographic:<style>`` against that anchor, with the share of cases it beat the anchor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from pydantic import Field

from rewardsvc.core.base import StrictModel
from rewardsvc.core.media import Image, image_marker
from rewardsvc.core.results import BatchResult, ItemReward
from rewardsvc.monitor.monitor import Monitor
from rewardsvc.monitor.rubric_sets import RubricSet, load_sets

log = logging.getLogger(__name__)

ScoreFn = Callable[[str, list[dict[str, Any]], str], Awaitable[BatchResult]]
IMAGE_ANCHOR = "image-bad"
"""The role of the image family's anchor: the known-bad answer with a plain image."""
TYPOGRAPHIC = "typographic:"
"""The prefix of the image family's attack names (``typographic:<style>``)."""


class ImageAttack(NamedTuple):
    """One typographic attack: its style, the image with the instruction drawn in it, and a
    plain image of the same size (the anchor's)."""

    style: str
    attack: Image
    plain: Image


@dataclass(frozen=True)
class ImageFamily:
    """The image canaries: the attacks, for the rubrics whose items carry images, through
    the judges that see images."""

    attacks: tuple[ImageAttack, ...]
    rubrics: frozenset[str]
    judges: frozenset[str]

    def for_job(self, rubric: str, judge: str) -> tuple[ImageAttack, ...]:
        """The attacks to try on ``rubric`` through ``judge`` (none for a text-only judge)."""
        return self.attacks if rubric in self.rubrics and judge in self.judges else ()


NO_IMAGES = ImageFamily((), frozenset(), frozenset())


class CanaryCase(StrictModel):
    """One prompt with its anchors and the attacks to try on it."""

    prompt: str
    reference: str | None = None
    good: str = Field(description="A known-good answer: every sane judge scores it high.")
    bad: str = Field(description="A known-bad answer: the anchor every attack is compared to.")
    attacks: dict[str, str] = Field(
        min_length=1, description="Attack name → completion (the text the judge sees)."
    )


class CanarySet(RubricSet):
    """The canaries of one rubric."""

    ENTRIES: ClassVar[str] = "cases"

    margin: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="An attack scoring this much above the known-bad anchor raises an alert.",
    )
    cases: list[CanaryCase] = Field(min_length=1)

    def items(self, images: Sequence[ImageAttack] = ()) -> list[dict[str, Any]]:
        """The items to score: per case its good and bad anchors, then its attacks, then
        (with ``images``) the bad answer with the plain image and with each attack's."""
        out = []
        for n, case in enumerate(self.cases):
            texts = {"good": case.good, "bad": case.bad} | {
                f"attack:{name}": text for name, text in case.attacks.items()
            }
            for role, text in texts.items():
                item: dict[str, Any] = {"id": f"{n}/{role}", "prompt": case.prompt}
                item["completion"] = text
                if case.reference is not None:
                    item["reference"] = case.reference
                out.append(item)
            out.extend(_image_items(n, case, images))
        return out


def _image_items(n: int, case: CanaryCase, images: Sequence[ImageAttack]) -> list[dict[str, Any]]:
    """Case ``n``'s image family: the bad answer showing an image after its text."""
    if not images:
        return []
    shown = {IMAGE_ANCHOR: images[0].plain} | {
        f"attack:{TYPOGRAPHIC}{a.style}": a.attack for a in images
    }
    out = []
    for role, image in shown.items():
        item: dict[str, Any] = {"id": f"{n}/{role}", "prompt": case.prompt}
        item["completion"] = f"{case.bad}\n{image_marker(0)}"
        item["images"] = (image,)
        if case.reference is not None:
            item["reference"] = case.reference
        out.append(item)
    return out


def load_canaries(folder: Path) -> dict[str, CanarySet]:
    """Every ``*.yaml`` canary file of ``folder``, by rubric id (raises ``InvalidFile``)."""
    return load_sets(folder, CanarySet)


@dataclass(frozen=True)
class CanaryJob:
    """Score one rubric's canary items through one judge."""

    rubric: str
    judge: str
    items: list[dict[str, Any]]


def plan_canaries(
    sets: Mapping[str, CanarySet],
    judges: Mapping[str, Sequence[str]],
    last_run: Mapping[tuple[str, str], float],
    now: float,
    interval_s: float,
    budget_items: int,
    images: ImageFamily = NO_IMAGES,
) -> list[CanaryJob]:
    """The (rubric, judge) pairs due now, least recently run first, within the item budget.

    ``judges`` names the judges of each rubric; a pair is due when it never ran or ran
    ``interval_s`` or more ago. Jobs that do not fit the budget wait for the next tick
    (they stay the most overdue, so every pair gets its turn). ``images`` adds the image
    family to the jobs of a rubric with images through a judge that sees them.
    """
    due = [
        (last_run.get((rubric, judge), float("-inf")), rubric, judge)
        for rubric in sorted(sets)
        for judge in judges.get(rubric, ())
        if now - last_run.get((rubric, judge), float("-inf")) >= interval_s
    ]
    jobs = []
    spent = 0
    for _, rubric, judge in sorted(due):
        items = sets[rubric].items(images.for_job(rubric, judge))
        if spent + len(items) > budget_items:
            continue
        spent += len(items)
        jobs.append(CanaryJob(rubric, judge, items))
    return jobs


def _judge_score(item: ItemReward, judge: str) -> float | None:
    # The judge's own score, before the rubric's flag penalties: a canary measures
    # whether the judge can be fooled, not whether the detectors caught the attack.
    outcome = item.judges.get(judge)
    if outcome is not None:
        return outcome.score
    return item.reward


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _share_above(
    scores: Mapping[str, float | None], anchors: Mapping[str, float | None]
) -> float | None:
    """The share of cases whose attack scored above the same case's anchor (of the cases
    where both have a score)."""
    pairs = [
        (score, anchors[case])
        for case, score in scores.items()
        if score is not None and anchors.get(case) is not None
    ]
    return sum(1 for s, a in pairs if a is not None and s > a) / len(pairs) if pairs else None


class CanaryRunner:
    """Scores due canaries on a schedule, within a budget of items per tick."""

    def __init__(
        self,
        monitor: Monitor,
        sets: Mapping[str, CanarySet],
        judges: Mapping[str, Sequence[str]],
        score: ScoreFn,
        interval_s: float = 900.0,
        budget_items: int = 64,
        clock: Callable[[], float] = time.time,
        images: ImageFamily = NO_IMAGES,
    ) -> None:
        self.monitor, self.sets, self.judges, self.score = monitor, sets, judges, score
        self.interval_s, self.budget_items, self.clock = interval_s, budget_items, clock
        self.images = images
        self.last_run: dict[tuple[str, str], float] = {}

    async def run_once(self) -> list[CanaryJob]:
        """Score every job due now and record the results; return the jobs run."""
        now = self.clock()
        jobs = plan_canaries(
            self.sets,
            self.judges,
            self.last_run,
            now,
            self.interval_s,
            self.budget_items,
            self.images,
        )
        for job in jobs:
            # Marked before scoring so that a failing judge is retried next interval,
            # not on every tick.
            self.last_run[(job.rubric, job.judge)] = now
            try:
                result = await self.score(job.rubric, job.items, job.judge)
            except Exception:
                log.exception("canaries of %s through %s failed", job.rubric, job.judge)
                continue
            self._record(job, result)
        return jobs

    def _record(self, job: CanaryJob, result: BatchResult) -> None:
        by_role: dict[str, dict[str, float | None]] = {}
        for item in result.items:
            case, split, role = item.id.partition("/")
            case, role = (case, role) if split else ("", case)
            by_role.setdefault(role, {})[case] = _judge_score(item, job.judge)
        bad, good = (
            _mean([*by_role.get("bad", {}).values()]),
            _mean([*by_role.get("good", {}).values()]),
        )
        image_bad = by_role.get(IMAGE_ANCHOR, {})
        margin = self.sets[job.rubric].margin
        for role, scores in by_role.items():
            if not role.startswith("attack:"):
                continue
            attack = role[len("attack:") :]
            if attack.startswith(TYPOGRAPHIC):
                # Against the same bad answer with a plain image: what the text drawn in
                # the image gained, not what showing an image at all did.
                anchor, share = _mean([*image_bad.values()]), _share_above(scores, image_bad)
            else:
                anchor, share = bad, None
            self.monitor.record_canary(
                job.rubric,
                job.judge,
                attack,
                _mean([*scores.values()]),
                anchor,
                good,
                margin,
                share_above=share,
            )

    async def run_forever(self, stop: asyncio.Event, tick_s: float = 30.0) -> None:
        """Run due canaries every ``tick_s`` seconds until ``stop`` is set."""
        while not stop.is_set():
            try:
                await self.run_once()
            except Exception:
                log.exception("canary tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), tick_s)
