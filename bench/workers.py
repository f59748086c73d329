"""Several uvicorn workers: do they pay? rewards/s and judge calls/s with 1 and 2 workers.

Both arms are the same ``rewardsvc serve`` (the bench rubric, 5 criteria, one judge) with
its state shared through a real Redis (Debian's ``redis-server``, as the tests start it)
and ``REWARDSVC_WORKERS`` 1 or 2, scoring against the zero-latency stub judge
(``tests/fakejudge.py`` in its own process), so that what is measured is the service's own
orchestration. A closed loop of ``--concurrency`` trainer-like clients sends batches of
``--batch`` fresh, distinct items (no verdict is cached) for ``--seconds``; the arms
alternate (1, 2, 2, 1, ...) within one run and the ratio of their means is reported, with
the CPU each used (service processes, stub, load generator), since on a small machine
they all share the cores.

    .venv/bin/python -m bench.workers [--seconds 12] [--rounds 2] [--out bench/results]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import psutil

from bench.harness import (
    REPO_ROOT,
    judge_entry,
    log,
    machine,
    post_rewards,
    rewardsvc_service,
    rubric_variant,
    session,
    start_fakejudge,
)
from bench.items import bench_items
from bench.outputs import add_out_argument, write_results

sys.path.insert(0, str(REPO_ROOT / "tests"))
from redis_server import RedisServer

CRITERIA = 5


class Items:
    """Fresh distinct items forever (a numbered line makes each unique)."""

    def __init__(self, tag: str):
        self.base, self.tag, self.counter = bench_items(), tag, itertools.count()

    def take(self, n: int) -> list[dict[str, Any]]:
        """The next ``n`` items."""
        out = []
        for i in (next(self.counter) for _ in range(n)):
            src = self.base[i % len(self.base)]
            out.append({**src, "id": f"{self.tag}-{i}", "completion": f"{src['completion']}\n#{i}"})
        return out


def cpu_seconds(procs: list[psutil.Process]) -> float:
    """User + system CPU seconds of these processes (those gone count 0)."""
    total = 0.0
    for p in procs:
        try:
            total += sum(p.cpu_times()[:2])
        except psutil.NoSuchProcess:
            continue
    return total


def service_procs(pid: int) -> list[psutil.Process]:
    """The service's process and its workers."""
    parent = psutil.Process(pid)
    return [parent, *parent.children(recursive=True)]


async def closed_loop(
    url: str, rubric: str, items: Items, concurrency: int, batch: int, seconds: float
) -> dict[str, float]:
    """``concurrency`` clients send batches back to back for ``seconds``."""
    rewards = calls = failed = 0
    deadline = time.perf_counter() + seconds

    async def client(http: aiohttp.ClientSession) -> None:
        nonlocal rewards, calls, failed
        while time.perf_counter() < deadline:
            result = await post_rewards(http, url, rubric, items.take(batch))
            if not result.ok:
                failed += batch
                continue
            ok = [r for r in result.body["results"] if r["reward"] is not None]
            rewards += len(ok)
            failed += batch - len(ok)
            calls += int(result.body["usage"]["judge_calls"])

    async with session() as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    return {
        "rewards": rewards,
        "failed_items": failed,
        "judge_calls": calls,
        "elapsed_s": elapsed,
        "rewards_per_s": rewards / elapsed,
        "judge_calls_per_s": calls / elapsed,
    }


def run_arm(
    workers: int, n: int, redis: RedisServer, judge_url: str, stub_pid: int, args: Any
) -> dict[str, Any]:
    """One arm: start the service with ``workers`` workers, warm it, measure, stop it."""
    tag = f"w{workers}-{n}"
    rubric = rubric_variant(tag, criteria=CRITERIA, judges=["primary"])
    pool = {"judges": {"primary": judge_entry(judge_url, "fake", max_concurrency=128)}}
    env = {
        "REWARDSVC_WORKERS": str(workers),
        "REWARDSVC_REDIS_URL": redis.url,
        "REWARDSVC_REDIS_PREFIX": f"bench-{tag}",
        "REWARDSVC_RELOAD": "false",
        "REWARDSVC_CANARY_BUDGET": "0",
        "REWARDSVC_LOG_LEVEL": "warning",
    }
    items = Items(tag)
    with (
        tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp,
        rewardsvc_service(Path(tmp), pool, [rubric], extra_env=env, name=tag) as service,
    ):
        # Every worker up and warm (its first requests load the rubric and open pools).
        asyncio.run(closed_loop(service.url, rubric.id, items, args.concurrency, args.batch, 3))
        procs = service_procs(service.pid)
        others = [psutil.Process(stub_pid), psutil.Process()]
        before = cpu_seconds(procs), cpu_seconds(others)
        result = asyncio.run(
            closed_loop(service.url, rubric.id, items, args.concurrency, args.batch, args.seconds)
        )
        wall = result["elapsed_s"]
        result["service_cores"] = (cpu_seconds(procs) - before[0]) / wall
        result["stub_and_client_cores"] = (cpu_seconds(others) - before[1]) / wall
        result["service_processes"] = len(procs)
    result["workers"] = workers
    log(
        f"workers={workers} round {n}: {result['rewards_per_s']:.1f} rewards/s, "
        f"{result['judge_calls_per_s']:.0f} judge calls/s, "
        f"service {result['service_cores']:.2f} cores"
    )
    return result


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Means per worker count and the 2-worker / 1-worker ratios."""
    arms: dict[str, dict[str, float]] = {}
    for workers in (1, 2):
        mine = [r for r in runs if r["workers"] == workers]
        arms[str(workers)] = {
            key: statistics.mean(r[key] for r in mine)
            for key in ("rewards_per_s", "judge_calls_per_s", "service_cores")
        }
        arms[str(workers)]["failed_items"] = sum(r["failed_items"] for r in mine)
        arms[str(workers)]["rewards_per_cpu_s"] = statistics.mean(
            r["rewards_per_s"] / r["service_cores"] for r in mine if r["service_cores"] > 0
        )
    one, two = arms["1"], arms["2"]
    return {
        "arms": arms,
        "ratio_rewards_per_s": two["rewards_per_s"] / one["rewards_per_s"],
        "ratio_judge_calls_per_s": two["judge_calls_per_s"] / one["judge_calls_per_s"],
        "ratio_service_cores": two["service_cores"] / one["service_cores"],
        "ratio_rewards_per_cpu_s": two["rewards_per_cpu_s"] / one["rewards_per_cpu_s"],
        "pays": two["rewards_per_s"] > 1.1 * one["rewards_per_s"],
    }


def markdown(result: dict[str, Any], command: str) -> str:
    """The results as Markdown."""
    s = result["summary"]
    where = result["machine"]
    lines = [
        "# Several uvicorn workers against the zero-latency stub",
        "",
        f"`{command}` on {where.get('cores', '?')} cores (load average "
        f"{where.get('load_avg_at_start')} at start): {CRITERIA} criteria, one judge (the "
        f"stub), batches of {result['batch']} fresh items from {result['concurrency']} "
        f"concurrent clients, {result['seconds']:g} s per arm, arms alternating; state "
        "shared through Redis in both arms.",
        "",
        "| workers | rewards/s | judge calls/s | service CPU (cores) | rewards per service "
        "CPU-second | failed items |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for workers, arm in s["arms"].items():
        lines.append(
            f"| {workers} | {arm['rewards_per_s']:.1f} | {arm['judge_calls_per_s']:.0f} | "
            f"{arm['service_cores']:.2f} | {arm['rewards_per_cpu_s']:.0f} | "
            f"{arm['failed_items']:.0f} |"
        )
    verdict = "pays" if s["pays"] else "does not pay (under 1.1x)"
    per_cpu = s["ratio_rewards_per_cpu_s"]
    if per_cpu < 0.95:
        why = "each reward cost more service CPU with two"
    elif per_cpu > 1.05:
        why = "each reward cost less service CPU with two"
    else:
        why = "each reward cost about the same CPU"
    lines += [
        "",
        f"2 workers / 1 worker: **{s['ratio_rewards_per_s']:.2f}x** rewards/s, "
        f"{s['ratio_judge_calls_per_s']:.2f}x judge calls/s: in this run a second worker "
        f"{verdict}. The service used {s['ratio_service_cores']:.2f}x the CPU and made "
        f"{per_cpu:.2f}x the rewards per CPU-second: {why}. Where the cores are contended "
        "(see the load average), a second process also wins the service a larger share "
        "of them, which an idle machine would not give.",
        "",
        "Per round: "
        + ", ".join(
            f"{r['workers']}w {r['rewards_per_s']:.1f}/s ({r['service_cores']:.2f} cores, "
            f"stub+client {r['stub_and_client_cores']:.2f})"
            for r in result["runs"]
        )
        + ".",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Run the arms alternately and write ``<out>.json`` and ``<out>.md``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each arm")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--batch", type=int, default=4)
    add_out_argument(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        redis = RedisServer(Path(tmp) / "redis")
        redis.start()
        stub, judge_url = start_fakejudge(Path(tmp) / "logs")
        try:
            # ABBA order: a drift in the machine's load weighs on both arms alike.
            order = [w for n in range(args.rounds) for w in ((1, 2) if n % 2 == 0 else (2, 1))]
            runs = [run_arm(w, n, redis, judge_url, stub.pid, args) for n, w in enumerate(order)]
        finally:
            stub.stop()
            redis.stop()
    result = {
        "seconds": args.seconds,
        "rounds": args.rounds,
        "concurrency": args.concurrency,
        "batch": args.batch,
        "machine": machine(),
        "runs": runs,
        "summary": summarize(runs),
    }
    command = f".venv/bin/python -m bench.workers --seconds {args.seconds:g} --rounds {args.rounds}"
    write_results(args.out, "workers", result, markdown(result, command))


if __name__ == "__main__":
    main()
