"""Run the rewardsvc benchmark: ``python -m bench.run [--quick] [--parts 1,2,3,4]``.

Parts (one module each; ``bench.harness`` holds what they share):

1. ``bench.e2e``      end to end on the real CPU judge: rewardsvc vs the direct-client limit
                      vs verifiers, HealthBench-style and TRL-style peers;
2. ``bench.overhead`` service overhead against a zero-latency stub judge;
3. ``bench.memory``   peak RSS under load and with the verdict cache at its bound;
4. ``bench.scaling``  cost growth (batch size, criteria, judges) and cache/dedup on GRPO.

Writes ``results.md``, ``bench.png`` and ``results.json`` (plus the overhead profile when
taken) to ``--out`` (default ``bench/results/local/``, git-ignored; ``make bench`` passes
``--out bench/results``, the tracked results), in its ``quick/`` folder with ``--quick``.
The real judge must be up: ``deploy/cpu-judge/cpujudge.sh start && deploy/cpu-judge/cpujudge.sh
wait``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench import e2e, memory, overhead, report, scaling
from bench.harness import RunContext, cache_root, log, machine, versions
from bench.outputs import add_out_argument

PARTS = {
    "1": ("e2e", e2e.run),
    "2": ("overhead", overhead.run),
    "3": ("memory", memory.run),
    "4": ("scaling", scaling.run),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line flags; unset sizes take the full or the --quick default."""
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes for development (~8 min)")
    p.add_argument("--parts", default="1,2,3,4", help="comma-separated parts to run (1-4)")
    p.add_argument("--items", type=int, help="measured items, at most 64 (full 64, quick 16)")
    p.add_argument(
        "--peer-items",
        type=int,
        help="items for the peers, the first N of the measured ones (full 32, quick: all); "
        "the JSON peers are slow on a CPU judge",
    )
    p.add_argument(
        "--peers", default="verifiers,healthbench,trl", help="peers to run ('' for none)"
    )
    p.add_argument(
        "--repeats", type=int, help="alternating rewardsvc/direct runs (full 5, quick 2)"
    )
    p.add_argument(
        "--overhead-seconds", type=float, help="seconds per overhead cell (full 8, quick 3)"
    )
    p.add_argument(
        "--cache-bound",
        type=int,
        help="cache size for part 3 (full: the service default, 100000; quick 5000)",
    )
    p.add_argument(
        "--cache-fill-factor",
        type=float,
        default=1.5,
        help="verdicts driven in part 3, as a multiple of the cache bound",
    )
    p.add_argument("--scaling-items", type=int, help="items per stub point (full 160, quick 64)")
    p.add_argument("--no-real-points", action="store_true", help="part 4 on the stub only")
    p.add_argument("--profile", action="store_true", help="profile part 2 even if targets are met")
    add_out_argument(p)
    return p.parse_args(argv)


def context(args: argparse.Namespace) -> RunContext:
    """The run's settings from the flags."""
    quick = args.quick
    run_id = time.strftime("%Y%m%d-%H%M%S")
    # A quick run never lands among the full run's results.
    out = args.out / "quick" if quick else args.out
    out.mkdir(parents=True, exist_ok=True)
    return RunContext(
        run_id=run_id,
        quick=quick,
        workdir=cache_root() / "bench-runs" / run_id,
        out_dir=out,
        items=min(64, args.items or (16 if quick else 64)),
        warmup_items=4 if quick else 8,
        peer_items=args.peer_items or (None if quick else 32),
        peers=[p for p in args.peers.split(",") if p],
        repeats=args.repeats or (2 if quick else 5),
        batch_size=8,
        e2e_concurrency=8,
        overhead_seconds=args.overhead_seconds or (3.0 if quick else 8.0),
        overhead_concurrency=[1, 16, 64],
        overhead_sizes=[1, 8],
        cache_bound=args.cache_bound or (5_000 if quick else memory.DEFAULT_CACHE_SIZE),
        cache_fill_factor=args.cache_fill_factor,
        scaling_items=args.scaling_items or (64 if quick else 160),
        real_points=not args.no_real_points,
        profile=args.profile,
    )


def earlier_parts(path: Path, quick: bool, parts: str) -> dict[str, Any]:
    """The parts of the earlier run in ``path`` that this run does not repeat (same kind of
    run, quick or full), so that re-running one part keeps the others in the report; each
    kept part is named with its run id under ``kept``."""
    if not path.exists():
        return {}
    earlier = json.loads(path.read_text())
    if earlier.get("quick") != quick:
        return {}
    rerun = {PARTS[k.strip()][0] for k in parts.split(",") if k.strip() in PARTS}
    names = [n for n in earlier.get("parts", {}) if n not in rerun]
    return {
        "parts": {n: earlier["parts"][n] for n in names},
        "durations_s": {n: earlier.get("durations_s", {}).get(n) for n in names},
        "kept": {n: earlier.get("kept", {}).get(n, earlier["run_id"]) for n in names},
    }


def main(argv: list[str] | None = None) -> int:
    """Run the selected parts, then write the report (also after a failed part)."""
    args = parse_args(argv)
    ctx = context(args)
    command = "python -m bench.run " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    results: dict[str, Any] = {
        "command": command.strip(),
        "run_id": ctx.run_id,
        "quick": ctx.quick,
        "machine": machine(),
        "versions": versions(),
        "settings": {k: str(v) for k, v in ctx.__dict__.items() if k not in ("workdir", "out_dir")},
        "parts": {},
        "errors": {},
    }
    kept = earlier_parts(ctx.out_dir / "results.json", ctx.quick, args.parts)
    if kept:
        results["parts"].update(kept["parts"])
        results["durations_s"] = kept["durations_s"]
        results["kept"] = kept["kept"]
    started = time.perf_counter()
    for key in [p.strip() for p in args.parts.split(",") if p.strip()]:
        name, fn = PARTS[key]
        log(f"part {key}: {name}")
        t0 = time.perf_counter()
        try:
            results["parts"][name] = asyncio.run(fn(ctx))
        except Exception as exc:
            results["errors"][name] = "".join(traceback.format_exception(exc))[-4000:]
            log(f"part {key} ({name}) failed: {exc}")
        results.setdefault("durations_s", {})[name] = round(time.perf_counter() - t0, 1)
        (ctx.out_dir / "results.json").write_text(json.dumps(results, indent=2, default=str))
    results["total_s"] = round(time.perf_counter() - started, 1)
    (ctx.out_dir / "results.json").write_text(json.dumps(results, indent=2, default=str))
    report.write(results, ctx.out_dir)
    log(f"wrote {ctx.out_dir / 'results.md'} and {ctx.out_dir / 'bench.png'}")
    print((ctx.out_dir / "results.md").read_text())
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
