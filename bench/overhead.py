"""Part 2: service overhead against a zero-latency stub judge in another process.

The stub is ``tests/fakejudge.py`` run as its own process. For each request size (items per
request, 5 criterion calls per item) and each number of concurrent requests, two closed
loops run for a fixed time on fresh, distinct items:

- **direct**: the same judge calls rewardsvc would make for one request, rendered with
  ``rewardsvc.judges.prompts`` and sent as raw aiohttp POSTs of the same JSON bodies (capped at
  the pool's ``max_concurrency`` like rewardsvc's backend), timed per request-equivalent;
- **rewardsvc**: ``POST /v1/rewards`` to a ``rewardsvc serve`` subprocess.

Added latency = rewardsvc latency - direct latency for the same work, per percentile.
Judge calls/s is what rewardsvc orchestrated (``usage.judge_calls``) per second of wall time.
CPU use (cores) of the service, the stub and this load generator is reported per cell,
because on a small machine all three share the cores. The issue's targets are ratios of the
two loops in the same run: the service's CPU per judge call against the direct loop's (the
load generator's CPU per call, which renders the same prompts), judge calls/s, and the p99
added at one request in flight against the direct loop's own p99. The **floor** loop sends
the same requests to a bare uvicorn + FastAPI endpoint (``bench.overhead_floor``) that
parses them into ``RewardRequest`` and answers a response of the same shape without a judge
call: its CPU per request plus the raw client's calls, per call, over the raw client's, is
the floor ratio, reported beside the CPU ratio. A client-cost table
times single calls of each client (the openai SDK two ways, rewardsvc's lean transport
and its whole backend, raw aiohttp). If a target is missed (or with ``--profile``),
py-spy samples the service under the 16-concurrent load (``bench.profiling``). Besides
the run's ``results.json``, the ratios go to ``overhead.md`` in the results folder.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import openai
import psutil
from openai.types.chat import ChatCompletion

from bench.direct import call_kwargs, wire_body
from bench.harness import (
    RunContext,
    judge_entry,
    log,
    percentile,
    pool_model,
    post_rewards,
    rewardsvc_service,
    rubric_variant,
    session,
    start_fakejudge,
)
from bench.items import bench_items
from bench.overhead_floor import start_floor
from bench.overhead_report import markdown
from bench.profiling import profile_service
from rewardsvc.judges.backends import Backend
from rewardsvc.judges.shapes import CHAT
from rewardsvc.judges.transport import JudgeTransport

CRITERIA = 5
# The stub pool's max_concurrency (the direct client gets the same cap). Far above the
# default of 32 so the service is not throttled by its own limit; not 1024: opening that
# many connections at once to one single-process stub made connects time out and the
# circuit breaker open.
MAX_CONCURRENCY = 128
TARGET_CALLS_PER_S = 3000.0
TARGET_P99_ADDED_MS = 5.0
TARGET_CONCURRENCY = 16
# Issue 18's targets, as ratios of rewardsvc to the direct (raw aiohttp) loop in one run.
TARGET_CPU_RATIO = 1.5  # service CPU per judge call <= 1.5x the raw client's
TARGET_RATE_RATIO = 0.5  # judge calls/s at 16 concurrent >= 0.5x the raw client's
# At 1 request in flight, the p99 rewardsvc adds must not exceed the raw client's own p99.
# The fair form of the CPU target (bench/results/overhead.md argues it): the CPU ratio at
# most the floor ratio of the same run plus this margin, by items per request.
FLOOR_MARGIN = {1: 1.0, 8: 0.75}


Outcome = tuple[float, int, float | None]
"""One request: latency_s, judge calls, engine-side latency_ms (or None)."""


class ItemFailures(Exception):
    """A request that returned, but with ``count`` items that got no reward."""

    def __init__(self, count: int, message: str):
        super().__init__(message)
        self.count = count


def _first_error(result: dict[str, Any]) -> str:
    """The status and first judge error of a failed item (the whole item when it has none)."""
    for judge in (result.get("judges") or {}).values():
        for verdict in [judge, *(judge.get("criteria") or {}).values()]:
            if verdict.get("error"):
                return f"{result['status']}: {verdict['error']}"
    return f"{result['status']}: {result}"


class ItemSource:
    """Fresh distinct items forever (a numbered line makes each unique)."""

    def __init__(self, tag: str):
        self.base = bench_items()
        self.tag = tag
        self.counter = itertools.count()

    def take(self, n: int) -> list[dict[str, Any]]:
        """The next ``n`` distinct items."""
        out = []
        for _ in range(n):
            i = next(self.counter)
            src = self.base[i % len(self.base)]
            out.append(
                {
                    **src,
                    "id": f"{self.tag}-{i}",
                    "completion": f"{src['completion']}\n\n#{self.tag}-{i}",
                }
            )
        return out


async def closed_loop(
    request: Callable[[], Awaitable[Outcome]],
    concurrency: int,
    seconds: float,
) -> dict[str, Any]:
    """``concurrency`` workers send requests back to back for ``seconds``.

    Only requests whose every item succeeded count towards calls and latency; a request
    with failed items (:class:`ItemFailures`) or an HTTP error counts in ``errors`` /
    ``failed_items`` instead, since a fast failure is not throughput.
    """
    latencies: list[float] = []
    inside: list[float] = []
    calls = 0
    errors = 0
    failed_items = 0
    first_error: str | None = None
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal calls, errors, failed_items, first_error
        while time.perf_counter() < deadline:
            try:
                latency, n, inner = await request()
            except Exception as exc:
                errors += 1
                failed_items += exc.count if isinstance(exc, ItemFailures) else 0
                first_error = first_error or f"{type(exc).__name__}: {str(exc)[:300]}"
                continue
            latencies.append(latency)
            calls += n
            if inner is not None:
                inside.append(latency * 1000 - inner)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    return {
        "requests": len(latencies),
        "errors": errors,
        "failed_items": failed_items,
        "first_error": first_error,
        "calls": calls,
        "elapsed_s": elapsed,
        "calls_per_s": calls / elapsed if elapsed else 0.0,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "http_overhead_p50_ms": percentile(inside, 50) if inside else None,
        "http_overhead_p99_ms": percentile(inside, 99) if inside else None,
    }


class RawClient:
    """The cheapest way to make a judge call: one aiohttp POST, the reply read as JSON.

    The overhead baseline: rewardsvc's added latency is measured against this, so it
    includes what rewardsvc's own HTTP client (the openai SDK) costs; ``transport_cost``
    shows that part separately. (The openai SDK as a baseline was no good here: at 80+
    calls in flight it stalled, waiting rather than computing, at a few hundred calls/s.)
    """

    def __init__(self, url: str, max_concurrency: int):
        self.url = f"{url}/chat/completions"
        self.http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=max_concurrency))

    async def post(self, body: dict[str, Any]) -> bool:
        """One call; True when the stub answered 200 with JSON."""
        try:
            async with self.http.post(
                self.url, data=json.dumps(body), headers={"Content-Type": "application/json"}
            ) as r:
                json.loads(await r.read())
                return r.status == 200
        except (aiohttp.ClientError, ValueError):
            return False

    async def aclose(self) -> None:
        """Close the session."""
        await self.http.close()


class CpuMeter:
    """CPU seconds used by some processes over a block, as cores (CPU s / wall s)."""

    def __init__(self, pids: dict[str, int]):
        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}

    def __enter__(self) -> CpuMeter:
        self.start = time.perf_counter()
        self.before = {n: sum(p.cpu_times()[:2]) for n, p in self.procs.items()}
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self.start
        self.cores = {
            n: round((sum(p.cpu_times()[:2]) - self.before[n]) / wall, 2)
            for n, p in self.procs.items()
        }


async def run(ctx: RunContext) -> dict[str, Any]:
    """Run part 2 and return its results."""
    logs = ctx.workdir / "overhead" / "logs"
    rubric = rubric_variant(f"{ctx.run_id}-overhead")
    assert len(rubric.criteria) == CRITERIA
    fake, url = start_fakejudge(logs)
    try:
        floor, floor_url = start_floor(logs, "primary", [c.id for c in rubric.criteria])
        try:
            return await _run(ctx, fake.pid, url, rubric, (floor.pid, floor_url))
        finally:
            floor.stop()
    finally:
        fake.stop()


async def _run(
    ctx: RunContext, fake_pid: int, url: str, rubric: Any, floor: tuple[int, str]
) -> dict[str, Any]:
    load_at_start = [round(x, 1) for x in os.getloadavg()]
    pool = {"judges": {"primary": judge_entry(url, "fake", max_concurrency=MAX_CONCURRENCY)}}
    config = pool_model(pool).judges["primary"]
    source = ItemSource(ctx.run_id)
    cells = []
    profile: dict[str, Any] | None = None
    warm_s = min(2.0, ctx.overhead_seconds / 2)
    with rewardsvc_service(ctx.workdir / "overhead", pool, [rubric]) as svc:
        raw = RawClient(url, MAX_CONCURRENCY)
        async with session() as http:

            def direct_request(size: int) -> Callable[[], Awaitable[Outcome]]:
                async def go() -> Outcome:
                    bodies = [
                        wire_body(kw)
                        for it in source.take(size)
                        for kw in call_kwargs(rubric, it, config)
                    ]
                    start = time.perf_counter()
                    ok = await asyncio.gather(*(raw.post(b) for b in bodies))
                    if not all(ok):
                        raise ItemFailures(size, f"{ok.count(False)} direct calls failed")
                    return time.perf_counter() - start, len(bodies), None

                return go

            def rs_request(size: int, base: str = svc.url) -> Callable[[], Awaitable[Outcome]]:
                async def go() -> Outcome:
                    r = await post_rewards(http, base, rubric.id, source.take(size))
                    if not r.ok:
                        raise RuntimeError(f"HTTP {r.status}: {r.body}")
                    usage = r.body["usage"]
                    failed = [x for x in r.body["results"] if x["status"] != "ok"]
                    if failed:
                        raise ItemFailures(len(failed), _first_error(failed[0]))
                    return r.latency_s, int(usage["judge_calls"]), float(usage["latency_ms"])

                return go

            pids = {"rewardsvc": svc.pid, "stub": fake_pid, "load generator": os.getpid()}
            pids["floor"] = floor[0]
            for size in ctx.overhead_sizes:
                for conc in ctx.overhead_concurrency:
                    log(f"overhead: {size} item(s)/request x {conc} concurrent")
                    await closed_loop(direct_request(size), conc, warm_s)
                    with CpuMeter(pids) as direct_cpu:
                        direct = await closed_loop(direct_request(size), conc, ctx.overhead_seconds)
                    await closed_loop(rs_request(size, floor[1]), conc, warm_s)
                    with CpuMeter(pids) as floor_cpu:
                        bare = await closed_loop(
                            rs_request(size, floor[1]), conc, ctx.overhead_seconds
                        )
                    await closed_loop(rs_request(size), conc, warm_s)
                    with CpuMeter(pids) as rs_cpu:
                        rs = await closed_loop(rs_request(size), conc, ctx.overhead_seconds)
                    svc_cpu_s = rs_cpu.cores["rewardsvc"] * rs["elapsed_s"]
                    raw_cpu_s = direct_cpu.cores["load generator"] * direct["elapsed_s"]
                    direct_ms = _ms_per_call(raw_cpu_s, direct["calls"])
                    bare_ms = _ms_per_call(
                        floor_cpu.cores["floor"] * bare["elapsed_s"], bare["calls"]
                    )
                    cell = {
                        "rewardsvc_cpu_ms_per_call": _ms_per_call(svc_cpu_s, rs["calls"]),
                        "direct_cpu_ms_per_call": direct_ms,
                        # The floor per judge call: the bare endpoint's CPU per request spread
                        # over the request's calls, plus the raw client's own calls.
                        "floor_cpu_ms_per_call": bare_ms + direct_ms
                        if bare_ms is not None and direct_ms is not None
                        else None,
                        "items_per_request": size,
                        "calls_per_request": size * CRITERIA,
                        "concurrency": conc,
                        "direct": {**direct, "cpu_cores": direct_cpu.cores},
                        "rewardsvc": {**rs, "cpu_cores": rs_cpu.cores},
                        "floor": {**bare, "cpu_cores": floor_cpu.cores},
                        "added_p50_ms": rs["p50_ms"] - direct["p50_ms"],
                        "added_p99_ms": rs["p99_ms"] - direct["p99_ms"],
                    }
                    cells.append(cell)
                    log(
                        f"  rewardsvc {rs['calls_per_s']:.0f} calls/s p50 {rs['p50_ms']:.1f} ms "
                        f"p99 {rs['p99_ms']:.1f} ms | direct {direct['calls_per_s']:.0f} calls/s "
                        f"p50 {direct['p50_ms']:.1f} ms p99 {direct['p99_ms']:.1f} ms"
                    )
            transport = await transport_cost(url, rubric, config, source)
            targets = check_targets(cells)
            if ctx.profile or not all(targets.values()):
                size = min(ctx.overhead_sizes)
                profile = await profile_service(
                    ctx,
                    svc.pid,
                    lambda s: closed_loop(rs_request(size), TARGET_CONCURRENCY, s),
                    TARGET_CONCURRENCY,
                    size,
                )
        await raw.aclose()
    result = {
        "stub": "tests/fakejudge.py (own process, zero latency)",
        "pool_max_concurrency": MAX_CONCURRENCY,
        "criteria": CRITERIA,
        "seconds_per_cell": ctx.overhead_seconds,
        # The ratios are of one run, but a loaded machine still skews them: say how loaded.
        "load_avg_at_start": load_at_start,
        "cells": cells,
        "transport": transport,
        "targets": targets,
        "ratios": ratios(cells),
        "profile": profile,
    }
    (ctx.out_dir / "overhead.md").write_text(markdown(result))
    return result


async def transport_cost(
    url: str, rubric: Any, config: Any, source: ItemSource, n: int = 200
) -> dict[str, Any]:
    """CPU and wall time per judge call of five clients, one call at a time, to the stub.

    ``openai.AsyncOpenAI.chat.completions.create`` is the SDK's typed call on its default
    httpx2 transport; ``AsyncOpenAI.post`` with the finished body over the SDK's aiohttp
    transport is what rewardsvc's backend sent before its lean transport;
    ``JudgeTransport.post`` is that lean transport (aiohttp, ``json.loads``, plain dicts);
    ``Backend.send`` is the whole per-call path of rewardsvc's backend around it (slot,
    retries, breaker, deadline, the reply's shape check); a raw aiohttp POST with
    ``json.loads`` of the reply is the least a client can do.
    """
    calls = [kw for it in source.take(n // CRITERIA + 1) for kw in call_kwargs(rubric, it, config)]
    calls = calls[:n]
    bodies = [wire_body(kw) for kw in calls]
    out: dict[str, Any] = {"calls": len(calls)}
    client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=0)
    await client.chat.completions.create(**calls[0])
    cpu, wall = time.process_time(), time.perf_counter()
    for kw in calls:
        await client.chat.completions.create(**kw)
    out["openai_create"] = _per_call(cpu, wall, len(calls))
    await client.close()
    client = openai.AsyncOpenAI(
        base_url=url, api_key="EMPTY", max_retries=0, http_client=openai.DefaultAioHttpClient()
    )
    await client.post("/chat/completions", body=bodies[0], cast_to=ChatCompletion)
    cpu, wall = time.process_time(), time.perf_counter()
    for body in bodies:
        await client.post("/chat/completions", body=body, cast_to=ChatCompletion)
    out["openai_post"] = _per_call(cpu, wall, len(calls))
    await client.close()
    lean = JudgeTransport(url, max_connections=MAX_CONCURRENCY, connect_s=5)
    await lean.post(CHAT.path, bodies[0], "Bearer EMPTY")
    cpu, wall = time.process_time(), time.perf_counter()
    for body in bodies:
        await lean.post(CHAT.path, body, "Bearer EMPTY")
    out["lean_transport"] = _per_call(cpu, wall, len(calls))
    await lean.aclose()
    backend = Backend("overhead", config)
    await backend.send(CHAT, bodies[0])
    cpu, wall = time.process_time(), time.perf_counter()
    for body in bodies:
        await backend.send(CHAT, body)
    out["backend_send"] = _per_call(cpu, wall, len(calls))
    await backend.aclose()
    async with session() as http:
        async with http.post(f"{url}/chat/completions", json=bodies[0]) as r:
            await r.read()
        cpu, wall = time.process_time(), time.perf_counter()
        for body in bodies:
            async with http.post(
                f"{url}/chat/completions",
                data=json.dumps(body),
                headers={"Content-Type": "application/json"},
            ) as r:
                json.loads(await r.read())
        out["raw_aiohttp"] = _per_call(cpu, wall, len(calls))
    return out


def _per_call(cpu_start: float, wall_start: float, n: int) -> dict[str, float]:
    return {
        "cpu_ms_per_call": 1000 * (time.process_time() - cpu_start) / n,
        "wall_ms_per_call": 1000 * (time.perf_counter() - wall_start) / n,
    }


def _ms_per_call(cpu_s: float, calls: int) -> float | None:
    return 1000 * cpu_s / calls if calls else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def ratios(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cell, rewardsvc against the direct loop of the same run: CPU per judge call (and
    the floor's, a bare endpoint plus the raw calls), judge calls/s, and the p99 added
    against the direct loop's own p99."""
    return [
        {
            "items_per_request": c["items_per_request"],
            "concurrency": c["concurrency"],
            "cpu_per_call": _ratio(c["rewardsvc_cpu_ms_per_call"], c["direct_cpu_ms_per_call"]),
            "floor_per_call": _ratio(c.get("floor_cpu_ms_per_call"), c["direct_cpu_ms_per_call"]),
            "calls_per_s": _ratio(c["rewardsvc"]["calls_per_s"], c["direct"]["calls_per_s"]),
            "p99_added_over_direct_p99": _ratio(c["added_p99_ms"], c["direct"]["p99_ms"]),
        }
        for c in cells
    ]


def _at_most(value: float | None, bound: float) -> bool:
    return value is not None and value <= bound


def check_targets(cells: list[dict[str, Any]]) -> dict[str, bool]:
    """Part-2 targets: the absolute ones at 16 concurrent requests (calls/s at any size, p99
    added at every size) and issue 18's ratios to the direct loop (every size)."""
    at = [c for c in cells if c["concurrency"] == TARGET_CONCURRENCY]
    one = [r for r in ratios(cells) if r["concurrency"] == 1]
    sixteen = [r for r in ratios(cells) if r["concurrency"] == TARGET_CONCURRENCY]
    if not at:
        return {}
    return {
        f"calls_per_s >= {TARGET_CALLS_PER_S:.0f}": max(c["rewardsvc"]["calls_per_s"] for c in at)
        >= TARGET_CALLS_PER_S,
        f"p99 added <= {TARGET_P99_ADDED_MS:.0f} ms": all(
            c["added_p99_ms"] <= TARGET_P99_ADDED_MS for c in at
        ),
        f"service CPU per call <= {TARGET_CPU_RATIO}x direct at {TARGET_CONCURRENCY}": all(
            _at_most(r["cpu_per_call"], TARGET_CPU_RATIO) for r in sixteen
        ),
        f"calls/s >= {TARGET_RATE_RATIO}x direct at {TARGET_CONCURRENCY}": all(
            r["calls_per_s"] is not None and r["calls_per_s"] >= TARGET_RATE_RATIO for r in sixteen
        ),
        "p99 added <= direct p99 at 1": all(
            _at_most(r["p99_added_over_direct_p99"], 1.0) for r in one
        ),
        f"service CPU per call <= floor + {_margins()} at {TARGET_CONCURRENCY}": all(
            r["floor_per_call"] is not None
            and _at_most(r["cpu_per_call"], r["floor_per_call"] + FLOOR_MARGIN[size])
            for r in sixteen
            if (size := r["items_per_request"]) in FLOOR_MARGIN
        ),
    }


def _margins() -> str:
    return ", ".join(
        f"{m:g}x at {n} item{'s' if n > 1 else ''}" for n, m in sorted(FLOOR_MARGIN.items())
    )
