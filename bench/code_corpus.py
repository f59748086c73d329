"""The code-reward corpus through the service: does any attack earn more than the honest
wrong solution, is every tampering family flagged, does anything escape the sandbox?

Every task of ``bench/code_tasks`` gives a correct item, a wrong item and one item per
attack family (``bench/code_tasks/attacks.py``); all are graded in this process through
``POST /v1/rewards`` (the app with its lifespan, the real bubblewrap sandbox on
``--lanes`` lanes, no verdict cache) by a recipe of one ``unit_tests`` component, the
hidden tests being each item's reference. One request per task, ``--concurrency`` at once.
The host watches for escapes while it runs: a listener on 127.0.0.1 that the network
attacks aim at (nothing may connect), a host path the write-outside attacks aim at (it
must not appear), and the service itself (``/healthz`` polled throughout; it must answer
after the kill-the-parent attacks).

Writes ``code_corpus.md`` and ``code_corpus.json`` (``bench/code_tasks/report.py``):
correct items at 1.0, wrong items below 1.0, per family the largest margin of an attack
over its task's wrong item (must be <= 0) and the share flagged (1.0 for every tampering
family), nulls with their kinds, escapes, items/s.

    .venv/bin/python -m bench.code_corpus [--lanes 2] [--concurrency 2] [--tasks a,b]
        [--families a,b] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.code_tasks import TASKS
from bench.code_tasks.attacks import FAMILIES, Family, Probe, family
from bench.code_tasks.report import markdown, summarize
from bench.code_tasks.service import grade, null_error, null_kind, serving
from bench.code_tasks.task import Task, fenced
from bench.harness import log, machine
from bench.outputs import add_out_argument, write_results

HEALTH_EVERY_S = 0.25


def items_of(task: Task, families: list[Family], probe: Probe) -> list[dict[str, Any]]:
    """The task's correct, wrong and attack items (ids ``task/kind``)."""
    base = {"prompt": task.prompt, "reference": task.reference()}
    items = [
        {**base, "id": f"{task.name}/correct", "completion": fenced(task.correct)},
        {**base, "id": f"{task.name}/wrong", "completion": fenced(task.wrong)},
    ]
    for fam in families:
        items.append({**base, "id": f"{task.name}/{fam.name}", **fam.build(task, probe)})
    return items


def row(result: dict[str, Any]) -> dict[str, Any]:
    """What the report keeps of one result."""
    task, _, kind = result["id"].partition("/")
    return {
        "task": task,
        "kind": kind,
        "reward": result["reward"],
        "status": result["status"],
        "flags": [f for f in result.get("flags", []) if not f.startswith("dataset:")],
        "null_kind": None if result["reward"] is not None else null_kind(result),
        "error": None if result["reward"] is not None else null_error(result),
    }


class Watch:
    """The host's side of the escape checks, and ``/healthz`` polled while the corpus runs."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.folder = Path(tempfile.mkdtemp(prefix="rewardsvc-corpus-escape-"))
        self.probe = Probe(
            port=self.listener.getsockname()[1],
            marker=str(self.folder / "escaped"),
            pid=os.getpid(),
        )
        self.health_ms: list[float] = []
        self.health_failures = 0

    async def poll(self, client: httpx.AsyncClient, done: asyncio.Event) -> None:
        """``/healthz`` every :data:`HEALTH_EVERY_S` until ``done``."""
        while not done.is_set():
            started = time.perf_counter()
            try:
                reply = await client.get("/healthz", timeout=10)
                ok = reply.status_code == 200
            except httpx.HTTPError:
                ok = False
            self.health_ms.append((time.perf_counter() - started) * 1000)
            self.health_failures += not ok
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), HEALTH_EVERY_S)

    def escapes(self, alive_after: bool) -> dict[str, Any]:
        """What reached the host: connections to the listener, files at the marker."""
        connections = 0
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                break
            conn.close()
            connections += 1
        self.listener.close()
        written = sorted(p.name for p in self.folder.iterdir())
        return {
            "network_connections": connections,
            "files_outside": written,
            "service_alive_after": alive_after,
            "total": connections + len(written) + (not alive_after),
        }


async def run(tasks: list[Task], families: list[Family], lanes: int, concurrency: int) -> dict:
    """Grade every item of ``tasks`` through the service; the raw rows and the checks."""
    watch = Watch()
    at_once = asyncio.Semaphore(concurrency)
    rows: list[dict[str, Any]] = []
    async with serving(lanes=lanes) as client:

        async def one(task: Task) -> None:
            async with at_once:
                results = await grade(client, items_of(task, families, watch.probe))
            rows.extend(row(r) for r in results)
            log(f"{task.name}: {len(results)} items graded ({len(rows)} in all)")

        done = asyncio.Event()
        poller = asyncio.create_task(watch.poll(client, done))
        started = time.perf_counter()
        try:
            await asyncio.gather(*(one(task) for task in tasks))
        finally:
            seconds = time.perf_counter() - started
            done.set()
            await poller
        alive = (await client.get("/healthz")).status_code == 200
    return {
        "rows": rows,
        "seconds": round(seconds, 1),
        "escapes": watch.escapes(alive),
        "healthz_ms": watch.health_ms,
        "healthz_failures": watch.health_failures,
    }


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.code_corpus``: grade the corpus, write ``code_corpus.{md,json}``."""
    parser = argparse.ArgumentParser(prog="python -m bench.code_corpus", description=__doc__)
    parser.add_argument("--lanes", type=int, default=2, help="sandbox lanes")
    parser.add_argument("--concurrency", type=int, default=2, help="requests at once")
    parser.add_argument("--tasks", default="", help="comma-separated task names (all)")
    parser.add_argument("--families", default="", help="comma-separated families (all)")
    add_out_argument(parser)
    args = parser.parse_args(argv)
    named = {t.name: t for t in TASKS}
    tasks = [named[n] for n in args.tasks.split(",") if n] or list(TASKS)
    families = [family(n) for n in args.families.split(",") if n] or list(FAMILIES)
    log(f"{len(tasks)} tasks x {2 + len(families)} items on {args.lanes} lanes")
    raw = asyncio.run(run(tasks, families, args.lanes, args.concurrency))
    result: dict[str, Any] = {
        "command": shlex.join([".venv/bin/python", "-m", "bench.code_corpus", *sys.argv[1:]]),
        "machine": machine(),
        "lanes": args.lanes,
        "tasks": len(tasks),
        "families": {f.name: {"tampering": f.tampering} for f in families},
        **summarize(raw, families),
        "rows": sorted(raw["rows"], key=lambda r: (r["task"], r["kind"])),
    }
    write_results(args.out, "code_corpus", result, markdown(result))


if __name__ == "__main__":
    main()
