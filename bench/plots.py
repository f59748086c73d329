"""The benchmark's plots: ``bench.png`` (six panels) from the results dict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.targets import CALLS_TARGET, P99_TARGET_MS, RSS_TARGET_MB


def plot(results: dict[str, Any], path: Path) -> None:
    """Six panels: end to end, overhead throughput and latency, memory, scaling."""
    parts = results["parts"]
    fig, axes = plt.subplots(2, 3, figsize=(17, 9.5))
    fig.suptitle(
        f"rewardsvc benchmark ({'quick' if results['quick'] else 'full'} run {results['run_id']}, "
        f"{results['machine']['cores']} cores)"
    )
    ax = axes[0][0]
    if "e2e" in parts:
        cs = parts["e2e"]["contenders"]
        names = [c["name"].split(" (")[0] for c in cs]
        vals = [c["rewards_per_s"] for c in cs]
        palette = {"rewardsvc": "tab:blue", "rewardsvc-variant": "tab:cyan", "limit": "tab:gray"}
        colors = [palette.get(c["kind"], "tab:orange") for c in cs]
        ax.bar(range(len(cs)), vals, color=colors)
        ax.set_xticks(range(len(cs)), names, rotation=20, ha="right", fontsize=8)
        ax.set_yscale("log")
        for i, c in enumerate(cs):
            ax.text(
                i,
                vals[i],
                f"{vals[i]:.2f}/s\n{c['tokens_per_reward']:.0f} tok",
                ha="center",
                va="bottom",
                fontsize=7,
            )
    ax.set_title("1. End to end, real judge: rewards/s (log)")
    ax.set_ylabel("rewards/s")

    ax_t, ax_l = axes[0][1], axes[0][2]
    if "overhead" in parts:
        cells = parts["overhead"]["cells"]
        for size in sorted({c["items_per_request"] for c in cells}):
            cs = [c for c in cells if c["items_per_request"] == size]
            x = [c["concurrency"] for c in cs]
            ax_t.plot(
                x,
                [c["rewardsvc"]["calls_per_s"] for c in cs],
                "o-",
                label=f"rewardsvc, {size} item/req",
            )
            ax_t.plot(
                x, [c["direct"]["calls_per_s"] for c in cs], "s--", label=f"direct, {size} item/req"
            )
            ax_l.plot(x, [c["added_p50_ms"] for c in cs], "o-", label=f"added p50, {size} item/req")
            ax_l.plot(
                x, [c["added_p99_ms"] for c in cs], "^--", label=f"added p99, {size} item/req"
            )
        ax_t.axhline(CALLS_TARGET, color="red", lw=0.8, ls=":", label="target 3,000/s")
        ax_l.axhline(P99_TARGET_MS, color="red", lw=0.8, ls=":", label="target p99 5 ms")
        ax_l.set_yscale("symlog", linthresh=1.0)
        ax_t.set_ylim(bottom=0)
        for a in (ax_t, ax_l):
            a.set_xscale("log")
            a.set_xlabel("concurrent requests")
            a.legend(fontsize=7)
    ax_t.set_title("2. Judge calls/s orchestrated (zero-latency stub)")
    ax_l.set_title("2. Added latency vs direct calls (ms)")

    ax = axes[1][0]
    if "memory" in parts:
        mem = parts["memory"]
        xs = [n for n, _ in mem["samples"]]
        ax.plot(xs, [mb for _, mb in mem["samples"]], "o-", ms=3, label="service RSS")
        ax.axvline(mem["cache_bound_verdicts"], color="gray", ls="--", label="cache bound")
        ax.axhline(RSS_TARGET_MB, color="red", lw=0.8, ls=":", label="target 300 MB")
        ax.set_ylim(0, max(RSS_TARGET_MB * 1.1, max(mb for _, mb in mem["samples"]) * 1.1))
        ax.set_xlabel("distinct verdicts driven")
        ax.legend(fontsize=7)
    ax.set_title("3. Service RSS (MB) as the cache fills")

    ax = axes[1][1]
    if "scaling" in parts:
        stub = parts["scaling"]["stub"]
        pts = stub.get("batch_size", [])
        ax.plot(
            [p["value"] for p in pts], [p["rewards_per_s"] for p in pts], "o-", label="rewards/s"
        )
        ax.plot(
            [p["value"] for p in pts],
            [p["judge_calls_per_s"] / 5 for p in pts],
            "x:",
            label="judge calls/s ÷ 5",
        )
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("items per request (4 in flight)")
        ax.legend(fontsize=7)
    ax.set_title("4. Batch size (stub, 5 ms/call)")

    ax = axes[1][2]
    if "scaling" in parts:
        stub = parts["scaling"]["stub"]
        for dim, marker in (("criteria", "o-"), ("judges", "s-")):
            pts = stub.get(dim, [])
            ax.plot(
                [p["value"] for p in pts],
                [p["rewards_per_s"] for p in pts],
                marker,
                label=f"rewards/s vs {dim}",
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("criteria per rubric / judges per rubric")
        ax.legend(fontsize=7)
    ax.set_title("4. Criteria and judges (stub, batches of 8)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
