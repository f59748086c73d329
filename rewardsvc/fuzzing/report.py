"""The fuzzer's report: Markdown (a table per grader by mutation family, the explained
choices met, the unexplained false positives with examples) and JSON (the same counts)."""

from __future__ import annotations

from typing import Any

from rewardsvc.fuzzing.runner import Report, Tally

_COLUMNS = ("cases", "agree", "false_positives", "explained", "false_negatives", "no_score")


def _row(name: str, t: Tally) -> str:
    rate = (t.false_positives + t.false_negatives) / t.cases if t.cases else 0.0
    cells = [
        name,
        t.cases,
        t.agree,
        t.false_positives,
        t.unexplained,
        t.false_negatives,
        t.no_score,
    ]
    return "| " + " | ".join(str(c) for c in cells) + f" | {rate:.1%} |"


def as_json(report: Report) -> dict[str, Any]:
    """The counts per grader and family, the explained shapes and the unexplained cases."""
    graders = {
        grader: {
            "total": {c: getattr(report.total(grader), c) for c in _COLUMNS},
            "families": {f: {c: getattr(t, c) for c in _COLUMNS} for f, t in families.items()},
        }
        for grader, families in report.tallies.items()
    }
    return {
        "seed": report.seed,
        "rounds": report.rounds,
        "unexplained_false_positives": report.unexplained,
        "graders": graders,
        "explained": [
            {"grader": g, "shape": s, "count": n, "reason": why}
            for (g, s, why), n in sorted(report.explained_shapes.items())
        ],
        "unexplained": [vars(f) for f in report.findings],
    }


def as_markdown(report: Report) -> str:
    """The report as Markdown tables."""
    head = (
        "| family | cases | agree | false pos. | unexplained | false neg. | no score | disagree |"
    )
    lines = [
        f"Seed {report.seed}, {report.rounds} rounds. A false positive: the grader passes a "
        "probe the reference check fails; explained ones are documented choices.",
        "",
        "## Totals",
        "",
        head.replace("family", "grader"),
        "|---|---|---|---|---|---|---|---|",
        *(_row(g, report.total(g)) for g in report.tallies),
    ]
    for grader, families in report.tallies.items():
        lines += ["", f"## {grader}", "", head, "|---|---|---|---|---|---|---|---|"]
        lines += [_row(f, t) for f, t in families.items()]
    lines += [
        "",
        "## Explained false positives",
        "",
        "| grader | shape | count | why |",
        "|---|---|---|---|",
    ]
    for (grader, shape, why), count in sorted(report.explained_shapes.items()):
        lines.append(f"| {grader} | {shape} | {count} | {why} |")
    lines += ["", f"## Unexplained false positives: {report.unexplained}", ""]
    for f in report.findings:
        shown = f.completion.replace("`", "'").replace("\n", "\\n")[:160]
        lines.append(
            f"- {f.grader} / {f.family} / {f.shape}: `{shown}` (reference `{f.reference}`)"
        )
    return "\n".join(lines) + "\n"
