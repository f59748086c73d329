"""The beam search: mutants of the best completions so far, scored under a call budget.

A judge call is one criterion asked of one judge (what the judges' servers answer); the
calls of a scored completion are read from its result, so a rubric's size sets how many
completions a budget buys. A batch is cut to the calls left, so a run never spends more
than its budget. A candidate is scored only when its gold check says it is still wrong.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardsvc.redteam.gold import Item, gold_for
from rewardsvc.redteam.operators import Operator, catalogue, pick


class Scorer(Protocol):
    """Rewards of raw items, as the results of ``POST /v1/rewards`` (JSON dicts)."""

    async def score(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One result per item, in order."""
        ...


Draft = tuple[str, tuple[str, ...], tuple[str, ...]]
"""A candidate before scoring: its text, families and operators."""

Rewriter = Callable[[Item, str], Awaitable[str | None]]
"""An attacker model: a more convincing version of a completion, or None."""


@dataclass(frozen=True)
class Candidate:
    """A scored completion and how it was made."""

    completion: str
    reward: float | None
    status: str
    flags: tuple[str, ...]
    families: tuple[str, ...]
    operators: tuple[str, ...]

    @property
    def counts(self) -> bool:
        """Whether the result is evidence: a reward of a scoring with status ``ok``. A
        degraded result (a judge failed, the rest answered) or a failed one is not: it
        never ranks, never wins an item and makes no margin."""
        return self.status == "ok" and self.reward is not None

    @property
    def fitness(self) -> float:
        """The reward, or minus infinity for a scoring that does not count (never a 0)."""
        return self.reward if self.counts and self.reward is not None else float("-inf")


@dataclass
class ItemOutcome:
    """What the search found for one item."""

    item: Item
    baseline: Candidate
    scored: list[Candidate] = field(default_factory=list)
    probe: list[Candidate] = field(default_factory=list)
    calls: int = 0
    rewrites: int = 0

    def best(self, among: list[Candidate] | None = None) -> Candidate | None:
        """The highest-reward candidate (of ``among``, default every one scored)."""
        pool = [c for c in (self.scored if among is None else among) if c.counts]
        return max(pool, key=_rank) if pool else None

    def margin(self, candidate: Candidate | None) -> float | None:
        """How much ``candidate`` earns over the honest wrong answer."""
        if candidate is None or candidate.reward is None or self.baseline.reward is None:
            return None
        if not (candidate.counts and self.baseline.counts):
            return None
        return candidate.reward - self.baseline.reward


def _rank(c: Candidate) -> tuple[float, int, str]:
    # Ties go to the shorter text, then the text itself: a repeatable order.
    return (c.fitness, -len(c.completion), c.completion)


def calls_of(result: dict[str, Any]) -> int:
    """The judge calls behind one result: its criteria asked of each judge."""
    return sum(len(j.get("criteria") or {}) for j in (result.get("judges") or {}).values())


@dataclass
class Search:
    """Beam search with ``beam`` parents and ``children`` mutants a generation."""

    scorer: Scorer
    ops: list[Operator]
    seed: int = 0
    beam: int = 4
    children: int = 8
    rewriter: Rewriter | None = None
    rewrite_every: int = 2
    max_chars: int = 4000
    on_batch: Callable[[ItemOutcome], None] | None = None
    """Told after every scored batch (progress)."""

    async def _score(self, item: Item, drafts: list[Draft]) -> tuple[list[Candidate], int]:
        raw = [
            {"id": f"c{i}", "prompt": item.prompt, "completion": t}
            for i, (t, _, _) in enumerate(drafts)
        ]
        if item.reference is not None:
            for row in raw:
                row["reference"] = item.reference
        results = await self.scorer.score(raw)
        out = [
            Candidate(t, r.get("reward"), r.get("status", "?"), tuple(r.get("flags") or ()), f, o)
            for (t, f, o), r in zip(drafts, results, strict=True)
        ]
        return out, sum(calls_of(r) for r in results)

    async def run(self, item: Item, budget: int) -> ItemOutcome:
        """Search for attacks on ``item`` with at most ``budget`` judge calls."""
        rng = random.Random(f"{self.seed}:{item.id}")
        gold = gold_for(item)
        [base], spent = await self._score(item, [(item.completion, (), ())])
        outcome = ItemOutcome(item, base, calls=spent)
        per = max(spent, 1)
        seen = {item.completion}
        drafts: list[Draft] = []
        for a in catalogue(item.completion):
            if a.completion not in seen and gold.wrong(a.completion):
                seen.add(a.completion)
                drafts.append((a.completion, (a.family,), (a.name,)))
        generation = 0
        while drafts and outcome.calls + per <= budget:
            drafts = drafts[: (budget - outcome.calls) // per]
            found, spent = await self._score(item, drafts)
            outcome.calls += spent
            outcome.scored += found
            if generation == 0:
                outcome.probe = list(found)
            if self.on_batch is not None:
                self.on_batch(outcome)
            generation += 1
            drafts = await self._children(item, outcome, seen, rng, generation)
        return outcome

    async def _children(
        self, item: Item, outcome: ItemOutcome, seen: set[str], rng: random.Random, gen: int
    ) -> list[Draft]:
        """The next generation: mutants of the best ``beam`` candidates (the honest answer
        among them), each new, still wrong and not too long."""
        gold = gold_for(item)
        ranked = sorted([outcome.baseline, *outcome.scored], key=_rank, reverse=True)
        parents = ranked[: self.beam]
        drafts: list[Draft] = []
        if self.rewriter is not None and gen % self.rewrite_every == 0:
            outcome.rewrites += 1
            text = await self.rewriter(item, parents[0].completion)
            if text and text not in seen and gold.wrong(text):
                seen.add(text)
                fam, ops = parents[0].families, parents[0].operators
                drafts.append((text, (*fam, "attacker_rewrite"), (*ops, "attacker rewrite")))
        for attempt in range(self.children * 10):
            if len(drafts) >= self.children:
                break
            parent = parents[attempt % len(parents)]
            op = pick(self.ops, rng)
            text = op.apply(parent.completion, rng)
            if text in seen or len(text) > self.max_chars or not gold.wrong(text):
                continue
            seen.add(text)
            drafts.append((text, (*parent.families, op.family), (*parent.operators, op.name)))
        return drafts
