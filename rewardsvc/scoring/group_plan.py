"""Planning comparisons: the groups and options of a request, the questions asked (compared
across the group, or asked of each completion alone), the images each comparison shows,
the rubric features a comparison cannot honour (refused), and which groups cannot be
scored."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from rewardsvc.core import aggregate
from rewardsvc.core import comparative as cmp
from rewardsvc.core.code_spec import sandbox_seconds
from rewardsvc.core.errors import RequestError
from rewardsvc.core.media import Image, split_markers
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, JudgeRule, Rubric
from rewardsvc.judges.comparative import FencedGroup, asks_for_worst
from rewardsvc.scoring.comparison_methods import COMPARISON_METHODS, ComparisonMethod, Method


@dataclass(frozen=True)
class GroupIn:
    """One group: the rollouts of its completions (same prompt and reference), or why it
    was rejected before scoring."""

    id: str
    rollouts: tuple[Rollout, ...] = ()
    error: str | None = None
    rubric: Rubric | None = None
    """The group's own rubric (the batch rubric with its criteria); None: the batch's."""


@dataclass(frozen=True)
class GroupOptions:
    """How to compare: method, tournament and its pair budget, listwise orders, overrides."""

    method: Method = "listwise"
    tournament: cmp.Tournament = "circular"
    orders: int = 2
    pairs: int | None = None
    judges: tuple[str, ...] | None = None
    rule: JudgeRule | None = None
    min_judges: int | None = None
    seed: int | None = None
    use_cache: bool = True
    explain: bool = False
    """Return what each judge read for each question of one completion alone."""

    @property
    def strategy(self) -> ComparisonMethod:
        """The comparison method's strategy object."""
        return COMPARISON_METHODS[self.method]


@dataclass(frozen=True)
class GroupImages:
    """The images a group's comparisons show, as its fenced texts name them: the task's
    (prompt and reference, in every comparison) and each completion's (in a comparison
    that shows it). An image stands once per marker: a comparison sends an image part
    wherever its text names one, even one another block names too."""

    task: tuple[Image, ...] = ()
    responses: tuple[tuple[Image, ...], ...] = ()

    @classmethod
    def of(cls, fenced: FencedGroup) -> GroupImages:
        """The images each part of ``fenced`` names (its gallery's, by its markers)."""
        return cls(
            _named(fenced.task, fenced.images),
            tuple(_named(text, fenced.images) for text in fenced.responses),
        )

    def compared(self, shown: Sequence[int]) -> list[Image]:
        """What a comparison showing the completions ``shown`` (input indices) sends."""
        return [*self.task, *(image for k in shown for image in self.responses[k])]


def _named(text: str, images: Sequence[Image]) -> tuple[Image, ...]:
    if not images:
        return ()
    return tuple(images[p] for p in split_markers(text) if isinstance(p, int) and p < len(images))


def worst_questions(rubric: Rubric) -> dict[str, bool]:
    """Per comparison question, whether its judge is asked which completion is worst."""
    return {key: asks_for_worst(rubric, c) for key, c in questions(rubric)}


def questions(rubric: Rubric) -> list[tuple[str, Criterion | None]]:
    """The comparison questions: one per criterion the judges compare, or one holistic for
    ``implicit``. An essential gate is asked of each completion alone (``gated``) and a
    grader's criterion is graded (``graded``): neither is compared. A criterion allowing
    tools is among them: a judge declaring its tools asks it of each completion alone
    instead (``group_calls``)."""
    if rubric.implicit_combine:
        return [(aggregate.HOLISTIC, None)]
    return [(c.id, c) for c in rubric.criteria if c.asks_judges and c.gate is None]


def gated(rubric: Rubric) -> list[Criterion]:
    """The essential criteria with a gate, asked of each completion as ``/v1/rewards`` asks
    them (a holistic ``implicit`` rubric applies no gate, as ``core.aggregate``)."""
    if rubric.implicit_combine:
        return []
    return [c for c in rubric.criteria if c.asks_judges and c.gate is not None]


def graded(rubric: Rubric) -> list[Criterion]:
    """The criteria a deterministic grader scores on each completion."""
    return [c for c in rubric.criteria if c.grader is not None]


def group_sandbox_seconds(rubric: Rubric, group: GroupIn) -> float:
    """The sandbox seconds grading ``group`` with ``rubric`` may cost, as ``/v1/rewards``
    counts an item's: each code grader criterion's runs on every completion (the cases
    read from the completion's reference), each run its wall-clock limit."""
    specs = [c.grader for c in rubric.criteria if c.grader is not None]
    return sum(sandbox_seconds(spec, r.reference) for r in group.rollouts for spec in specs)


def check_comparable(rubric: Rubric) -> None:
    """Refuse (:class:`RequestError`, naming the field) a rubric feature a comparison cannot
    honour: a ``scope: step`` criterion (a comparison sees whole completions, not steps)
    and ``objectives`` (a group's rewards are one dimension, relative within the group).
    A criterion allowing judge ``tools`` is honoured: a judge declaring them asks it of
    each completion alone (``group_calls``), one without compares it from the texts."""
    for k, c in enumerate(rubric.criteria):
        if c.per_step:
            raise RequestError.at(("rubric", "criteria", k, "scope"), _STEPS.format(c.id))
    if rubric.objectives:
        raise RequestError.at(
            ("rubric", "objectives"),
            "groups and preferences do not report objectives (score them with POST /v1/rewards)",
        )


_STEPS = (
    "criterion {!r} has scope: step; groups and preferences compare whole completions "
    "(score steps with POST /v1/rewards)"
)


def _step_criterion(group: GroupIn, index: int) -> str | None:
    """Why a group whose own criteria include a ``scope: step`` one is rejected alone."""
    own = group.rubric.criteria if group.rubric is not None else []
    for c in own:
        if c.per_step:
            return f"groups[{index}].criteria: " + _STEPS.format(c.id)
    return None


def presentations(
    n: int, options: GroupOptions, rng: random.Random
) -> list[tuple[str, tuple[int, ...]]]:
    """The presentation orders of a group of ``n`` under the options' comparison method."""
    return options.strategy.presentations(n, options, rng)


def reject_reason(group: GroupIn, index: int, options: GroupOptions, max_chars: int) -> str | None:
    """Why ``groups[index]`` cannot be scored (it is rejected alone), or None."""
    if group.error is not None:
        return group.error
    n = len(group.rollouts)
    if n < 2:
        return f"groups[{index}].completions: a group needs at least 2 completions, not {n}"
    reason = options.strategy.too_large(n, index) or _step_criterion(group, index)
    if reason is not None:
        return reason
    for k, r in enumerate(group.rollouts):
        for name, text in (("prompt", r.prompt), ("completion", r.completion)):
            if len(text) > max_chars:
                where = name if name == "prompt" else f"completions[{k}]"
                return f"groups[{index}].{where}: {len(text)} characters, over {max_chars}"
    return None


def plan_seed(group: GroupIn, seed: int | None) -> str:
    """Plans are seeded by the group's content: the same group gets the same orders."""
    h = hashlib.sha256(str(seed).encode())
    for r in group.rollouts:
        h.update(r.digest().encode())
    return h.hexdigest()
