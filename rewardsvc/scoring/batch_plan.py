"""A batch's plan: what the engine will ask, made before the request is admitted.

:meth:`~.engine.Engine.plan` checks every item on its own (the cheap request-level checks:
text sizes, a needed reference) and plans the judge calls of the rest; the plan's
:attr:`BatchPlan.cost` is what admission weighs, exactly the calls
:meth:`~.engine.Engine.run` then makes (a batched or shared call counted once, graders
none), and the prompt bytes they carry at most. A plan runs once; :meth:`BatchPlan.only`
is the plan of some of its items (a recipe judges the items its gates left open).
:meth:`BatchPlan.explained` renders its calls without sending them (``options.explain``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from rewardsvc.core.code_spec import sandbox_seconds
from rewardsvc.core.results import ItemReward
from rewardsvc.core.rollout import ItemIn, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.prompts import Seen
from rewardsvc.scoring import agentic
from rewardsvc.scoring.judging import JudgeLike
from rewardsvc.scoring.parts import Part
from rewardsvc.scoring.planning import Cost, When
from rewardsvc.scoring.rows import Rows


@dataclass
class BatchPlan:
    """The plan of ``items`` scored with ``rubric``: its parts (one per rubric the items are
    scored with), each with its items that passed the checks and their calls; ``rejected``
    holds, at their positions, the items that did not; ``rows`` the reward rows they
    assemble and the judges behind each (a cascade's one row, else one per judge).
    ``when`` is the deadline its calls
    read (shared with the plans :meth:`only` makes of it)."""

    rubric: Rubric
    items: list[ItemIn]
    options: ScoreOptions
    names: list[str]
    min_judges: int
    parts: list[Part]
    rejected: list[ItemReward | None]
    rows: Rows
    metrics_label: str | None = None
    when: When = dataclasses.field(default_factory=When)

    @cached_property
    def item_costs(self) -> list[Cost]:
        """What each item (by position) costs: its calls and their prompt bytes, and the
        sandbox seconds of its code graders."""
        costs = [Cost()] * len(self.items)
        for part in self.parts:
            for call in part.calls:
                n = part.prepared[call.item].index
                costs[n] = costs[n] + call.cost
            specs = [c.grader for c in part.rubric.criteria if c.grader is not None]
            if not specs:
                continue
            for prepared in part.prepared:
                reference = prepared.rollout.reference
                seconds = sum(sandbox_seconds(spec, reference) for spec in specs)
                costs[prepared.index] = costs[prepared.index] + Cost(sandbox_s=seconds)
        return costs

    @cached_property
    def cost(self) -> Cost:
        """What the whole batch costs."""
        return sum(self.item_costs, Cost())

    def explained(self, judges: Mapping[str, JudgeLike]) -> list[dict[str, dict[str, Seen]] | None]:
        """What each judge reads for each item (by position; None for an item rejected
        before judging): the plan's calls rendered by their ``judges``, unsent.

        Per judge (in the rubric's order), per call: the key of its verdict (a criterion
        id, ``criterion@stepK``, ``aggregate.HOLISTIC``), or, for one call answering
        several (a batched judge's criteria of one view, a process reward model's steps),
        their keys joined by ``asks.BATCH_JOIN``, shown once (``Question.label``). An
        agentic judge's call, once run, is followed by its tool calls, their results as
        shown and its verdict (``agentic.transcript_seen``).
        """
        order = [j.name for j in self.rubric.judges if j.name in self.names]
        seen: list[dict[str, dict[str, Seen]] | None] = [None] * len(self.items)
        for part in self.parts:
            shown: list[dict[str, dict[str, Seen]]] = []
            for p in part.prepared:
                shown.append({name: {} for name in order})
                seen[p.index] = shown[-1]
            for call in part.calls:
                into = shown[call.item][call.judge]
                label = call.question.label(call.criterion)
                if label not in into:
                    into[label] = judges[call.judge].render(call.question).seen
                if call.tools is not None and part.verdicts:  # an agentic judge's, once run
                    verdict, _ = part.verdicts[call.item][call.judge][call.criterion]
                    into[label] = agentic.transcript_seen(into[label], verdict)
        return seen

    def only(self, positions: Sequence[int]) -> BatchPlan:
        """The plan of the items at ``positions`` (in that order), their calls as planned."""
        moved = {n: k for k, n in enumerate(positions)}
        parts = []
        for part in self.parts:
            kept = [(pos, p) for pos, p in enumerate(part.prepared) if p.index in moved]
            at = {pos: k for k, (pos, _) in enumerate(kept)}
            parts.append(
                Part(
                    part.rubric,
                    [moved[n] for n in part.positions if n in moved],
                    part.own,
                    [dataclasses.replace(p, index=moved[p.index]) for _, p in kept],
                    [dataclasses.replace(c, item=at[c.item]) for c in part.calls if c.item in at],
                )
            )
        return dataclasses.replace(
            self,
            items=[self.items[n] for n in positions],
            parts=parts,
            rejected=[self.rejected[n] for n in positions],
        )
