"""What a GRPO group of code completions costs against the same completions as single items.

Each round is a task no grader has seen (its hidden tests carry the round's number, so its
set of tests must be counted by a collect run) and 8 completions of it, half right and half
wrong. Rounds alternate which goes first: the 8 as one group of ``POST /v1/groups`` (a
rubric of one ``unit_tests`` criterion, the tests from the group's reference), and the 8 as
8 single items, each its own ``POST /v1/rewards`` request, sent at once (as a trainer that
scores samples one by one would). Both go through the service in this process
(``bench/code_tasks/service.py``: the real sandbox, 2 lanes, no verdict cache). The figures
are p50 and p90 of the wall time of each, and the ratio of the p50s.

    .venv/bin/python -m bench.group_sandbox [--rounds 20] [--size 8] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import time
from typing import Any

import httpx

from bench.code_tasks.service import serving
from bench.code_tasks.task import fenced
from bench.harness import log, machine, percentile
from bench.outputs import add_out_argument, write_results

RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return abs(a + b)\n"
TESTS = (
    "from solution import add\n\n\ndef test_small():\n    assert add(1, 2) == 3\n\n\n"
    "def test_negative():\n    assert add(-1, -2) == -3\n"
)
# A rubric of the grader criterion alone: no judge is asked (its judge is named, not called).
RUBRIC = {
    "id": "group-code-bench",
    "criteria": [{"id": "tests", "grader": {"type": "unit_tests", "wall_s": 20, "cpu_s": 10}}],
    "judges": ["primary"],
    "min_judges": 1,
}


def task(round_no: int, size: int) -> tuple[str, list[str]]:
    """A task not seen before (its reference: the hidden tests) and ``size`` completions."""
    reference = json.dumps({"test_add.py": f"# task {round_no}\n{TESTS}"})
    completions = [fenced(f"# {k}\n{RIGHT if k % 2 == 0 else WRONG}") for k in range(size)]
    return reference, completions


async def as_group(client: httpx.AsyncClient, reference: str, completions: list[str]) -> float:
    """Milliseconds to grade the completions as one group."""
    group = {"prompt": "add", "reference": reference, "completions": completions}
    started = time.perf_counter()
    reply = await client.post("/v1/groups", json={"rubric": RUBRIC, "groups": [group]})
    took = (time.perf_counter() - started) * 1000
    (result,) = reply.json()["results"]
    if reply.status_code != 200 or None in result["rewards"]:
        raise RuntimeError(f"the group was not graded: {reply.text[:500]}")
    return took


async def as_items(client: httpx.AsyncClient, reference: str, completions: list[str]) -> float:
    """Milliseconds to grade the completions as single items, one request each, at once."""

    async def one(completion: str) -> None:
        item = {"prompt": "add", "completion": completion, "reference": reference}
        reply = await client.post("/v1/rewards", json={"rubric": RUBRIC, "items": [item]})
        if reply.status_code != 200 or reply.json()["results"][0]["reward"] is None:
            raise RuntimeError(f"the item was not graded: {reply.text[:500]}")

    started = time.perf_counter()
    await asyncio.gather(*(one(c) for c in completions))
    return (time.perf_counter() - started) * 1000


async def measure(rounds: int, size: int) -> dict[str, Any]:
    """Alternating rounds (after one warm-up of each), p50/p90 and the p50 ratio."""
    group_ms: list[float] = []
    items_ms: list[float] = []
    async with serving(lanes=2) as client:
        for n in range(rounds + 1):
            reference, completions = task(2 * n, size)
            other = task(2 * n + 1, size)
            if n % 2:
                items = await as_items(client, *other)
                group = await as_group(client, reference, completions)
            else:
                group = await as_group(client, reference, completions)
                items = await as_items(client, *other)
            if n:
                group_ms.append(group)
                items_ms.append(items)
    p50_group, p50_items = percentile(group_ms, 50), percentile(items_ms, 50)
    return {
        "rounds": rounds,
        "size": size,
        "group_p50_ms": round(p50_group, 1),
        "group_p90_ms": round(percentile(group_ms, 90), 1),
        "items_p50_ms": round(p50_items, 1),
        "items_p90_ms": round(percentile(items_ms, 90), 1),
        "ratio": round(p50_group / p50_items, 2),
    }


def markdown(result: dict[str, Any]) -> str:
    """The figures as a short Markdown report."""
    m = result["measured"]
    return "\n".join(
        [
            "# A group of code completions against single items",
            "",
            f"`{result['command']}` on {result['machine'].get('cores', '?')} CPUs: "
            f"{m['rounds']} alternating rounds, each a task not seen before and "
            f"{m['size']} completions (half right).",
            "",
            "| graded as | p50 ms | p90 ms |",
            "|---|---|---|",
            f"| one group (`/v1/groups`) | {m['group_p50_ms']} | {m['group_p90_ms']} |",
            f"| {m['size']} single items at once (`/v1/rewards`) | {m['items_p50_ms']} "
            f"| {m['items_p90_ms']} |",
            "",
            f"Group / items p50: **{m['ratio']}**.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.group_sandbox``: measure and write ``group_sandbox.md``/``.json``."""
    parser = argparse.ArgumentParser(prog="python -m bench.group_sandbox", description=__doc__)
    parser.add_argument("--rounds", type=int, default=20, help="alternating rounds")
    parser.add_argument("--size", type=int, default=8, help="completions per task")
    add_out_argument(parser)
    args = parser.parse_args(argv)
    log(f"{args.rounds} rounds of {args.size} completions")
    result: dict[str, Any] = {
        "command": shlex.join([".venv/bin/python", "-m", "bench.group_sandbox", *sys.argv[1:]]),
        "machine": machine(),
        "measured": asyncio.run(measure(args.rounds, args.size)),
    }
    write_results(args.out, "group_sandbox", result, markdown(result))


if __name__ == "__main__":
    main()
