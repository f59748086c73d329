"""Instructions per request: the service's CPU work measured by callgrind, not by a clock.

Wall-clock overhead figures (``bench.overhead``) swing with the load of a small shared
machine; an instruction count does not. This bench serves the app in-process (httpx's ASGI
transport, its lifespan run) against the zero-latency stub judge (``tests/fakejudge.py``,
its own process, so its work is not counted), with bench part 2's rubric (5 criteria, one
logprob judge) and items, and sends ``N`` requests of ``--items`` items one at a time on
two paths:

- **cache-hit**: the same items again (every verdict served from the cache);
- **fresh**: distinct items each time (every criterion a judge call).

Each path runs under ``valgrind --tool=callgrind`` twice, with N = ``--small`` and
``--large``; start-up, imports and warm-up are the same in both, so the difference over
``large - small`` requests is the work of one request, reported in millions of
instructions (the load generator's ASGI client share included, the same on every revision).

    .venv/bin/python -m bench.instructions [--small 50] [--large 250] [--out bench/results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from bench.harness import (
    REPO_ROOT,
    distinct_items,
    judge_entry,
    rubric_variant,
    start_fakejudge,
    write_rubric,
)
from bench.items import bench_items
from bench.outputs import add_out_argument, write_results

PATHS = ("cache-hit", "fresh")
WARMUP_REQUESTS = 5
# callgrind's summary line of its output file: the instructions of the whole run.
_SUMMARY = re.compile(r"^(?:summary|totals): (\d+)", re.M)


def _items(path: str, count: int, size: int) -> list[list[dict[str, Any]]]:
    """The bodies' items of ``count`` requests: one batch repeated for ``cache-hit``,
    distinct batches for ``fresh``."""
    if path == "cache-hit":
        batch = distinct_items(bench_items(), size, "hit")
        return [batch] * count
    fresh = distinct_items(bench_items(), count * size, "fresh")
    return [fresh[i * size : (i + 1) * size] for i in range(count)]


async def _send(workdir: Path, judge_url: str, path: str, count: int, size: int) -> None:
    """Serve the app in-process and send warm-up then ``count`` requests, one at a time."""
    from rewardsvc.server.app import create_app
    from rewardsvc.settings import Settings

    rubric = rubric_variant("instructions")
    rubrics = workdir / "rubrics"
    rubrics.mkdir(parents=True, exist_ok=True)
    write_rubric(rubrics, rubric)
    pool = workdir / "judges.yaml"
    pool.write_text(json.dumps({"judges": {"primary": judge_entry(judge_url, "fake")}}))
    app = create_app(Settings(rubrics_dir=rubrics, judge_pool=pool, reload=False))
    # A warm-up first, in both runs alike: lazy set-up (connections, first calls) is done
    # before the requests that differ, and the cache-hit path's first measured request is
    # a hit too (its one batch was scored in the warm-up).
    bodies = _items(path, WARMUP_REQUESTS + count, size)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc", timeout=60) as c:
            for items in bodies:
                reply = await c.post("/v1/rewards", json={"rubric": rubric.id, "items": items})
                reply.raise_for_status()
                statuses = {r["status"] for r in reply.json()["results"]}
                if statuses != {"ok"}:
                    raise RuntimeError(f"items were not scored: {reply.text[:400]}")


def _count(judge_url: str, path: str, count: int, size: int, workdir: Path) -> int:
    """Instructions of one whole run of ``count`` requests under callgrind."""
    out = workdir / f"callgrind.{path}.{count}.out"
    argv = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        "bench.instructions",
        "--inner",
        path,
        "--judge-url",
        judge_url,
        "--count",
        str(count),
        "--items",
        str(size),
        "--workdir",
        str(workdir / f"{path}-{count}"),
    ]
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"callgrind run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    found = _SUMMARY.search(out.read_text())
    if found is None:
        raise RuntimeError(f"no instruction total in {out.name}")
    return int(found.group(1))


def measure(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Per path: the totals at ``small`` and ``large`` requests and M instructions per request."""
    stub, judge_url = start_fakejudge(workdir / "logs")
    paths: dict[str, Any] = {}
    try:
        for path in PATHS:
            small = _count(judge_url, path, args.small, args.items, workdir)
            large = _count(judge_url, path, args.large, args.items, workdir)
            per_request = (large - small) / (args.large - args.small)
            paths[path] = {
                "instructions_small": small,
                "instructions_large": large,
                "m_instructions_per_request": round(per_request / 1e6, 2),
            }
            print(f"{path}: {per_request / 1e6:.2f} M instructions per request", file=sys.stderr)
    finally:
        stub.stop()
    return {"items_per_request": args.items, "small": args.small, "large": args.large, **paths}


def markdown(result: dict[str, Any], command: str) -> str:
    """The report: M instructions per request on each path."""
    lines = [
        "# Instructions per request",
        "",
        f"`{command}`: the app in-process against the stub judge, bench part 2's rubric "
        f"(5 criteria, one logprob judge), {result['items_per_request']} item(s) per request, "
        f"one request at a time; per request = (instr({result['large']}) - "
        f"instr({result['small']})) / {result['large'] - result['small']} under callgrind.",
        "",
        "| path | M instructions per request |",
        "|---|---:|",
    ]
    for path in PATHS:
        lines.append(f"| {path} | {result[path]['m_instructions_per_request']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Measure both paths (or, with ``--inner``, be one measured run)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=50)
    parser.add_argument("--large", type=int, default=250)
    parser.add_argument("--items", type=int, default=1, help="items per request")
    parser.add_argument("--inner", choices=PATHS, help=argparse.SUPPRESS)
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
    command = "python -m bench.instructions"
    write_results(args.out, "instructions", result, markdown(result, command))


if __name__ == "__main__":
    main()
