"""What one large request costs in memory: RSS growth while a 1 MB request of 400 calls runs.

A real ``rewardsvc serve`` scores one request of ``--items`` items of about 125 KB each
(prompt, reference and completion of 40 KB or more) against a rubric of ``--criteria``
criteria and one judge (the stub judge of ``bench/stub.py``, ``--concurrency`` slots,
``--delay-ms`` per call): 8 x 50 = 400 calls from a 1 MB body by default. RSS is sampled
every 20 ms; the report is the peak above the idle service's RSS. Loopback only; seconds.

    .venv/bin/python -m bench.request_memory [--items 8] [--criteria 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import psutil

from bench.harness import (
    RssSampler,
    judge_entry,
    post_rewards,
    rewardsvc_service,
    rss_mb,
    rubric_variant,
    session,
    start_stub,
)
from bench.outputs import add_out_argument, write_results


def large_items(count: int) -> list[dict[str, Any]]:
    """``count`` distinct items of about 125 KB each."""
    return [
        {
            "id": f"large-{n}",
            "prompt": f"Question {n}: " + "Explain the proof step by step. " * 1300,
            "reference": "The reference proof. " * 2000,
            "completion": f"Answer {n}: " + "Here is the next step of the proof. " * 1300,
        }
        for n in range(count)
    ]


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Start the stub and the service, send the request, report RSS growth."""
    stub, judge_url = start_stub(workdir / "logs", args.delay_ms)
    try:
        entry = judge_entry(judge_url, "stub", max_concurrency=args.concurrency)
        rubric = rubric_variant("memory", criteria=args.criteria)
        items = large_items(args.items)
        body_mb = len(json.dumps({"rubric": rubric.id, "items": items})) / 1e6
        with rewardsvc_service(workdir / "svc", {"judges": {"primary": entry}}, [rubric]) as svc:
            await asyncio.sleep(1.0)  # start-up allocations settle
            idle = rss_mb(svc.pid)
            cpu = psutil.Process(svc.pid).cpu_times()
            with RssSampler(svc.pid, interval_s=0.02) as sampler:
                async with session() as http:
                    reply = await post_rewards(http, svc.url, rubric.id, items)
            used = psutil.Process(svc.pid).cpu_times()
            prompt_mb = args.items * args.criteria * (len(json.dumps(items[0])) + 4096) / 1e6
            return {
                "body_mb": round(body_mb, 2),
                "planned_calls": args.items * args.criteria,
                "status": reply.status,
                "judge_calls": reply.body.get("usage", {}).get("judge_calls"),
                "seconds": round(reply.latency_s, 2),
                "idle_rss_mb": round(idle, 1),
                "peak_rss_mb": round(sampler.peak_mb, 1),
                "growth_mb": round(sampler.peak_mb - idle, 1),
                "prompt_mb_about": round(prompt_mb, 1),
                "service_cpu_s": round(used.user + used.system - cpu.user - cpu.system, 2),
            }
    finally:
        stub.stop()


def markdown(result: dict[str, Any], command: str) -> str:
    """The report: the request, its calls, and the service's RSS growth and CPU."""
    return "\n".join(
        [
            "# Memory of one large request",
            "",
            f"`{command}`: a {result['body_mb']} MB body planning {result['planned_calls']} "
            f"judge calls (about {result['prompt_mb_about']} MB of prompts), status "
            f"{result['status']}, {result['judge_calls']} calls made in {result['seconds']} s.",
            "",
            f"RSS {result['idle_rss_mb']} MB idle, {result['peak_rss_mb']} MB at peak: "
            f"+{result['growth_mb']} MB; service CPU {result['service_cpu_s']} s.",
            "",
        ]
    )


def main() -> None:
    """Run once and write the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=8)
    parser.add_argument("--criteria", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=4, help="the judge's slots")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="the stub judge's latency")
    add_out_argument(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rewardsvc-memory-") as tmp:
        result = asyncio.run(run(args, Path(tmp)))
    write_results(
        args.out, "request_memory", result, markdown(result, "python -m bench.request_memory")
    )


if __name__ == "__main__":
    main()
