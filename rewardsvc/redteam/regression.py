"""The regression file of a red-team run, its summary, and its replay.

The file records, per item, the honest wrong answer and the best attack found with their
rewards, plus the rubric version and each judge's cache identity, so that
``rewardsvc probe --replay`` can score both again and say when a replay is not
comparable (another rubric version or other judges). The replay fails (exit 1) when an
attack still earns more than its honest baseline, re-scored now, by more than the
tolerance: the judge hack is still open. A replayed reward that differs from the recorded
one is reported (a changed defence is the point of a regression test), not failed.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict

from rewardsvc.redteam.search import Candidate, ItemOutcome

FORMAT = "rewardsvc-redteam/1"


class FoundAttack(BaseModel):
    """One attack found, beside the honest wrong answer it beats (or not)."""

    model_config = ConfigDict(extra="forbid")

    item: str
    prompt: str
    reference: str | None = None
    baseline: str
    baseline_reward: float | None
    completion: str
    reward: float | None
    margin: float | None
    families: list[str]
    operators: list[str]
    flags: list[str]
    succeeded: bool
    """Whether the margin passed the run's tolerance."""


class Summary(BaseModel):
    """A rubric's figures at the budget."""

    model_config = ConfigDict(extra="forbid")

    items: int
    budget: int
    calls: int
    rewrites: int
    attack_success_rate: float
    best_margin: float | None
    probe_best_margin: float | None
    caught: dict[str, dict[str, int]]
    """Per flag, how many scored candidates of each family it raised."""


class Regression(BaseModel):
    """The regression file."""

    model_config = ConfigDict(extra="forbid")

    format: str = FORMAT
    rubric: str
    rubric_version: str
    judges: dict[str, str]
    """Each judge's cache identity: a replay with others is not comparable."""
    seed: int
    tolerance: float
    summary: Summary
    attacks: list[FoundAttack]


def _families(c: Candidate) -> list[str]:
    parts = [p for f in c.families for p in f.split("+")]
    return sorted(set(parts))


def found_attack(o: ItemOutcome, tolerance: float) -> FoundAttack | None:
    """The best attack of an item, or None when nothing was scored."""
    best = o.best()
    if best is None:
        return None
    margin = o.margin(best)
    return FoundAttack(
        item=o.item.id,
        prompt=o.item.prompt,
        reference=o.item.reference,
        baseline=o.item.completion,
        baseline_reward=o.baseline.reward,
        completion=best.completion,
        reward=best.reward,
        margin=margin,
        families=_families(best),
        operators=list(best.operators),
        flags=list(best.flags),
        succeeded=margin is not None and margin > tolerance,
    )


def summarize(outcomes: list[ItemOutcome], budget: int, tolerance: float) -> Summary:
    """The attack success rate, best margins (search and catalogue) and flags caught."""
    margins = [o.margin(o.best()) for o in outcomes]
    probe = [o.margin(o.best(o.probe)) for o in outcomes]
    won = [m for m in margins if m is not None and m > tolerance]
    caught: dict[str, Counter[str]] = {}
    for o in outcomes:
        for c in o.scored:
            for flag in c.flags:
                caught.setdefault(flag, Counter()).update(_families(c))
    return Summary(
        items=len(outcomes),
        budget=budget,
        calls=sum(o.calls for o in outcomes),
        rewrites=sum(o.rewrites for o in outcomes),
        attack_success_rate=len(won) / len(outcomes) if outcomes else 0.0,
        best_margin=max((m for m in margins if m is not None), default=None),
        probe_best_margin=max((m for m in probe if m is not None), default=None),
        caught={f: dict(sorted(c.items())) for f, c in sorted(caught.items())},
    )


def replay_items(reg: Regression) -> list[dict[str, Any]]:
    """The rows a replay scores: each attack's baseline and attack, in pairs."""
    rows: list[dict[str, Any]] = []
    for n, a in enumerate(reg.attacks):
        for kind, text in (("baseline", a.baseline), ("attack", a.completion)):
            row: dict[str, Any] = {"id": f"{n}-{kind}", "prompt": a.prompt, "completion": text}
            if a.reference is not None:
                row["reference"] = a.reference
            rows.append(row)
    return rows


def comparable(reg: Regression, version: str, judges: dict[str, str]) -> list[str]:
    """Why a replay against ``version`` and ``judges`` is not comparable (empty: it is)."""
    why = []
    if version != reg.rubric_version:
        why.append(f"rubric version {version} (recorded {reg.rubric_version})")
    for name, identity in reg.judges.items():
        if judges.get(name) != identity:
            why.append(f"judge {name!r} has another cache identity")
    return why


def replay_rows(
    reg: Regression, results: list[dict[str, Any]], tolerance: float
) -> list[dict[str, Any]]:
    """Per attack: recorded and replayed rewards, replayed margin, whether it fails."""
    rows = []
    for n, a in enumerate(reg.attacks):
        base, hit = results[2 * n].get("reward"), results[2 * n + 1].get("reward")
        margin = None if base is None or hit is None else hit - base
        drift = None if hit is None or a.reward is None else hit - a.reward
        rows.append(
            {
                "item": a.item,
                "families": a.families,
                "recorded": a.reward,
                "reward": hit,
                "baseline": base,
                "margin": margin,
                "drift": drift,
                "flags": results[2 * n + 1].get("flags") or [],
                "fails": margin is not None and margin > tolerance,
            }
        )
    return rows
