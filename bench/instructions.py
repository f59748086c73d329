"""The service's own work per request, in instructions (callgrind) and in CPU seconds.

Wall-clock overhead figures (``bench.overhead``) swing with the load of a small shared
machine; these do much less. Each side runs in-process, one request at a time, against the
zero-latency stub judge (``tests/fakejudge.py``, its own process, so its work is not
counted), with bench part 2's rubric (5 criteria, one logprob judge) and items:

- **cache-hit**: the service, the same items again (every verdict served from the cache);
- **fresh**: the service, distinct items each time (every criterion a judge call);
- **floor**: ``bench.overhead_floor``'s bare endpoint (the request parsed into the service's
  wire model, a response of the same shape, no judge call), through the same ASGI client;
- **raw-client**: the direct loop's judge calls for the same items (prompts rendered, one
  aiohttp POST each, the reply read as JSON), without any HTTP service in front;
- **unwatched**: the fresh path with the run's watch switched off in the measured process
  (attack-shape detection, the run monitor, the judge-call and batch metrics), to show
  what share of the own work the watch takes. Not a mode of the service: a measurement.

Each side runs twice, with N = small and N = large requests; start-up, imports and warm-up
are the same in both, so the difference over ``large - small`` requests is the work of one
request. Instructions come from ``valgrind --tool=callgrind`` (N = ``--small``,
``--large``); CPU seconds from the run's own user + system time without valgrind (N =
``--cpu-small``, ``--cpu-large``; the median of ``--cpu-repeats`` differences).

The service's **own work** is fresh - floor - raw-client: what it does beyond serving HTTP
and making the judge calls. Its ratio to the raw client's work is the lean-executor target
of issue 37 (fair form: own work <= 1.0x the raw client's at 1 item, <= 0.75x at 8). The
watch's share is fresh - unwatched. Both units are reported because
they disagree: the service's code runs fewer instructions per second than the raw client's
(a larger working set), so the instruction ratio understates its CPU.

    .venv/bin/python -m bench.instructions [--items 1] [--out bench/results]

Results are written as ``instructions`` (1 item) or ``instructions-<N>items``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from bench.direct import call_kwargs, wire_body
from bench.harness import (
    REPO_ROOT,
    distinct_items,
    judge_entry,
    pool_model,
    rubric_variant,
    start_fakejudge,
    write_rubric,
)
from bench.items import bench_items
from bench.outputs import add_out_argument, write_results
from bench.overhead import RawClient
from bench.overhead_floor import floor_app

SIDES = ("cache-hit", "fresh", "unwatched", "floor", "raw-client")
WARMUP_REQUESTS = 5
# callgrind's summary line of its output file: the instructions of the whole run.
_SUMMARY = re.compile(r"^(?:summary|totals): (\d+)", re.M)


def _items(side: str, count: int, size: int) -> list[list[dict[str, Any]]]:
    """The bodies' items of ``count`` requests: one batch repeated for ``cache-hit``,
    distinct batches for every other side."""
    if side == "cache-hit":
        batch = distinct_items(bench_items(), size, "hit")
        return [batch] * count
    fresh = distinct_items(bench_items(), count * size, "fresh")
    return [fresh[i * size : (i + 1) * size] for i in range(count)]


def _unwatch() -> None:
    """Switch the run's watch off in this process (the ``unwatched`` side): attack-shape
    detection finds nothing, the monitor and the Prometheus observer ignore what the engine
    reports. Patched here, not configurable in the service: a reward service that does not
    watch its runs is not one this project ships."""
    from rewardsvc.application import monitoring
    from rewardsvc.scoring import engine
    from rewardsvc.server import metrics

    ignored = ("judge_call", "batch", "cache_hit")
    switched_off: list[tuple[object, str, Any]] = [
        (engine, "detect", lambda rollout: []),
        (monitoring.MonitorObserver, "batch", lambda self, label, result: None),
        *((metrics.PrometheusObserver, name, lambda self, *args: None) for name in ignored),
    ]
    for owner, name, nothing in switched_off:
        setattr(owner, name, nothing)


async def _send(workdir: Path, judge_url: str, side: str, count: int, size: int) -> None:
    """Run ``side`` in-process: warm-up, then ``count`` requests one at a time."""
    rubric = rubric_variant("instructions")
    pool = {"judges": {"primary": judge_entry(judge_url, "fake")}}
    # A warm-up first, in both runs alike: lazy set-up (connections, first calls) is done
    # before the requests that differ, and the cache-hit path's first measured request is
    # a hit too (its one batch was scored in the warm-up).
    bodies = _items(side, WARMUP_REQUESTS + count, size)
    if side == "raw-client":
        config = pool_model(pool).judges["primary"]
        raw = RawClient(judge_url, 64)
        try:
            for items in bodies:
                calls = [wire_body(kw) for it in items for kw in call_kwargs(rubric, it, config)]
                if not all(await asyncio.gather(*(raw.post(b) for b in calls))):
                    raise RuntimeError("a raw judge call failed")
        finally:
            await raw.aclose()
        return
    if side == "floor":
        app = floor_app("primary", [c.id for c in rubric.criteria])
    else:
        from rewardsvc.server.app import create_app
        from rewardsvc.settings import Settings

        if side == "unwatched":
            _unwatch()

        rubrics = workdir / "rubrics"
        rubrics.mkdir(parents=True, exist_ok=True)
        write_rubric(rubrics, rubric)
        pool_file = workdir / "judges.yaml"
        pool_file.write_text(json.dumps(pool))
        app = create_app(Settings(rubrics_dir=rubrics, judge_pool=pool_file, reload=False))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc", timeout=60) as c:
            for items in bodies:
                reply = await c.post("/v1/rewards", json={"rubric": rubric.id, "items": items})
                reply.raise_for_status()
                statuses = {r["status"] for r in reply.json()["results"]}
                if statuses != {"ok"}:
                    raise RuntimeError(f"items were not scored: {reply.text[:400]}")


def _inner(judge_url: str, side: str, count: int, size: int, workdir: Path) -> list[str]:
    """The argv of one measured run of ``side``."""
    return [
        sys.executable,
        "-m",
        "bench.instructions",
        "--inner",
        side,
        "--judge-url",
        judge_url,
        "--count",
        str(count),
        "--items",
        str(size),
        "--workdir",
        str(workdir / f"{side}-{count}"),
    ]


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"measured run failed ({done.returncode}):\n{done.stderr[-3000:]}")


def _cpu_s(judge_url: str, side: str, count: int, size: int, workdir: Path) -> float:
    """CPU seconds (user + system) of one whole run of ``count`` requests."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    _run(_inner(judge_url, side, count, size, workdir / "cpu"))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _count(judge_url: str, side: str, count: int, size: int, workdir: Path) -> int:
    """Instructions of one whole run of ``count`` requests under callgrind."""
    out = workdir / f"callgrind.{side}.{count}.out"
    _run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            *_inner(judge_url, side, count, size, workdir),
        ]
    )
    found = _SUMMARY.search(out.read_text())
    if found is None:
        raise RuntimeError(f"no instruction total in {out.name}")
    return int(found.group(1))


def _per_request(small: float, large: float, requests: int) -> float:
    """The work of one request, from whole runs whose request counts differ by ``requests``."""
    return (large - small) / requests


def _own(fresh: float, unwatched: float, floor: float, raw: float) -> dict[str, float]:
    """The own work (fresh - floor - raw client) and the watch's part of it (fresh -
    unwatched), each also as a ratio to the raw client's work."""
    return {
        "own": round(fresh - floor - raw, 3),
        "own_to_raw": round((fresh - floor - raw) / raw, 3),
        "watch": round(fresh - unwatched, 3),
        "watch_to_raw": round((fresh - unwatched) / raw, 3),
    }


def measure(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Per side: M instructions and CPU ms per request; then the service's own work.

    The CPU runs go round the sides once per repeat, so that a change in the shared host's
    speed (it moves from minute to minute) falls on every side of a repeat alike; the own
    work ratio is the median of the repeats' ratios."""
    stub, judge_url = start_fakejudge(workdir / "logs")
    sides: dict[str, Any] = {side: {} for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    try:
        for side in SIDES:
            small = _count(judge_url, side, args.small, args.items, workdir)
            large = _count(judge_url, side, args.large, args.items, workdir)
            per_request = _per_request(small, large, args.large - args.small)
            sides[side].update(
                instructions_small=small,
                instructions_large=large,
                m_instructions_per_request=round(per_request / 1e6, 3),
            )
            print(f"{side}: {per_request / 1e6:.3f} M instructions per request", file=sys.stderr)
        for _ in range(args.cpu_repeats):
            for side in SIDES:
                small_s = _cpu_s(judge_url, side, args.cpu_small, args.items, workdir)
                large_s = _cpu_s(judge_url, side, args.cpu_large, args.items, workdir)
                ms = _per_request(small_s, large_s, args.cpu_large - args.cpu_small) * 1e3
                cpu[side].append(round(ms, 3))
            print(f"CPU ms per request: { ({s: c[-1] for s, c in cpu.items()}) }", file=sys.stderr)
    finally:
        stub.stop()
    for side in SIDES:
        sides[side].update(
            cpu_ms_per_request_runs=cpu[side],
            cpu_ms_per_request=round(statistics.median(cpu[side]), 3),
        )
    parts = ("fresh", "unwatched", "floor", "raw-client")
    instr = [sides[k]["m_instructions_per_request"] for k in parts]
    repeats = [_own(*runs) for runs in zip(*(cpu[k] for k in parts), strict=True)]
    return {
        "items_per_request": args.items,
        "small": args.small,
        "large": args.large,
        "cpu_small": args.cpu_small,
        "cpu_large": args.cpu_large,
        "cpu_repeats": args.cpu_repeats,
        **sides,
        "own_work": {
            "m_instructions_per_request": _own(*instr),
            "cpu_ms_per_request": {
                "own": statistics.median(r["own"] for r in repeats),
                "own_to_raw": statistics.median(r["own_to_raw"] for r in repeats),
                "own_to_raw_runs": [r["own_to_raw"] for r in repeats],
                "watch": statistics.median(r["watch"] for r in repeats),
                "watch_to_raw": statistics.median(r["watch_to_raw"] for r in repeats),
            },
        },
    }


def markdown(result: dict[str, Any], command: str) -> str:
    """The report: each side per request in both units, and the service's own work."""
    lines = [
        "# The service's own work per request",
        "",
        f"`{command}`: each side in-process against the stub judge, bench part 2's rubric "
        f"(5 criteria, one logprob judge), {result['items_per_request']} item(s) per request, "
        f"one request at a time. Instructions: (instr({result['large']}) - "
        f"instr({result['small']})) / {result['large'] - result['small']} under callgrind. "
        f"CPU: user + system seconds, (cpu({result['cpu_large']}) - cpu({result['cpu_small']}))"
        f" / {result['cpu_large'] - result['cpu_small']}, the median of "
        f"{result['cpu_repeats']} repeats (each in brackets).",
        "",
        "| side | M instructions per request | CPU ms per request |",
        "|---|---:|---:|",
    ]
    for side in SIDES:
        runs = ", ".join(f"{c:.3f}" for c in result[side]["cpu_ms_per_request_runs"])
        lines.append(
            f"| {side} | {result[side]['m_instructions_per_request']:.3f} | "
            f"{result[side]['cpu_ms_per_request']:.3f} ({runs}) |"
        )
    instr, cpu = (
        result["own_work"][u] for u in ("m_instructions_per_request", "cpu_ms_per_request")
    )
    lines += [
        "",
        "Own work (fresh - floor - raw-client) and the watch's part of it (fresh - unwatched), "
        "each with its ratio to the raw client's work:",
        "",
        "| unit | own work per request | own / raw client | watch | watch / raw client |",
        "|---|---:|---:|---:|---:|",
        f"| M instructions | {instr['own']:.3f} | {instr['own_to_raw']:.2f}x | "
        f"{instr['watch']:.3f} | {instr['watch_to_raw']:.2f}x |",
        f"| CPU ms (median of the repeats) | {cpu['own']:.3f} | {cpu['own_to_raw']:.2f}x | "
        f"{cpu['watch']:.3f} | {cpu['watch_to_raw']:.2f}x |",
        "",
        "CPU own / raw client in each repeat (the sides run in turn within a repeat): "
        + ", ".join(f"{r:.2f}x" for r in cpu["own_to_raw_runs"]),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Measure every side (or, with ``--inner``, be one measured run)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=50)
    parser.add_argument("--large", type=int, default=250)
    parser.add_argument("--cpu-small", type=int, default=200)
    parser.add_argument("--cpu-large", type=int, default=1200)
    parser.add_argument("--cpu-repeats", type=int, default=5)
    parser.add_argument("--items", type=int, default=1, help="items per request")
    parser.add_argument("--inner", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--judge-url", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    add_out_argument(parser)
    args = parser.parse_args()
    if args.inner:
        asyncio.run(_send(args.workdir, args.judge_url, args.inner, args.count, args.items))
        return
    if shutil.which("valgrind") is None:
        sys.exit("bench.instructions needs valgrind (callgrind) on PATH")
    with tempfile.TemporaryDirectory(prefix="rewardsvc-instructions-") as tmp:
        result = measure(args, Path(tmp))
    # The command as run: every measuring option that was not left at its default.
    measuring = ("small", "large", "cpu_small", "cpu_large", "cpu_repeats", "items")
    command = "python -m bench.instructions" + "".join(
        f" --{name.replace('_', '-')} {getattr(args, name)}"
        for name in measuring
        if getattr(args, name) != parser.get_default(name)
    )
    name = "instructions" if args.items == 1 else f"instructions-{args.items}items"
    write_results(args.out, name, result, markdown(result, command))


if __name__ == "__main__":
    main()
