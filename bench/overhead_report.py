"""``overhead.md``: bench part 2's results as ratios of rewardsvc to the raw client.

Written by ``bench.overhead`` next to the run's ``results.json``, so the ratios the
issue's targets ask for can be read without the whole report (``bench.report`` renders
the full part-2 section of ``results.md``).
"""

from __future__ import annotations

import os
from typing import Any

from bench.targets import TARGET_CONCURRENCY

CLIENTS = (
    ("openai_create", "openai.AsyncOpenAI chat.completions.create (httpx2)"),
    ("openai_post", "openai.AsyncOpenAI post over aiohttp (rewardsvc's backend before)"),
    ("lean_transport", "rewardsvc JudgeTransport.post (aiohttp + json.loads, plain dicts)"),
    ("backend_send", "rewardsvc Backend.send (the above + slot, retries, breaker, shape check)"),
    ("raw_aiohttp", "raw aiohttp POST + json.loads"),
)
"""The client-cost table's rows: key in ``transport``, label."""


def _rows(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return [*lines, ""]


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _x(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}×"


def _above(r: dict[str, Any]) -> float | None:
    """The CPU ratio above the floor ratio: the service's own work per call, in units of
    the raw client's whole call."""
    cpu, floor = r["cpu_per_call"], r.get("floor_per_call")
    return None if cpu is None or floor is None else cpu - floor


def markdown(o: dict[str, Any]) -> str:
    """``overhead.md``: rewardsvc against the direct loop as ratios, the client costs, the
    targets, and where the service's time went when profiled."""
    lines = [
        "# Service overhead against the zero-latency stub (bench part 2)",
        "",
        f"Stub: {o['stub']}; {o['criteria']} judge calls per item; {o['seconds_per_cell']} s "
        "closed loop per cell; rewardsvc and the direct loop (raw aiohttp POSTs of the same "
        "bodies) measured in the same run. CPU per call: the service's CPU (rewardsvc loop) "
        "and the load generator's (direct loop, prompt rendering included) per judge call. "
        "Floor: a bare uvicorn + FastAPI endpoint (`bench/overhead_floor.py`) parsing the same "
        "request into `RewardRequest` and answering a `RewardResponse` of the same shape with "
        "no judge call, measured in the same run; floor per call = (its CPU per request + the "
        "raw client's CPU for the request's calls) / calls, and floor ratio = that over the raw "
        "client's CPU per call: the least CPU ratio an HTTP service on this stack can reach; "
        "above floor = CPU ratio - floor ratio, the service's own work per call. "
        f"Load average at the start: {o.get('load_avg_at_start', 'n/a')} "
        f"({os.cpu_count()} cores).",
        "",
    ]
    rows = []
    for c, r in zip(o["cells"], o["ratios"], strict=True):
        rs, d = c["rewardsvc"], c["direct"]
        rows.append(
            [
                str(c["items_per_request"]),
                str(c["concurrency"]),
                f"{_ms(c['rewardsvc_cpu_ms_per_call'])} / {_ms(c['direct_cpu_ms_per_call'])}",
                _x(r["cpu_per_call"]),
                _ms(c.get("floor_cpu_ms_per_call")),
                _x(r.get("floor_per_call")),
                _x(_above(r)),
                f"{rs['calls_per_s']:,.0f} / {d['calls_per_s']:,.0f}",
                _x(r["calls_per_s"]),
                f"{rs['p99_ms']:.1f} / {d['p99_ms']:.1f}",
                f"{c['added_p99_ms']:.1f}",
                _x(r["p99_added_over_direct_p99"]),
                f"{rs['errors']} / {d['errors']}",
            ]
        )
    lines += _rows(
        [
            "items/req",
            "concurrent",
            "CPU ms/call svc / direct",
            "CPU ratio",
            "floor ms/call",
            "floor ratio",
            "above floor",
            "calls/s svc / direct",
            "calls/s ratio",
            "p99 ms svc / direct",
            "p99 added ms",
            "added / direct p99",
            "failed req svc / direct",
        ],
        rows,
    )
    t = o["transport"]
    lines += [f"Client cost per judge call, {t['calls']} calls one at a time:", ""]
    lines += _rows(
        ["client", "CPU ms/call", "wall ms/call"],
        [
            [name, f"{t[k]['cpu_ms_per_call']:.2f}", f"{t[k]['wall_ms_per_call']:.2f}"]
            for k, name in CLIENTS
            if k in t
        ],
    )
    lines += _rows(
        ["target", "met"], [[k, "yes" if ok else "**no**"] for k, ok in o["targets"].items()]
    )
    lines += _above_floor(o)
    p = o.get("profile")
    if p and "error" not in p:
        lines += [f"py-spy, {p['samples']} samples at {p['concurrency']} concurrent:", ""]
        lines += _rows(["package (self)", "%"], [[k, str(v)] for k, v in p["self_by_package_pct"]])
        lines += _rows(
            ["function (self)", "%"], [[f"`{k}`", str(v)] for k, v in p["self_by_function_pct"]]
        )
    elif p:
        lines += [f"Profile failed: {p['error']}", ""]
    return "\n".join(lines)


def _above_floor(o: dict[str, Any]) -> list[str]:
    """What the service spends per judge call above the floor, at the targets' concurrency:
    the figures the fair CPU target is argued from."""
    rows = []
    for c, r in zip(o["cells"], o["ratios"], strict=True):
        svc, floor = c["rewardsvc_cpu_ms_per_call"], c.get("floor_cpu_ms_per_call")
        if c["concurrency"] != TARGET_CONCURRENCY or svc is None or floor is None:
            continue
        rows.append(
            [
                str(c["items_per_request"]),
                _ms(floor),
                _ms(svc),
                f"{1000 * (svc - floor):.0f}",
                f"{1000 * (svc - floor) * c['calls_per_request']:.0f}",
                _x(_above(r)),
            ]
        )
    if not rows:
        return []
    header = ["items/req", "floor ms/call", "svc ms/call", "above floor us/call"]
    header += ["above floor us/request", "above floor (x raw call)"]
    return [f"Above the floor at {TARGET_CONCURRENCY} concurrent:", "", *_rows(header, rows)]
