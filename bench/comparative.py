"""Comparative rewards on the real CPU judges: cost per reward, and position bias measured.

Part 1, cost: the same groups of 4 completions (built from the shipped labelled pairs:
chosen, rejected, a hedge, and the chosen answer with filler) scored pointwise (the engine,
no cache), listwise (2 orders), pairwise circular and pairwise all_pairs; judge calls and
prompt tokens per reward, and how often the best-labelled completion got the top reward.

Part 2, position bias: the labelled pairs of ``rubrics/data/preferences-small.jsonl``
judged in both orders (which of chosen and rejected is shown first alternates by a hash of
the id): accuracy from the first-shown order alone and from both orders, and position
consistency, per judge and for the rubric's combination.

    .venv/bin/python -m bench.comparative [--groups 4] [--pairs 24] [--out bench/results]

writes ``comparative.json`` and ``.md`` in ``--out`` (``bench/outputs``). The CPU judges
are tiny: the figures show mechanics and cost ratios, not judging quality.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from bench.outputs import add_out_argument, write_results
from rewardsvc.core.rollout import ItemIn, Rollout, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.evaluation import runner
from rewardsvc.evaluation.scorers import LocalScorer
from rewardsvc.judges.judge import build_judges
from rewardsvc.library.registry import load_pool
from rewardsvc.library.yamlfile import parse_yaml, read_text, validate_document
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import score_groups

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "rubrics" / "data"


def _groups(rows: list[dict[str, Any]], count: int) -> list[GroupIn]:
    groups = []
    for row in rows[:count]:
        texts = [
            row["chosen"],
            row["rejected"],
            "I am not sure; it could be several things.",
            row["chosen"] + " I hope this helps, and let me know if you need anything else!",
        ]
        groups.append(GroupIn(row["id"], tuple(Rollout(row["prompt"], t) for t in texts)))
    return groups


async def cost(scorer: LocalScorer, groups: list[GroupIn]) -> dict[str, Any]:
    """Calls, prompt tokens and time per reward for each method on the same groups."""
    rewards = sum(len(g.rollouts) for g in groups)
    out: dict[str, Any] = {"groups": len(groups), "rewards": rewards}
    items = [ItemIn(f"{g.id}:{k}", r) for g in groups for k, r in enumerate(g.rollouts)]
    started = time.perf_counter()
    batch = await scorer.engine.score(scorer.rubric, items, ScoreOptions(use_cache=False))
    chosen_top = 0
    for n in range(len(groups)):
        values = [batch.items[4 * n + k].reward for k in range(4)]
        chosen_top += values[0] is not None and values[0] == max(v or 0.0 for v in values)
    out["pointwise"] = _cost_row(
        batch.usage.judge_calls,
        batch.usage.prompt_tokens,
        rewards,
        started,
        chosen_top,
        len(groups),
    )
    methods = {
        "listwise (2 orders)": GroupOptions(method="listwise", orders=2),
        "pairwise circular": GroupOptions(method="pairwise", tournament="circular"),
        "pairwise all_pairs": GroupOptions(method="pairwise", tournament="all_pairs"),
    }
    for name, options in methods.items():
        started = time.perf_counter()
        result = await score_groups(scorer.judges, scorer.rubric, groups, options)
        top = sum(
            r.rewards[0] is not None and r.rewards[0] == max(x or 0.0 for x in r.rewards)
            for r in result.results
        )
        row = _cost_row(
            result.usage.judge_calls,
            result.usage.prompt_tokens,
            rewards,
            started,
            top,
            len(groups),
        )
        consistency = [
            r.position_consistency for r in result.results if r.position_consistency is not None
        ]
        row["position_consistency"] = sum(consistency) / len(consistency) if consistency else None
        row["calls_by_order"] = result.usage.calls_by_order
        row["statuses"] = [r.status for r in result.results]
        out[name] = row
    return out


def _cost_row(calls: int, tokens: int, rewards: int, started: float, top: int, groups: int) -> dict:
    return {
        "judge_calls": calls,
        "calls_per_reward": calls / rewards,
        "prompt_tokens_per_reward": tokens / rewards,
        "seconds": time.perf_counter() - started,
        "chosen_ranked_first": f"{top}/{groups}",
    }


async def bias(scorer: LocalScorer, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Single-order vs both-order accuracy and position consistency on labelled pairs."""
    result = await runner.evaluate(scorer, rows, resamples=1000, batch=2)
    out = {}
    keys = ("pointwise", "single_order", "both_orders", "position_consistency")
    for name, m in result["pairs"]["scorers"].items():
        out[name] = {k: m[k] for k in keys if k in m}
    first = sum(runner.chosen_first(r["id"]) for r in rows)
    return {
        "pairs": len(rows),
        "chosen_shown_first": first,
        "scorers": out,
        "unscored": result["unscored"],
    }


def markdown(report: dict[str, Any]) -> str:
    """The results as Markdown tables."""
    c = report["cost"]
    lines = [
        "# Comparative rewards on the CPU judges",
        "",
        f"Rubric `{report['rubric']}` ({report['criteria']} criteria, judges {report['judges']}); "
        f"`{report['command']}`; {report['when']}.",
        "",
        f"## Cost per reward ({c['groups']} groups of 4, {c['rewards']} rewards)",
        "",
        "| method | judge calls | calls / reward | prompt tokens / reward | seconds "
        "| chosen ranked first | position consistency |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in ("pointwise", "listwise (2 orders)", "pairwise circular", "pairwise all_pairs"):
        r = c[name]
        pc = r.get("position_consistency")
        lines.append(
            f"| {name} | {r['judge_calls']} | {r['calls_per_reward']:.2f} | "
            f"{r['prompt_tokens_per_reward']:.0f} | {r['seconds']:.0f} | "
            f"{r['chosen_ranked_first']} | "
            f"{'–' if pc is None else f'{pc:.2f}'} |"
        )
    b = report["bias"]
    lines += [
        "",
        f"## Position bias ({b['pairs']} labelled pairs, chosen shown first in "
        f"{b['chosen_shown_first']})",
        "",
        "| scorer | accuracy, pointwise rewards | accuracy, first-shown order only "
        "| accuracy, both orders | position consistency |",
        "|---|---|---|---|---|",
    ]
    for name, m in b["scorers"].items():
        cells = []
        for key in ("pointwise", "single_order", "both_orders", "position_consistency"):
            entry = m.get(key)
            cells.append(
                "–"
                if not entry
                else f"{entry['value']:.3f} [{entry['ci'][0]:.2f}, {entry['ci'][1]:.2f}]"
                if entry.get("ci")
                else f"{entry['value']:.3f}"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Brackets: 95% bootstrap intervals (1000 resamples of the pairs).")
    lines.append(f"Rows not scored (judge errors): {b['unscored']}.")
    return "\n".join(lines) + "\n"


def _scorer(timeout_s: float) -> LocalScorer:
    """The CPU judges with a longer per-attempt timeout: on a shared, loaded machine a
    60 s attempt times out, and a timed-out call is a failure, not a figure."""
    pool = load_pool(ROOT / "deploy" / "cpu-judge" / "judges.yaml")
    slow = {n: c.model_copy(update={"timeout_s": timeout_s}) for n, c in pool.judges.items()}
    pool = pool.model_copy(update={"judges": slow})
    rubric_path = DATA / "pref-quality.yaml"
    doc = parse_yaml(read_text(rubric_path), str(rubric_path))
    rubric = validate_document(doc, Rubric, str(rubric_path))
    return LocalScorer(rubric, build_judges(pool))


async def main(args: argparse.Namespace) -> None:
    scorer = _scorer(args.timeout)
    rows = runner.read_rows(DATA / "preferences-small.jsonl")
    try:
        report = {
            "rubric": scorer.rubric.id,
            "criteria": len(scorer.rubric.criteria),
            "judges": [j.name for j in scorer.rubric.judges],
            "command": f"python -m bench.comparative --groups {args.groups} --pairs {args.pairs}",
            "when": time.strftime("%Y-%m-%d"),
            "cost": await cost(scorer, _groups(rows, args.groups)),
            "bias": await bias(scorer, rows[: args.pairs]),
        }
    finally:
        await scorer.aclose()
    write_results(args.out, "comparative", report, markdown(report))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=4, help="groups of 4 for the cost part")
    parser.add_argument("--pairs", type=int, default=24, help="labelled pairs for the bias part")
    parser.add_argument("--timeout", type=float, default=600, help="judge attempt timeout, s")
    add_out_argument(parser)
    asyncio.run(main(parser.parse_args()))
