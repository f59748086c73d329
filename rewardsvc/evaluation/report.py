"""The evaluation report as Markdown tables and as a PNG (matplotlib, imported on use)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _cell(entry: dict[str, Any] | None) -> str:
    if not entry or entry.get("value") is None:
        return "–"
    ci = entry.get("ci")
    value = f"{entry['value']:.3f}"
    cell = f"{value} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else value
    return cell + (f" (n={entry['n']})" if "n" in entry else "")


def markdown(report: dict[str, Any]) -> str:
    """Tables of the pointwise and pair metrics, a row per judge and aggregation rule;
    brackets hold the bootstrap 95% interval."""
    lines = [f"rubric `{report['rubric']}` {report['version']}", ""]
    point = report["pointwise"]
    if point["rows"]:
        lines += [
            f"Pointwise labels: {point['rows']} rows",
            "",
            "| scorer | n | accuracy | ROC AUC | Cohen's κ (best t) | t | calibration error |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, m in point["scorers"].items():
            lines.append(
                f"| {name} | {m['n']} | {_cell(m['accuracy'])} | {_cell(m['roc_auc'])} | "
                f"{_cell(m['kappa'])} | {m['threshold']:.3f} | {_cell(m['calibration_error'])} |"
            )
        lines.append("")
    pairs = report["pairs"]
    if pairs["rows"]:
        lines += [
            f"Preference pairs: {pairs['rows']} rows",
            "",
            "| scorer | pointwise accuracy | pairwise, both orders | pairwise, one order "
            "| position consistency |",
            "|---|---|---|---|---|",
        ]
        for name, m in pairs["scorers"].items():
            lines.append(
                f"| {name} | {_cell(m.get('pointwise'))} | {_cell(m.get('both_orders'))} | "
                f"{_cell(m.get('single_order'))} | {_cell(m.get('position_consistency'))} |"
            )
        lines.append("")
    missing = {k: v for k, v in report.get("unscored", {}).items() if v}
    if missing:
        lines.append(
            "Not scored (judge errors; left out of the figures above): "
            + ", ".join(f"{k} {v}" for k, v in missing.items())
        )
    return "\n".join(lines)


def plot(report: dict[str, Any], path: Path) -> None:
    """A PNG: pointwise accuracy, AUC and κ per scorer, and the pair metrics per scorer,
    as bars with their bootstrap intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels: list[tuple[str, tuple[str, ...]]] = []
    if report["pointwise"]["rows"]:
        panels.append(("pointwise", ("accuracy", "roc_auc", "kappa")))
    if report["pairs"]["rows"]:
        panels.append(
            ("pairs", ("pointwise", "both_orders", "single_order", "position_consistency"))
        )
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(7 * max(1, len(panels)), 4.5))
    axes = axes if hasattr(axes, "__len__") else [axes]
    for ax, (section, columns) in zip(axes, panels, strict=False):
        scorers = report[section]["scorers"]
        names = list(scorers)
        width = 0.8 / len(columns)
        for k, column in enumerate(columns):
            xs: list[float] = []
            heights: list[float] = []
            errs: list[list[float]] = [[], []]
            for n, name in enumerate(names):
                entry = scorers[name].get(column)
                if not entry or entry.get("value") is None:
                    continue
                value = entry["value"]
                ci = entry.get("ci") or [value, value]
                xs.append(n + k * width)
                heights.append(value)
                errs[0].append(max(0.0, value - ci[0]))
                errs[1].append(max(0.0, ci[1] - value))
            ax.bar(xs, heights, width, yerr=errs, capsize=2, label=column.replace("_", " "))
        ax.set_xticks([n + 0.4 - width / 2 for n in range(len(names))])
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        ax.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
        ax.set_ylim(-0.2 if section == "pointwise" else 0, 1.05)
        ax.set_title(f"{section} ({report[section]['rows']} rows), 95% bootstrap CI")
        ax.legend(fontsize=7)
    fig.suptitle(f"rewardsvc eval: rubric {report['rubric']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
