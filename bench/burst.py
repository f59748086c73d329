"""Does the event loop stay responsive under a burst? /healthz latency during 200 requests.

A real ``rewardsvc serve`` (the bench rubric cut to two criteria, one judge: the stub judge
of ``bench/stub.py`` with a fixed latency per call, in its own process) first scores
``--items`` distinct items, so that their verdicts are cached. Then ``--requests``
concurrent ``POST /v1/rewards`` carry those items again plus ``--fresh`` new ones (mostly
cache hits, a few judge calls: the shape of the fault plan's burst phase), while a poller
asks ``GET /healthz`` every ``--poll-ms``. The burst ends when every request has answered;
the report is the max and p99 of the healthz latencies seen meanwhile (bound: 500 ms), and
the requests' statuses. Loopback only; about half a minute.

    .venv/bin/python -m bench.burst [--requests 200] [--items 381] [--fresh 27] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.harness import (
    distinct_items,
    http_get,
    judge_entry,
    log,
    percentile,
    post_rewards,
    rewardsvc_service,
    rubric_variant,
    session,
    start_stub,
)
from bench.items import bench_items
from bench.outputs import add_out_argument, write_results
from bench.profiling import py_spy, summarize_profile

BOUND_MS = 500.0


def split(items: list[dict[str, Any]], parts: int) -> list[list[dict[str, Any]]]:
    """``items`` dealt round robin into ``parts`` batches (every batch gets one or more)."""
    batches: list[list[dict[str, Any]]] = [[] for _ in range(parts)]
    for n, item in enumerate(items):
        batches[n % parts].append(item)
    return [b for b in batches if b]


def poll_health(url: str, every_s: float, stop: threading.Event, out: list[float]) -> None:
    """GET /healthz every ``every_s`` until ``stop``, a new connection each time as a
    Kubernetes probe does, from a thread of its own (so that the load generator's loop does
    not delay it); the latencies in ms go to ``out`` (a failed probe counts its time)."""
    while not stop.is_set():
        start = time.perf_counter()
        http_get(f"{url}/healthz", timeout=10.0)
        out.append((time.perf_counter() - start) * 1000.0)
        stop.wait(every_s)


async def burst(
    url: str, rubric: str, batches: list[list[dict[str, Any]]], poll_s: float
) -> dict[str, Any]:
    """Fire every batch at once while polling /healthz; the latencies and statuses."""
    stop = threading.Event()
    latencies: list[float] = []
    poller = threading.Thread(target=poll_health, args=(url, poll_s, stop, latencies))
    poller.start()
    await asyncio.sleep(0.2)  # a few probes of the idle service first
    async with session() as http:
        started = time.perf_counter()
        answers = await asyncio.gather(*(post_rewards(http, url, rubric, b) for b in batches))
        elapsed = time.perf_counter() - started
    stop.set()
    poller.join()
    statuses: dict[str, int] = {}
    calls = hits = 0
    for a in answers:
        statuses[str(a.status)] = statuses.get(str(a.status), 0) + 1
        if a.ok:
            calls += int(a.body["usage"]["judge_calls"])
            hits += int(a.body["usage"]["cache_hits"])
    return {
        "requests": len(batches),
        "items": sum(len(b) for b in batches),
        "burst_s": round(elapsed, 2),
        "statuses": statuses,
        "judge_calls": calls,
        "cache_hits": hits,
        "healthz_probes": len(latencies),
        "healthz_max_ms": round(max(latencies), 1),
        "healthz_p99_ms": round(percentile(latencies, 99), 1),
        "healthz_p50_ms": round(percentile(latencies, 50), 1),
    }


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Start the stub and the service, warm the cache, fire the bursts."""
    stub, judge_url = start_stub(workdir / "logs", args.delay_ms)
    try:
        pool = {"judges": {"primary": judge_entry(judge_url, "stub", max_concurrency=64)}}
        rubric = rubric_variant("burst", criteria=2)
        cached = distinct_items(bench_items(), args.items, "cached")
        env = {  # as deployed in the fault plan: a persistent cache and the reward log
            "REWARDSVC_CACHE_PATH": str(workdir / "verdicts.sqlite"),
            "REWARDSVC_REWARD_LOG": str(workdir / "rewards.jsonl"),
        }
        rounds = []
        with rewardsvc_service(workdir / "svc", pool, [rubric], extra_env=env) as svc:
            async with session() as http:
                for batch in split(cached, max(1, len(cached) // 32)):
                    warm = await post_rewards(http, svc.url, rubric.id, batch)
                    if not warm.ok:
                        raise RuntimeError(f"warm-up failed: {warm.status} {warm.body}")
            log(f"burst: {len(cached)} items cached; {args.requests} requests at once")
            spy = (
                None
                if args.profile is None
                else start_profile(svc.pid, args.profile, 3 * args.rounds + 1)
            )
            for n in range(args.rounds):
                fresh = distinct_items(bench_items(), args.fresh, f"fresh{n}")
                batches = split(cached + fresh, args.requests)
                rounds.append(await burst(svc.url, rubric.id, batches, args.poll_ms / 1000.0))
                await asyncio.sleep(1.0)  # the loop idles between rounds
            profile = None
            if spy is not None:
                spy.communicate(timeout=60)
                profile = summarize_profile(args.profile.read_text())
    finally:
        stub.stop()
    worst = max(r["healthz_max_ms"] for r in rounds)
    result: dict[str, Any] = {
        "rounds": rounds,
        "healthz_max_ms": worst,
        "healthz_p99_ms_median": sorted(r["healthz_p99_ms"] for r in rounds)[len(rounds) // 2],
        "within_bound": worst <= BOUND_MS,
    }
    if profile is not None:
        result["profile"] = profile
    return result


def start_profile(pid: int, out: Path, seconds: int) -> subprocess.Popen[bytes]:
    """py-spy sampling the service's threads that hold the GIL (where the loop's time goes)
    for ``seconds``, raw collapsed stacks to ``out``."""
    exe = py_spy()
    if exe is None:
        raise RuntimeError("py-spy not installed (pip install py-spy)")
    argv = [exe, "record", "--pid", str(pid), "--duration", str(seconds), "--rate", "500", "--gil"]
    argv += ["--function", "--format", "raw", "--output", str(out)]
    spy = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # py-spy attaches before the burst starts
    return spy


def markdown(result: dict[str, Any], command: str) -> str:
    """The report: per round, the burst's length and the healthz latencies."""
    lines = [
        "# /healthz during a burst",
        "",
        f"`{command}`: {result['rounds'][0]['requests']} concurrent requests of "
        f"{result['rounds'][0]['items']} items (mostly cache hits) per round; bound "
        f"{BOUND_MS:.0f} ms.",
        "",
        "| round | burst s | judge calls | cache hits | probes | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, r in enumerate(result["rounds"], 1):
        lines.append(
            f"| {n} | {r['burst_s']} | {r['judge_calls']} | {r['cache_hits']} | "
            f"{r['healthz_probes']} | {r['healthz_p50_ms']} | {r['healthz_p99_ms']} | "
            f"{r['healthz_max_ms']} |"
        )
    verdict = "within" if result["within_bound"] else "NOT within"
    lines += ["", f"Max {result['healthz_max_ms']} ms: {verdict} the bound.", ""]
    return "\n".join(lines)


def main() -> None:
    """Run the bursts and write their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--items", type=int, default=381, help="items cached before the burst")
    parser.add_argument("--fresh", type=int, default=27, help="new items in each burst")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="the stub judge's latency")
    parser.add_argument("--poll-ms", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3, help="bursts, one after the other")
    parser.add_argument("--profile", type=Path, help="py-spy's collapsed stacks to this file")
    add_out_argument(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rewardsvc-burst-") as tmp:
        result = asyncio.run(run(args, Path(tmp)))
    write_results(args.out, "burst", result, markdown(result, "python -m bench.burst"))


if __name__ == "__main__":
    main()
