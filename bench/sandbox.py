"""What the sandbox costs: start-up of a trivial program in bubblewrap against a bare
subprocess, and sandboxed runs per second through the lanes.

Start-up: ``--rounds`` alternating runs of the same program bare (``subprocess.run``) and
sandboxed (``BubblewrapBackend.run``: bwrap with every namespace and a fresh in-memory
work directory, prlimit, the capped reader), for ``/usr/bin/true`` and for
``python3 -c pass``; p50 and p90 of each, the p50 ratio and the milliseconds the sandbox
adds (the issue's target: at most 20 ms over a bare subprocess). Throughput: ``--runs``
``python3 -c pass`` runs submitted at once to ``SandboxLanes`` with as many lanes as
cores, against the same runs bare from as many threads.

    .venv/bin/python -m bench.sandbox [--rounds 60] [--runs 200] [--out bench/results]
"""

from __future__ import annotations

import argparse
import functools
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.harness import log, machine, percentile
from bench.outputs import add_out_argument, write_results
from rewardsvc.sandbox.bubblewrap import BubblewrapBackend
from rewardsvc.sandbox.lanes import SandboxLanes
from rewardsvc.sandbox.run import RunRequest

PROGRAMS = {"true": ("/usr/bin/true",), "python -c pass": ("/usr/bin/python3", "-c", "pass")}
TARGET_MS_OVER = 20.0


def _bare(argv: tuple[str, ...]) -> None:
    subprocess.run(argv, capture_output=True, check=True)


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def startup(backend: BubblewrapBackend, rounds: int) -> dict[str, Any]:
    """Per program: p50/p90 ms bare and sandboxed over alternating rounds, ratio, ms over."""
    out: dict[str, Any] = {}
    for name, argv in PROGRAMS.items():
        request = RunRequest(argv)
        bare: list[float] = []
        boxed: list[float] = []
        for _ in range(rounds):
            bare.append(_timed(functools.partial(_bare, argv)))
            started = time.perf_counter()
            result = backend.run(request)
            boxed.append((time.perf_counter() - started) * 1000)
            if result.failure is not None or result.exit_code != 0:
                raise RuntimeError(f"sandboxed {name} failed: {result.failure} {result.detail}")
        p50_bare, p50_boxed = percentile(bare, 50), percentile(boxed, 50)
        out[name] = {
            "bare_p50_ms": round(p50_bare, 2),
            "bare_p90_ms": round(percentile(bare, 90), 2),
            "sandbox_p50_ms": round(p50_boxed, 2),
            "sandbox_p90_ms": round(percentile(boxed, 90), 2),
            "ratio": round(p50_boxed / p50_bare, 2),
            "ms_over": round(p50_boxed - p50_bare, 2),
        }
    return out


def throughput(backend: BubblewrapBackend, runs: int, lanes: int) -> dict[str, Any]:
    """Runs per second: ``runs`` trivial Python runs through the lanes, and bare."""
    request = RunRequest(PROGRAMS["python -c pass"])
    pool = SandboxLanes(backend, lanes=lanes, queue_limit=runs)
    started = time.perf_counter()
    futures = [pool.submit(request, group=n % 4) for n in range(runs)]
    results = [f.result() for f in futures]
    boxed_s = time.perf_counter() - started
    pool.close()
    failed = sum(r.failure is not None or r.exit_code != 0 for r in results)
    with ThreadPoolExecutor(lanes) as threads:
        started = time.perf_counter()
        list(threads.map(lambda _: _bare(request.argv), range(runs)))
        bare_s = time.perf_counter() - started
    return {
        "lanes": lanes,
        "runs": runs,
        "failed": failed,
        "sandbox_runs_per_s": round(runs / boxed_s, 1),
        "bare_runs_per_s": round(runs / bare_s, 1),
    }


def markdown(result: dict[str, Any]) -> str:
    """The results table, with the command and the machine."""
    m = result["machine"]
    lines = [
        "# Sandbox cost (bubblewrap)",
        "",
        f"`{result['command']}` on {m['cores']} cores ({m['cpu_model']}, kernel "
        f"{m['kernel']}, load average {m['load_avg_at_start']} at start), bwrap "
        f"{result['bwrap']}; {result['rounds']} alternating rounds per program.",
        "",
        "| program | bare p50 ms | bare p90 ms | sandbox p50 ms | sandbox p90 ms | ratio "
        "(p50) | ms over (p50) | target ≤ 20 ms over |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in result["startup"].items():
        met = "met" if row["ms_over"] <= TARGET_MS_OVER else "**missed**"
        lines.append(
            f"| `{name}` | {row['bare_p50_ms']} | {row['bare_p90_ms']} | "
            f"{row['sandbox_p50_ms']} | {row['sandbox_p90_ms']} | {row['ratio']}x | "
            f"{row['ms_over']} | {met} |"
        )
    t = result["throughput"]
    lines += [
        "",
        f"Throughput, {t['runs']} `python -c pass` runs at once through {t['lanes']} lanes: "
        f"**{t['sandbox_runs_per_s']} sandboxed runs/s** against {t['bare_runs_per_s']} "
        f"bare runs/s from {t['lanes']} threads ({t['failed']} failed).",
        "",
        "The sandboxed time is the whole run as a lane sees it: bwrap with every namespace "
        "(user, mount, PID, network, IPC, UTS, cgroup) and a fresh in-memory work "
        "directory, `prlimit`, and reading the output with its cap. The machine is shared "
        "(see the load average): the figures move with it.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.sandbox``: measure and write ``sandbox.md`` and ``sandbox.json``."""
    parser = argparse.ArgumentParser(prog="python -m bench.sandbox", description=__doc__)
    parser.add_argument("--rounds", type=int, default=60, help="alternating runs per program")
    parser.add_argument("--runs", type=int, default=200, help="runs for the throughput")
    add_out_argument(parser)
    args = parser.parse_args(argv)
    backend = BubblewrapBackend()
    available = backend.availability()
    if not available.ok:
        sys.exit(f"no sandbox: {available.reason}")
    assert backend.bwrap is not None
    version = subprocess.run([backend.bwrap, "--version"], capture_output=True, text=True)
    log(f"start-up: {args.rounds} rounds per program")
    result: dict[str, Any] = {
        "command": shlex.join([".venv/bin/python", "-m", "bench.sandbox", *sys.argv[1:]]),
        "machine": machine(),
        "bwrap": version.stdout.strip().removeprefix("bubblewrap "),
        "rounds": args.rounds,
        "startup": startup(backend, args.rounds),
    }
    log(f"throughput: {args.runs} runs")
    result["throughput"] = throughput(backend, args.runs, os.cpu_count() or 1)
    write_results(args.out, "sandbox", result, markdown(result))


if __name__ == "__main__":
    main()
