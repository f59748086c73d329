"""What the sandbox costs: start-up of a trivial program in bubblewrap against a bare
subprocess, a trivial pytest-graded item through the service against a bare pytest of the
same files, and sandboxed runs per second through the lanes.

Start-up: ``--rounds`` alternating runs of the same program bare (``subprocess.run``) and
sandboxed (``BubblewrapBackend.run``: bwrap with every namespace and a fresh in-memory
work directory, prlimit, the capped reader), for ``/usr/bin/true`` and for
``python3 -c pass``; p50 and p90 of each, the p50 ratio and the milliseconds the sandbox
adds (the issue's target: at most 20 ms over a bare subprocess). A pytest-graded item:
``--pytest-rounds`` alternating rounds of one item with one test, through ``POST
/v1/rewards`` of the service in this process (recipe of one ``unit_tests`` component,
``bench/code_tasks/service.py``), against ``python3 -m pytest`` of the same two files in a
fresh directory (the interpreter the sandbox runs): p50 and p90, and the p50 ratio (the
issue's target: at most 1.5x). Throughput: ``--runs`` ``python3 -c pass`` runs submitted
at once to ``SandboxLanes`` with as many lanes as cores, against the same runs bare from
as many threads.

    .venv/bin/python -m bench.sandbox [--rounds 60] [--pytest-rounds 30] [--runs 200]
        [--out bench/results]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.code_tasks.service import grade, serving
from bench.code_tasks.task import fenced
from bench.harness import log, machine, percentile
from bench.outputs import add_out_argument, write_results
from rewardsvc.sandbox.bubblewrap import BubblewrapBackend
from rewardsvc.sandbox.lanes import SandboxLanes
from rewardsvc.sandbox.run import RunRequest

PROGRAMS = {"true": ("/usr/bin/true",), "python -c pass": ("/usr/bin/python3", "-c", "pass")}
TARGET_MS_OVER = 20.0
TARGET_PYTEST_RATIO = 1.5
# The trivial pytest-graded item: one function, one test.
SOLUTION = "def add(a, b):\n    return a + b\n"
TESTS = {
    "test_add.py": "from solution import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
}
# The interpreter the sandbox finds first on its PATH (the code graders run "python3").
SANDBOX_PYTHON = next(
    (p for p in ("/usr/local/bin/python3", "/usr/bin/python3") if os.access(p, os.X_OK)),
    "/usr/bin/python3",
)


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


def _bare_pytest() -> None:
    """``python3 -m pytest`` of the item's files in a fresh directory (exit 0 or raise)."""
    with tempfile.TemporaryDirectory(prefix="bench-pytest-") as folder:
        for name, text in {"solution.py": SOLUTION, **TESTS}.items():
            (Path(folder) / name).write_text(text)
        argv = [SANDBOX_PYTHON, "-m", "pytest", "-q"]
        subprocess.run(argv, cwd=folder, capture_output=True, check=True)


async def pytest_item(rounds: int) -> dict[str, Any]:
    """p50/p90 ms of the trivial item graded through the service and of a bare pytest of
    the same files, over alternating rounds (after one warm-up of each), and the ratio."""
    bare: list[float] = []
    graded: list[float] = []
    async with serving(lanes=1) as client:
        for n in range(rounds + 1):
            took = _timed(_bare_pytest)
            # A comment makes each item distinct: nothing may be answered from memory.
            code = fenced(f"# round {n}\n{SOLUTION}")
            item = {
                "id": "add",
                "prompt": "add",
                "completion": code,
                "reference": json.dumps(TESTS),
            }
            started = time.perf_counter()
            (result,) = await grade(client, [item])
            if result["reward"] != 1.0:
                raise RuntimeError(f"the trivial item did not score 1.0: {result}")
            if n:  # the first round warms both up (the grader counts the tests once)
                bare.append(took)
                graded.append((time.perf_counter() - started) * 1000)
    p50_bare, p50_graded = percentile(bare, 50), percentile(graded, 50)
    return {
        "rounds": rounds,
        "bare_p50_ms": round(p50_bare, 1),
        "bare_p90_ms": round(percentile(bare, 90), 1),
        "graded_p50_ms": round(p50_graded, 1),
        "graded_p90_ms": round(percentile(graded, 90), 1),
        "ratio": round(p50_graded / p50_bare, 2),
    }


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
    p = result["pytest_item"]
    met = "met" if p["ratio"] <= TARGET_PYTEST_RATIO else "**missed**"
    lines += [
        "",
        f"A trivial pytest-graded item (one function, one test), {p['rounds']} alternating "
        "rounds: the item through `POST /v1/rewards` in process (recipe of one `unit_tests` "
        "component, 1 sandbox lane) against `python3 -m pytest -q` of the same two files in a "
        "fresh directory, bare (the interpreter and pytest the sandbox runs), after one "
        "warm-up round of each: the grader's count of the task's tests (a collect run, one "
        "per distinct set of hidden tests) is then known, as it is for every later item of a "
        "task in training.",
        "",
        "| bare pytest p50 ms | bare p90 ms | graded item p50 ms | graded p90 ms | ratio "
        "(p50) | target ≤ 1.5x |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| {p['bare_p50_ms']} | {p['bare_p90_ms']} | {p['graded_p50_ms']} | "
        f"{p['graded_p90_ms']} | {p['ratio']}x | {met} |",
    ]
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
    parser.add_argument("--pytest-rounds", type=int, default=30, help="rounds of the item")
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
    log(f"pytest-graded item: {args.pytest_rounds} rounds")
    result["pytest_item"] = asyncio.run(pytest_item(args.pytest_rounds))
    log(f"throughput: {args.runs} runs")
    result["throughput"] = throughput(backend, args.runs, os.cpu_count() or 1)
    write_results(args.out, "sandbox", result, markdown(result))


if __name__ == "__main__":
    main()
