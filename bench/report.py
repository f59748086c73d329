"""The benchmark report: ``results.md`` (tables) from the results dict, and ``bench.png``
(``bench.plots``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench.overhead_report import CLIENTS
from bench.plots import plot
from bench.targets import (
    CALLS_TARGET,
    E2E_LIMIT_TARGET,
    KB_PER_VERDICT_TARGET,
    P99_TARGET_MS,
    PEER_TARGET,
    RSS_TARGET_MB,
    TARGET_CONCURRENCY,
)


def _f(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += [
        "| " + " | ".join(_f(c) if not isinstance(c, str) else c for c in r) + " |" for r in rows
    ]
    return [*out, ""]


def _yes(ok: bool | None) -> str:
    return "–" if ok is None else ("**yes**" if ok else "**no**")


def targets(results: dict[str, Any]) -> list[list[Any]]:
    """Rows of the targets table: target, measured, met."""
    parts = results["parts"]
    rows: list[list[Any]] = []
    e2e = parts.get("e2e")
    if e2e:
        cs = {c["kind"]: c for c in e2e["contenders"]}
        rs = cs["rewardsvc"]["rewards_per_s"]
        limit = cs["limit"]["rewards_per_s"]
        r = rs / limit if limit else float("nan")
        rows.append(
            [
                "rewardsvc ≥ 0.85× the direct-client limit (rewards/s)",
                f"{r:.2f}×",
                _yes(r >= E2E_LIMIT_TARGET),
            ]
        )
        peer_list = [c for c in e2e["contenders"] if c["kind"] == "peer"]
        if peer_list:
            fastest = max(peer_list, key=lambda c: c["rewards_per_s"])
            r = rs / fastest["rewards_per_s"]
            # The direct client is the judge's own limit for these calls: no service
            # sending them can beat the peer by more than this.
            ceiling = limit / fastest["rewards_per_s"]
            rows.append(
                [
                    f"rewardsvc ≥ 5× the fastest peer ({fastest['name']})",
                    f"{r:.1f}× (the direct-client limit: {ceiling:.1f}×)",
                    _yes(r >= PEER_TARGET),
                ]
            )
    ov = parts.get("overhead")
    if ov:
        at = [c for c in ov["cells"] if c["concurrency"] == TARGET_CONCURRENCY]
        if at:
            best = max(c["rewardsvc"]["calls_per_s"] for c in at)
            rows.append(
                [
                    f"≥ 3,000 judge calls/s at {TARGET_CONCURRENCY} concurrent requests (stub)",
                    f"{best:,.0f}/s",
                    _yes(best >= CALLS_TARGET),
                ]
            )
            for c in at:
                rows.append(
                    [
                        f"p99 added ≤ 5 ms at {TARGET_CONCURRENCY} concurrent, "
                        f"{c['items_per_request']} item(s)/request",
                        f"{c['added_p99_ms']:.1f} ms",
                        _yes(c["added_p99_ms"] <= P99_TARGET_MS),
                    ]
                )
        # The ratio targets against the direct loop, measured in the same run.
        for name, ok in ov.get("targets", {}).items():
            rows.append([name, "ratios in `overhead.md`", _yes(ok)])
    peaks = []
    if e2e:
        peaks.append(("end to end", max(e2e["memory"]["peak_rss_mb"], e2e["memory"]["vmhwm_mb"])))
    mem = parts.get("memory")
    if mem:
        peaks.append(
            ("cache at its bound", max(mem["vmhwm_mb"], max(m for _, m in mem["samples"])))
        )
    for label, mb in peaks:
        rows.append([f"peak RSS ≤ 300 MB ({label})", f"{mb:.0f} MB", _yes(mb <= RSS_TARGET_MB)])
    if mem:
        rows.append(_kb_per_verdict(mem))
    return rows


def _kb_per_verdict(mem: dict[str, Any]) -> list[Any]:
    """The memory cost of one cached verdict (the slope while the cache fills); judged only
    at the default bound (older runs give the same slope as MB per 1,000 verdicts)."""
    kb = mem.get("kb_per_verdict", mem.get("mb_per_1000_verdicts"))
    bound = mem.get("cache_bound_verdicts")
    at_default = bound == mem.get("default_cache_size", bound)
    shown = "–" if kb is None else f"{kb:.2f} KB" + ("" if at_default else f" (bound {bound:,})")
    met = None if kb is None or not at_default else kb <= KB_PER_VERDICT_TARGET
    return [
        f"RSS per cached verdict ≤ {KB_PER_VERDICT_TARGET} KB at the default bound",
        shown,
        _yes(met),
    ]


def markdown(results: dict[str, Any]) -> str:
    """The whole report as Markdown."""
    m, v = results["machine"], results["versions"]
    lines = [
        "# rewardsvc benchmark",
        "",
        f"- Command: `{results['command']}` (what `make bench` runs; `--quick` for a short run)",
        f"- Run: {results['run_id']}, {'quick' if results['quick'] else 'full'}, "
        f"{_f(results.get('total_s'), 0)} s; part durations (s): {results.get('durations_s', {})}",
        f"- Machine: {m['cores']} cores, {m['cpu_model']}, {m['ram_gb']} GB RAM, Linux "
        f"{m['kernel']}, load average at start {m['load_avg_at_start']}",
        "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        "",
    ]
    if results.get("kept"):
        kept = ", ".join(f"{name} (run {run})" for name, run in results["kept"].items())
        lines[-1:-1] = [f"- Parts not re-run, kept from earlier runs: {kept}"]
    if results.get("errors"):
        lines += ["## Parts that failed", ""]
        for name, err in results["errors"].items():
            lines += [f"### {name}", "", "```", err.strip(), "```", ""]
    lines += ["## Targets", ""]
    lines += _table(["target", "measured", "met"], targets(results))
    parts = results["parts"]
    if "e2e" in parts:
        lines += _e2e(parts["e2e"])
    if "overhead" in parts:
        lines += _overhead(parts["overhead"])
    if "memory" in parts or "e2e" in parts:
        lines += _memory(parts.get("memory"), parts.get("e2e"))
    if "scaling" in parts:
        lines += _scaling(parts["scaling"])
    lines += ["![benchmark plots](bench.png)", ""]
    return "\n".join(lines)


def _e2e(e: dict[str, Any]) -> list[str]:
    cs = e["contenders"]
    rs = next(c for c in cs if c["kind"] == "rewardsvc")
    ver = e["verification"]
    lines = [
        "## 1. End to end on the real judge",
        "",
        f"Judge `{e['judge']['model']}` at {e['judge']['url']} (vLLM on CPU, shared machine). "
        f"Same 5-criterion rubric (`bench/rubric.yaml`) and items (`bench/items.py`: "
        f"{e['items']} measured, {e['peer_items']} for peers; {e['warmup_items']} held-out "
        f"warm-up items for every contender). rewardsvc: `rewardsvc serve` subprocess, "
        f"judge pool = primary only, batches of {rs['notes']['batch_size']} items, "
        f"{rs['notes']['concurrent_requests']} requests in flight, verdict cache at its default "
        f"with a fresh rubric version (cache hits: {rs['notes']['cache_hits']}). Direct limit: "
        f"the same calls (request bodies identical to rewardsvc's: {ver['identical']}, "
        f"{ver['calls_compared']} compared) sent with AsyncOpenAI all at once. "
        "Rewards/s counts every item scored (failures included, so peers' failures do not "
        "slow them down); 'valid' is how many got a usable reward.",
        "",
    ]
    rows = []
    for c in cs:
        rows.append(
            [
                c["name"],
                f"{c['rewards_per_s']:.3f}",
                f"{c['valid']}/{c['items']}",
                c["calls"],
                f"{c['tokens_per_reward']:.0f}",
                f"{rs['rewards_per_s'] / c['rewards_per_s']:.2f}×" if c["rewards_per_s"] else "–",
                f"{c['tokens_per_reward'] / rs['tokens_per_reward']:.2f}×"
                if rs["tokens_per_reward"]
                else "–",
            ]
        )
    lines += _table(
        [
            "contender",
            "rewards/s",
            "valid",
            "judge calls",
            "judge tokens/reward",
            "rewardsvc speed ÷ this",
            "tokens ÷ rewardsvc's",
        ],
        rows,
    )
    runs = [c for c in cs if "runs_rewards_per_s" in c["notes"]]
    if runs:
        lines += [
            "Runs (median reported): "
            + "; ".join(f"{c['name']}: {c['notes']['runs_rewards_per_s']}" for c in runs)
            + "",
            "",
        ]
    kinds = ["good", "partial", "bad", "attack"]
    krows = [[c["name"]] + [c["by_kind"].get(k) for k in kinds] for c in cs if c["by_kind"]]
    if krows:
        lines += [
            "Mean reward by item kind (a sanity check of the scores, not of judge quality: "
            "a 135M judge):",
            "",
        ]
        lines += _table(["contender", *kinds], krows)
    notes = [f"- {c['name']}: {c['notes']}" for c in cs if c["kind"] == "peer"]
    if notes:
        lines += ["Peer settings:", "", *notes, ""]
    return lines


def _overhead(o: dict[str, Any]) -> list[str]:
    lines = [
        "## 2. Service overhead (zero-latency stub judge)",
        "",
        f"Stub: {o['stub']}; {o['criteria']} criteria, so 5 judge calls per item; "
        f"{o['seconds_per_cell']} s closed loop per cell on fresh distinct items; pool "
        f"max_concurrency {o['pool_max_concurrency']}. Added latency = rewardsvc − direct "
        "(the same call bodies as raw aiohttp POSTs, the cheapest client) at the same "
        "percentile, so it includes rewardsvc's own client cost. 'HTTP+API' = client "
        "latency − the engine's own usage.latency_ms. CPU = cores used by the service / stub / "
        "load generator during the rewardsvc loop (2 cores in all).",
        "",
    ]
    rows = []
    for c in o["cells"]:
        rs, d = c["rewardsvc"], c["direct"]
        cpu = rs["cpu_cores"]
        rows.append(
            [
                c["items_per_request"],
                c["concurrency"],
                f"{rs['calls_per_s']:,.0f}",
                f"{d['calls_per_s']:,.0f}",
                f"{rs['p50_ms']:.1f} / {rs['p99_ms']:.1f}",
                f"{d['p50_ms']:.1f} / {d['p99_ms']:.1f}",
                f"{c['added_p50_ms']:.1f} / {c['added_p99_ms']:.1f}",
                f"{_f(rs['http_overhead_p50_ms'], 1)} / {_f(rs['http_overhead_p99_ms'], 1)}",
                f"{cpu.get('rewardsvc')} / {cpu.get('stub')} / {cpu.get('load generator')}",
                _f(c.get("rewardsvc_cpu_ms_per_call")),
                f"{rs['errors']} req / {rs.get('failed_items', 0)} items",
            ]
        )
    lines += _table(
        [
            "items/req",
            "concurrent",
            "rewardsvc calls/s",
            "direct calls/s",
            "rewardsvc p50/p99 ms",
            "direct p50/p99 ms",
            "added p50/p99 ms",
            "HTTP+API p50/p99 ms",
            "CPU svc/stub/load",
            "svc CPU ms/call",
            "rewardsvc failures",
        ],
        rows,
    )
    failures = [
        f"- {c['items_per_request']} item(s) x {c['concurrency']}: {who}: {c[who]['first_error']}"
        for c in o["cells"]
        for who in ("rewardsvc", "direct")
        if c[who].get("first_error")
    ]
    if failures:
        lines += ["First failure per cell:", "", *failures, ""]
    t = o.get("transport")
    if t:
        lines += [
            f"Client cost per judge call, {t['calls']} calls one at a time to the stub, measured "
            "in the load generator (CPU = this process's CPU time per call):",
            "",
        ]
        lines += _table(
            ["client", "CPU ms/call", "wall ms/call"],
            [
                [name, f"{t[key]['cpu_ms_per_call']:.2f}", f"{t[key]['wall_ms_per_call']:.2f}"]
                for key, name in CLIENTS
                if key in t
            ],
        )
    p = o.get("profile")
    if p:
        lines += ["### Where the service's time goes (py-spy)", ""]
        if "error" in p:
            lines += [f"Profile failed: {p['error']}", ""]
        else:
            load = p["load_during_profile"]
            lines += [
                f"{p['samples']} samples at {p['concurrency']} concurrent requests of "
                f"{p['items_per_request']} item(s) ({load['calls_per_s']:.0f} calls/s under the "
                f"profiler). Raw stacks: `{p['raw_file']}`, flame graph: `{p['flamegraph_file']}`.",
                "",
            ]
            lines += _table(
                ["package (self time)", "%"], [list(r) for r in p["self_by_package_pct"]]
            )
            lines += _table(
                ["function (self time)", "%"],
                [[f"`{k}`", pct] for k, pct in p["self_by_function_pct"]],
            )
            lines += _table(
                ["rewardsvc / route function (inclusive)", "%"],
                [[f"`{k}`", pct] for k, pct in p["inclusive_rewardsvc_pct"]],
            )
    return lines


def _memory(mem: dict[str, Any] | None, e2e: dict[str, Any] | None) -> list[str]:
    lines = ["## 3. Memory", ""]
    if e2e:
        lines += [
            "Under the end-to-end load (part 1): peak sampled RSS "
            f"{e2e['memory']['peak_rss_mb']:.0f} MB, "
            f"VmHWM {e2e['memory']['vmhwm_mb']:.0f} MB.",
            "",
        ]
    if mem:
        lines += [
            f"Cache fill through the stub: bound {mem['cache_bound_verdicts']:,} verdicts "
            f"(REWARDSVC_CACHE_SIZE), {mem['verdicts_driven']:,} verdicts driven "
            f"({mem['items_driven']:,} distinct items) in {mem['seconds']:.0f} s "
            f"({mem['verdicts_per_s']:,.0f} verdicts/s).",
            "",
        ]
        lines += _table(
            [
                "baseline RSS",
                "RSS at the bound",
                "RSS at the end",
                "growth after the bound",
                "VmHWM",
                "re-sent last batch: hits",
                "re-sent first batch: hits",
            ],
            [
                [
                    f"{mem['baseline_rss_mb']:.0f} MB",
                    f"{_f(mem['rss_at_bound_mb'], 0)} MB",
                    f"{mem['rss_end_mb']:.0f} MB",
                    f"{_f(mem['growth_after_bound_mb'], 1)} MB",
                    f"{mem['vmhwm_mb']:.0f} MB",
                    f"{mem['recheck_last_batch_cache_hits']}/{mem['recheck_calls_per_batch']}",
                    f"{mem['recheck_first_batch_cache_hits']}/{mem['recheck_calls_per_batch']}",
                ]
            ],
        )
        if mem.get("projected_rss_at_default_bound_mb") is not None:
            lines += [
                f"Slope while filling: {mem['mb_per_1000_verdicts']:.2f} MB per 1,000 cached "
                f"verdicts; at the service's default bound ({mem['default_cache_size']:,}) that "
                f"projects to {mem['projected_rss_at_default_bound_mb']:.0f} MB"
                + (
                    " (measured directly in this run)."
                    if mem["cache_bound_verdicts"] == mem["default_cache_size"]
                    else " (a projection: run with --cache-bound "
                    f"{mem['default_cache_size']} to measure it)."
                ),
                "",
            ]
    return lines


def _scaling(s: dict[str, Any]) -> list[str]:
    lines = [
        "## 4. How cost grows",
        "",
        f"Stub judge with {s['stub_delay_ms']:g} ms per call; 4 requests in flight; fresh "
        "items and rubric version per point.",
        "",
    ]
    stub = s["stub"]
    for dim, title in (
        ("batch_size", "items per request"),
        ("criteria", "criteria"),
        ("judges", "judges"),
    ):
        rows = [
            [
                p["value"],
                f"{p['rewards_per_s']:,.1f}",
                f"{p['judge_calls_per_s']:,.0f}",
                p["judge_calls"],
            ]
            for p in stub.get(dim, [])
        ]
        lines += _table([title, "rewards/s", "judge calls/s", "judge calls"], rows)
    for where, grpo in (
        ("stub", stub.get("grpo")),
        ("real judge", (s.get("real") or {}).get("grpo")),
    ):
        if not grpo:
            continue
        base = grpo["every call sent"]["rewards_per_s"]
        lines += [
            f"GRPO-shaped workload on the {where} (groups of 8 completions per prompt, "
            "prompts recurring across steps):",
            "",
        ]
        rows = [
            [
                mode,
                g["items"],
                g["distinct_items"],
                g["planned_calls"],
                g["judge_calls"],
                g["cache_hits"],
                g["deduplicated"],
                f"{g['rewards_per_s']:,.2f}",
                f"{g['rewards_per_s'] / base:.2f}×",
            ]
            for mode, g in grpo.items()
        ]
        lines += _table(
            [
                "mode",
                "items",
                "distinct",
                "planned calls",
                "calls sent",
                "cache hits",
                "deduplicated",
                "rewards/s",
                "speed-up",
            ],
            rows,
        )
    real = s.get("real")
    if real and real.get("points"):
        lines += ["Real judge points:", ""]
        rows = [
            [
                p["label"],
                p["items"],
                f"{p['rewards_per_s']:.2f}",
                f"{p['judge_calls_per_s']:.1f}",
                p["statuses"],
            ]
            for p in real["points"]
        ]
        lines += _table(["point", "items", "rewards/s", "judge calls/s", "statuses"], rows)
    return lines


def write(results: dict[str, Any], out_dir: Path) -> None:
    """Write results.md and bench.png into ``out_dir``."""
    (out_dir / "results.md").write_text(markdown(results))
    plot(results, out_dir / "bench.png")
