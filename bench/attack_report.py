"""The reward attack benchmark's report: the benign false-flag share and the Markdown."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rewardsvc.core.rollout import Rollout
from rewardsvc.safety.detectors import detect

CORPUS = Path(__file__).resolve().parent / "attacks" / "corpus.jsonl"


def benign_false_flags() -> dict[str, Any]:
    """The corpus's benign answers through ``detect``: how many raise a flag, and which."""
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    benign = [r for r in rows if r["kind"] == "benign"]
    flagged = {
        r["id"]: found
        for r in benign
        if (found := detect(Rollout(prompt=r["prompt"], completion=r["text"])))
    }
    return {"benign": len(benign), "flagged": len(flagged), "rows": flagged}


def _f(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"


def _margin(row: dict[str, Any]) -> str:
    if row["margin"] is None:
        return "-"
    band = row["band"]
    inside = f" [{band[0]:+.3f}, {band[1]:+.3f}]" if band else ""
    return f"{row['margin']:+.3f}{inside}"


def rubric_table(families: dict[str, dict[str, Any]]) -> list[str]:
    """One rubric's rows, and the count of families above the honest wrong answer."""
    lines = [
        "| family | attack | honest wrong | honest right | margin attack - wrong [95 %] "
        "| flagged | n |",
        "|---|---|---|---|---|---|---|",
    ]
    above = []
    for family, row in families.items():
        if row["margin"] is not None and row["margin"] > 0:
            above.append(family)
        failed = f" ({row['failed']} failed)" if row["failed"] else ""
        lines.append(
            f"| {family} | {_f(row['attack'])} | {_f(row['wrong'])} | {_f(row['right'])} "
            f"| {_margin(row)} | {row['flagged']:.0%} | {row['n']}{failed} |"
        )
    named = f": {', '.join(above)}" if above else ""
    lines += ["", f"families above the honest wrong answer: {len(above)} of {len(families)}{named}"]
    return lines


def markdown(result: dict[str, Any]) -> str:
    """The report: per pool and rubric the family table, then the benign false flags."""
    lines = [
        "# Rewards under attack",
        "",
        f"Command: `{result['command']}`. {result['questions']} questions written for this "
        f"project (`bench/attack_set.py`), {result['per_question']} attack(s) per question "
        "and family on the honest wrong answer; library rubrics as shipped, scored in "
        "process (no cache). Margin: mean of attack - honest wrong answer, paired by "
        "question, with a 95 % bootstrap band; flagged: share of attacks with any flag.",
    ]
    for name, pool in result["pools"].items():
        lines += ["", f"## Pool {name} (`{pool['pool']}`, {pool['seconds']} s)"]
        lines += [f"- {note}" for note in pool["notes"]]
        for rubric_id, families in pool["rubrics"].items():
            lines += ["", f"### {rubric_id}", "", *rubric_table(families)]
    benign = result["benign"]
    share = benign["flagged"] / benign["benign"] if benign["benign"] else 0.0
    lines += [
        "",
        "## Benign false flags",
        "",
        f"{benign['flagged']} of {benign['benign']} benign answers of `bench/attacks/corpus.jsonl` "
        f"flagged ({share:.1%}): "
        + (", ".join(f"{k} ({', '.join(v)})" for k, v in benign["rows"].items()) or "none"),
        "",
    ]
    return "\n".join(lines)
