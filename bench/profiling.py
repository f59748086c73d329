"""py-spy profiles of the service under load (bench part 2), summarized by package and function.

:func:`profile_service` samples a running ``rewardsvc serve`` process while a load runs
and keeps the collapsed stacks with paths cut to their package part (no machine paths in
the results), a flame graph, and a summary: self time by package and by function, and
inclusive time of rewardsvc's own functions.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.harness import RunContext, log


def py_spy() -> str | None:
    """The py-spy executable next to this interpreter, or on PATH."""
    local = Path(sys.executable).with_name("py-spy")
    return str(local) if local.exists() else shutil.which("py-spy")


async def profile_service(
    ctx: RunContext,
    pid: int,
    load: Callable[[float], Awaitable[dict[str, Any]]],
    concurrency: int,
    size: int,
) -> dict[str, Any]:
    """Sample the service with py-spy while ``load(seconds)`` runs (a closed loop of
    ``concurrency`` requests of ``size`` items); summarize where the time goes."""
    exe = py_spy()
    if exe is None:
        return {"error": "py-spy not installed (pip install py-spy)"}
    seconds = max(5.0, ctx.overhead_seconds)
    # Full file names (to tell packages apart) go to the work dir; the results get a copy
    # with paths cut to the package part, so no machine paths end up in them.
    full = ctx.workdir / "profile-overhead-full.txt"
    full.parent.mkdir(parents=True, exist_ok=True)
    raw = ctx.out_dir / "profile-overhead.txt"
    svg = ctx.out_dir / "profile-overhead.svg"
    log(
        f"profiling rewardsvc (pid {pid}) with py-spy for {seconds:.0f} s "
        f"at {concurrency} concurrent"
    )
    results = {}
    for fmt, path, names in (("raw", full, ["--full-filenames"]), ("flamegraph", svg, [])):
        proc = subprocess.Popen(
            [
                exe,
                "record",
                "--pid",
                str(pid),
                "--duration",
                str(int(seconds)),
                "--rate",
                "200",
                "--gil",  # only threads holding the GIL: where Python CPU time goes
                "--function",
                *names,
                "--format",
                fmt,
                "--output",
                str(path),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        during = await load(seconds + 1)
        out, _ = proc.communicate(timeout=60)
        results[fmt] = {"returncode": proc.returncode, "load": during, "log": out[-500:]}
        if proc.returncode != 0:
            return {"error": f"py-spy failed: {out[-1000:]}"}
    # The flame graph's title holds the py-spy command line: drop this machine's paths.
    svg.write_text(svg.read_text().replace(exe, "py-spy").replace(str(svg), svg.name))
    text = full.read_text()
    raw.write_text("".join(_short_stacks(line) + "\n" for line in text.splitlines()))
    summary = summarize_profile(text)
    summary.update(
        {
            "raw_file": raw.name,
            "flamegraph_file": svg.name,
            "load_during_profile": results["raw"]["load"],
            "items_per_request": size,
            "concurrency": concurrency,
        }
    )
    return summary


def _short(frame: str) -> str:
    """``func (/.../site-packages/pkg/mod.py:12)`` -> ``func (pkg/mod.py)``."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    m = re.search(r".*(?:site-packages|lib/python3\.\d+)/(.+)$", path) or re.search(
        r"/((?:rewardsvc|bench|tests)/.+)$", path
    )
    return f"{name} ({m.group(1) if m else path.rsplit('/', 1)[-1]})"


def _short_stacks(line: str) -> str:
    """One collapsed-stack line with every frame's path cut to its package part."""
    stack, _, count = line.rpartition(" ")
    return ";".join(_short(f) for f in stack.split(";")) + " " + count


def _package(frame: str) -> str:
    """The top-level package or stdlib module of a frame (``starlette``, ``asyncio``, ...)."""
    path = _short(frame).rpartition(" (")[2].rstrip(")")
    return path.split("/", 1)[0].removesuffix(".py")


def summarize_profile(raw: str) -> dict[str, Any]:
    """Self time by package and by function, and inclusive time of rewardsvc functions."""
    by_package: Counter[str] = Counter()
    by_function: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        leaf = frames[-1]
        by_package[_package(leaf)] += count
        by_function[_short(leaf)] += count
        seen = set()
        for frame in frames:
            if "rewardsvc/" in frame or "/fastapi/routing" in frame:
                name = _short(frame)
                if name not in seen:
                    seen.add(name)
                    inclusive[name] += count
    if not total:
        return {"error": "no samples"}

    def pct(counter: Counter[str], n: int) -> list[tuple[str, float]]:
        return [(k, round(100.0 * v / total, 1)) for k, v in counter.most_common(n)]

    return {
        "samples": total,
        "self_by_package_pct": pct(by_package, 20),
        "self_by_function_pct": pct(by_function, 15),
        "inclusive_rewardsvc_pct": pct(inclusive, 15),
    }
