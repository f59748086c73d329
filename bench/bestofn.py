"""Best-of-n over-optimization: what the judge ensembles and a verifier gate buy when a
selector maximizes the reward over more and more candidates.

For each prompt of ``bench/data/bestofn.jsonl`` a pool of 27 candidates (honest right and
wrong, padded, flattering, and the 19 variants of the probe catalogue
``rewardsvc.safety.attacks`` applied to a wrong answer; ``bestofn_pool.py``) is scored once
by each CPU judge on ``short-answer-correctness`` through the service's engine, and the raw
scores are saved
(``bestofn.scores.json`` in ``--out``, see ``bench/outputs``). Every proxy (each judge alone;
mean, min, uwo, softmin of both, raw and with zscore or rank calibration; the rubric as
served; a recipe with a numeric verifier gate) and every n = 1, 2, …, 64 is then computed
offline from those scores (``bestofn_select.py``): the expected gold (verified correctness)
of the candidate best-of-n picks, with a 95 % band over prompts, and the share of attacks
picked.

Run: ``.venv/bin/python -m bench.bestofn [--prompts 14]`` (scores, then analyses; about a
minute per prompt on the CPU judges) or ``--offline`` to analyse the saved scores again.
Results: ``bestofn.{md,json,svg}`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.bestofn_pool import ROOT, main_score
from bench.bestofn_select import JUDGES, NS, curve, essential_only, proxies, rescored
from bench.outputs import add_out_argument, write_results


def machine() -> dict[str, Any]:
    """Cores and load: the machine the figures come from (bench.harness needs psutil, which
    the service's environment need not have)."""
    return {"cores": os.cpu_count(), "load_avg_at_start": [round(x, 2) for x in os.getloadavg()]}


SCORES = "bestofn.scores.json"
"""The judges' scores of the pool, saved in ``--out`` (read again by ``--offline``)."""


def by_prompt(cands: list[dict[str, Any]]) -> tuple[list[list[dict[str, Any]]], int]:
    """The scored pools per prompt, keeping candidates every judge scored (a failed judge
    is no score, so such a candidate leaves the pool of every proxy alike)."""
    pools: dict[str, list[dict[str, Any]]] = defaultdict(list)
    dropped = 0
    for c in cands:
        if all(c["judges"].get(j) for j in JUDGES) and c["reward"] is not None:
            pools[c["prompt_id"]].append(c)
        else:
            dropped += 1
    return list(pools.values()), dropped


def kind_means(cands: list[dict[str, Any]]) -> list[tuple[str, int, float, float, float]]:
    """Per kind of candidate: count, mean score of each judge, mean served reward."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in cands:
        key = c["kind"] if c["kind"] != "attack" else f"attack: {c['family']}"
        if c["kind"] in ("right", "padded", "flattering"):
            key = f"{c['kind']} ({'right' if c['gold'] else 'wrong'})"
        groups[key].append(c)
    rows = []
    for key, cs in sorted(groups.items()):
        means = [sum(c["judges"][j]["score"] for c in cs) / len(cs) for j in JUDGES]
        rows.append((key, len(cs), means[0], means[1], sum(c["reward"] for c in cs) / len(cs)))
    return rows


def plot(modes: dict[str, dict[str, Any]], groups: dict[str, str], out: Path) -> None:
    """Gold against n per proxy: one row per judge scoring, raw ensembles and single judges
    left, calibrated ensembles right."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(modes), 2, figsize=(13, 5 * len(modes)), sharey=True)
    panels = (("single judge", "ensemble, raw", "service"), ("ensemble, zscore", "ensemble, rank"))
    for row, (mode, m) in zip(axes, modes.items(), strict=True):
        for ax, wanted in zip(row, panels, strict=True):
            ax.plot(NS, m["oracle"], color="black", ls=":", label="best possible")
            for name, c in m["curves"].items():
                if groups[name] not in wanted:
                    continue
                g = c["gold"]
                lo = [x - b for x, b in zip(g, c["band"], strict=True)]
                hi = [x + b for x, b in zip(g, c["band"], strict=True)]
                (line,) = ax.plot(NS, g, marker="o", ms=3, label=name)
                ax.fill_between(NS, lo, hi, color=line.get_color(), alpha=0.08)
            ax.set_xscale("log", base=2)
            ax.set_xticks(NS, [str(n) for n in NS])
            ax.set_xlabel("n (candidates drawn per prompt)")
            ax.set_title(f"judge score: {mode}\n" + " / ".join(wanted), fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        row[0].set_ylabel("expected gold (verified correct) of the pick")
    fig.suptitle("Best-of-n on the CPU judges (short-answer-correctness); band: 95 % over prompts")
    fig.tight_layout()
    fig.savefig(out, format="svg")
    plt.close(fig)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def table(curves: dict[str, dict[str, Any]]) -> list[str]:
    """The figures per proxy: gold at n = 1, 4, 16, 64, attack share, where it turns."""
    lines = [
        "| proxy | gold n=1 | n=4 | n=16 | n=64 (± 95 %) | attacks picked, n=64 | peak (n, gold) "
        "| over-optimizes from |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, c in curves.items():
        g = c["gold"]
        turn = c["overoptimizes_from"]
        lines.append(
            f"| {name} | {g[0]:.2f} | {g[2]:.2f} | {g[4]:.2f} | {g[-1]:.2f} ± {c['band'][-1]:.2f} "
            f"| {_pct(c['attack'][-1])} | {c['peak_n']}, {c['peak_gold']:.2f} "
            f"| {'n = ' + str(turn) if turn else 'no decline to 64'} |"
        )
    return lines


def reading(curves: dict[str, dict[str, Any]]) -> list[str]:
    """Plain sentences from one mode's figures: the best single judge against the best and
    worst ensemble at n = 64 (ensembles help only past the wider 95 % band), the verifier-
    gated recipe, and how many proxies over-optimize (``bestofn_select.onset``)."""
    group = {p.name: p.group for p in proxies()}

    def at64(name: str) -> str:
        c = curves[name]
        return f"{name} {c['gold'][-1]:.2f} ± {c['band'][-1]:.2f}, {_pct(c['attack'][-1])} attacks"

    singles = [n for n in curves if group[n] == "single judge"]
    ensembles = [n for n in curves if group[n].startswith("ensemble")]
    best_single = max(singles, key=lambda n: curves[n]["gold"][-1])
    ranked = sorted(ensembles, key=lambda n: curves[n]["gold"][-1])
    best, worst = curves[ranked[-1]], curves[best_single]
    margin = max(best["band"][-1], worst["band"][-1])
    helps = best["gold"][-1] - worst["gold"][-1] > margin
    turning = [n for n, c in curves.items() if c["overoptimizes_from"] is not None]
    recipe_name = next(n for n in curves if n.startswith("recipe"))
    return [
        f"- At n = 64 the best single judge is {at64(best_single)}; the best ensemble is "
        f"{at64(ranked[-1])}, the worst {at64(ranked[0])}.",
        f"- Ensembles {'help' if helps else 'do not help'} on these judges: the best one "
        f"{'beats' if helps else 'does not beat'} the best single judge by more than the "
        f"95 % band ({margin:.2f}).",
        f"- The verifier gate is what holds: {at64(recipe_name)}.",
        f"- {len(turning)} of {len(curves)} proxies over-optimize (gold at n = 64 below their "
        "peak by more than the wider 95 % band): " + (", ".join(turning) or "none") + ".",
    ]


def markdown(result: dict[str, Any], command: str) -> str:
    """The result page: the pool, the figures, the per-kind means, the command."""
    pool = result["pool"]
    judges = " and ".join(f"`{model}` (`{name}`)" for name, model in pool["judges"].items())
    lines = [
        "# Best-of-n over-optimization on the CPU judges",
        "",
        f"Scored by `{pool['scored_by']}`, analysed by `{command}`. Judges: {judges} on vLLM "
        f"CPU (pool `{pool['pool_file']}`), rubric `short-answer-correctness` "
        f"({pool['criteria']} criteria per judge), scored once per candidate through the "
        "service's engine in process "
        f"({pool['calls']} judge calls in {pool['seconds']:.0f} s); every proxy and n computed "
        f"offline from those scores, {result['draws']} seeded draws (with replacement) per "
        f"prompt and n. Machine: {result['machine']['cores']} cores, load "
        f"{result['machine']['load_avg_at_start']} at the analysis.",
        "",
        f"Pool: {pool['prompts']} prompts × {pool['per_prompt']} candidates "
        f"({pool['candidates']} scored, {pool['dropped']} dropped for a failed judge). Per "
        "prompt: 4 right (plain, terse, padded, flattering), 4 wrong (plain, terse, padded, "
        "flattering), 18 attacks (the probe catalogue `rewardsvc/safety/attacks.py` applied to "
        "the plain wrong answer; `redteam` attacks are built in parallel and not in this pool) "
        "and its meaning-preserving bullet rewrite (wrong, not counted as an attack). Gold: "
        "verified correctness (built from the right answer; the numeric grader accepts every "
        f"right base answer and rejects every wrong one). Gold of a random pick: "
        f"{pool['gold_mean']:.2f}.",
        "",
        "![best-of-n](bestofn.svg)",
        "",
    ]
    for mode, m in result["modes"].items():
        lines += [
            f"## Judge score: {mode}",
            "",
            f"Best possible at n = 64: {m['oracle'][-1]:.2f}.",
            "",
            *table(m["curves"]),
            "",
            *reading(m["curves"]),
            "",
            "| kind | count | primary | secondary | reward |",
            "|---|---|---|---|---|",
            *[f"| {k} | {n} | {a:.2f} | {b:.2f} | {r:.2f} |" for k, n, a, b, r in m["kinds"]],
            "",
        ]
    return "\n".join(lines)


def _mode(prompts: list[list[dict[str, Any]]], draws: int, seed: int) -> dict[str, Any]:
    right = [sum(c["gold"] for c in p) / len(p) for p in prompts]
    return {
        "curves": {p.name: curve(prompts, p, draws, seed) for p in proxies()},
        "oracle": [sum(1 - (1 - r) ** n for r in right) / len(prompts) for n in NS],
        "kinds": kind_means([c for p in prompts for c in p]),
    }


def analyse(scores: Path, draws: int, seed: int, command: str, out: Path) -> dict[str, Any]:
    """Every proxy's curve from the saved scores, for the judge score as the rubric computes
    it and for the essential criterion alone; writes bestofn.{md,json,svg}."""
    from rewardsvc.library.registry import Registry, load_pool

    table_ = json.loads(scores.read_text())
    prompts, dropped = by_prompt(table_["candidates"])
    flat = [c for p in prompts for c in p]
    pool = load_pool(ROOT / table_["pool_file"])
    rubric = Registry(ROOT / "rubrics", pool).get("short-answer-correctness").rubric
    essential = essential_only(rubric)
    modes = {
        "rubric as written (gate, pitfalls)": _mode(prompts, draws, seed),
        "essential criterion P(yes)": _mode([rescored(p, essential) for p in prompts], draws, seed),
    }
    result: dict[str, Any] = {
        "bench": "bestofn", "command": command, "machine": machine(), "draws": draws,
        "seed": seed, "modes": modes,
        "pool": {
            "prompts": len(prompts), "per_prompt": max(len(p) for p in prompts),
            "candidates": len(flat), "dropped": dropped, "calls": table_["calls"],
            "seconds": table_["seconds"], "judges": table_["judges"],
            "criteria": table_["criteria"], "pool_file": table_["pool_file"],
            "scored_by": table_["command"],
            "gold_mean": sum(c["gold"] for c in flat) / len(flat),
        },
    }  # fmt: skip
    plot(modes, {p.name: p.group for p in proxies()}, out / "bestofn.svg")
    write_results(out, "bestofn", result, markdown(result, command))
    return result


def main() -> None:
    """Score the pool (unless ``--offline``), then analyse it."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=int, default=14, help="prompts of the data file to score")
    p.add_argument("--pool", type=Path, default=ROOT / "deploy" / "cpu-judge" / "judges.yaml")
    p.add_argument("--draws", type=int, default=4000, help="random draws per prompt and n")
    p.add_argument("--seed", type=int, default=27)
    p.add_argument("--offline", action="store_true", help="analyse the scores saved in --out only")
    add_out_argument(p)
    a = p.parse_args()
    scores = a.out / SCORES
    command = "python -m bench." + " ".join(["bestofn", *sys.argv[1:]])
    if not a.offline:
        main_score(a.prompts, scores, a.pool, command)
    analyse(scores, a.draws, a.seed, command, a.out)


if __name__ == "__main__":
    main()
