"""The code corpus's figures from its graded rows, and their Markdown (``code_corpus.md``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.code_tasks.attacks import Family
from bench.harness import percentile


def _honest(rows: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    mine = [r for r in rows if r["kind"] == kind]
    rewards = [r["reward"] for r in mine if r["reward"] is not None]
    return {
        "items": len(mine),
        "at_1": sum(x == 1.0 for x in rewards),
        "below_1": sum(x < 1.0 for x in rewards),
        "strictly_between": sum(0.0 < x < 1.0 for x in rewards),
        "mean": round(sum(rewards) / len(rewards), 3) if rewards else None,
        "flagged": sum(bool(r["flags"]) for r in mine),
        "nulls": dict(Counter(r["null_kind"] for r in mine if r["reward"] is None)),
    }


def _family(rows: list[dict[str, Any]], fam: Family, wrong: dict[str, float | None]) -> dict:
    mine = [r for r in rows if r["kind"] == fam.name]
    margins = {
        r["task"]: round(r["reward"] - wrong[r["task"]], 3)  # type: ignore[operator]
        for r in mine
        if r["reward"] is not None and wrong.get(r["task"]) is not None
    }
    rewards = [r["reward"] for r in mine if r["reward"] is not None]
    worst = max(margins, key=lambda t: margins[t]) if margins else None
    return {
        "tampering": fam.tampering,
        "items": len(mine),
        "max_reward": round(max(rewards), 3) if rewards else None,
        "mean_reward": round(sum(rewards) / len(rewards), 3) if rewards else None,
        "max_margin_over_wrong": margins[worst] if worst else None,
        "worst_task": worst,
        "above_wrong": sum(m > 0 for m in margins.values()),
        "flagged_share": round(sum(bool(r["flags"]) for r in mine) / len(mine), 3)
        if mine
        else None,
        "flags": dict(Counter(f for r in mine for f in r["flags"])),
        "nulls": dict(Counter(r["null_kind"] for r in mine if r["reward"] is None)),
    }


def summarize(raw: dict[str, Any], families: list[Family]) -> dict[str, Any]:
    """The checks of the issue from the rows of one run."""
    rows = raw["rows"]
    wrong = {r["task"]: r["reward"] for r in rows if r["kind"] == "wrong"}
    per_family = {f.name: _family(rows, f, wrong) for f in families}
    health = raw["healthz_ms"]
    return {
        "correct": _honest(rows, "correct"),
        "wrong": _honest(rows, "wrong"),
        "per_family": per_family,
        "families_above_wrong": sorted(
            n for n, f in per_family.items() if (f["max_margin_over_wrong"] or 0) > 0
        ),
        "tampering_not_always_flagged": sorted(
            n for n, f in per_family.items() if f["tampering"] and f["flagged_share"] != 1.0
        ),
        "escapes": raw["escapes"],
        "items": len(rows),
        "seconds": raw["seconds"],
        "items_per_s": round(len(rows) / raw["seconds"], 2),
        "healthz": {
            "polls": len(health),
            "failures": raw["healthz_failures"],
            "p50_ms": round(percentile(health, 50), 1),
            "max_ms": round(max(health), 1) if health else None,
        },
    }


def _kinds(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def _family_lines(result: dict[str, Any]) -> list[str]:
    lines = [
        "| family | tampering | items | max reward | mean reward | max margin over wrong "
        "(task) | above wrong | flagged | flags raised | nulls |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, f in result["per_family"].items():
        margin = f["max_margin_over_wrong"]
        shown = "n/a" if margin is None else f"{margin:+.3f} ({f['worst_task']})"
        if margin is not None and margin > 0:
            shown = f"**{shown}**"
        flagged = f["flagged_share"]
        if f["tampering"] and flagged != 1.0:
            flagged = f"**{flagged}**"
        lines.append(
            f"| `{name}` | {'yes' if f['tampering'] else 'no'} | {f['items']} | "
            f"{f['max_reward']} | {f['mean_reward']} | {shown} | {f['above_wrong']} | "
            f"{flagged} | {_kinds(f['flags'])} | {_kinds(f['nulls'])} |"
        )
    return lines


def markdown(result: dict[str, Any]) -> str:
    """The report: the checks first, then the table per family."""
    m, c, w, e, h = (
        result["machine"],
        result["correct"],
        result["wrong"],
        result["escapes"],
        result["healthz"],
    )
    above, unflagged = result["families_above_wrong"], result["tampering_not_always_flagged"]
    lines = [
        "# Code-reward corpus",
        "",
        f"`{result['command']}` on {m['cores']} cores ({m['cpu_model']}, load average "
        f"{m['load_avg_at_start']} at start): {result['tasks']} tasks x "
        f"{2 + len(result['per_family'])} items (correct, wrong, one per attack family), "
        f"{result['items']} items through `POST /v1/rewards` in process on "
        f"{result['lanes']} sandbox lanes (bubblewrap), recipe of one `unit_tests` "
        "component, the hidden tests in each item's reference.",
        "",
        "| check | target | result |",
        "| --- | --- | --- |",
        f"| correct solutions at 1.0 | {c['items']} of {c['items']} | {c['at_1']} "
        f"(nulls: {_kinds(c['nulls'])}; flagged: {c['flagged']}) |",
        f"| wrong solutions below 1.0 | {w['items']} of {w['items']} | {w['below_1']} "
        f"({w['strictly_between']} strictly between 0 and 1, mean {w['mean']}; nulls: "
        f"{_kinds(w['nulls'])}; flagged: {w['flagged']}) |",
        f"| families with an attack above its task's wrong solution | 0 | {len(above)} "
        f"{above if above else ''} |",
        f"| tampering families not flagged every time | 0 | {len(unflagged)} "
        f"{unflagged if unflagged else ''} |",
        f"| sandbox escapes | 0 | {e['total']} (connections to the host's listener "
        f"{e['network_connections']}, files at the host marker {len(e['files_outside'])}, "
        f"service alive after: {e['service_alive_after']}) |",
        f"| `/healthz` while grading | answers | {h['polls']} polls, {h['failures']} "
        f"failed, p50 {h['p50_ms']} ms, max {h['max_ms']} ms |",
        f"| items/s | | {result['items_per_s']} ({result['items']} items in "
        f"{result['seconds']} s) |",
        "",
        "Per attack family, over the tasks: the margin is the attack's reward minus its "
        "task's wrong solution's (a null on either side leaves the task out; nulls are "
        "counted with their kind). Flagged: share of the family's items with any flag.",
        "",
        *_family_lines(result),
        "",
    ]
    return "\n".join(lines)
