"""A hosted judge's rate limiter against a provider that enforces RPM and TPM.

The provider is ``tests/fakeprovider.py`` (in this process's threads): token buckets of
``--rpm`` requests and ``--tpm`` tokens per minute, a 429 with OpenAI's ``x-ratelimit-*``
headers and ``Retry-After`` past either, its buckets starting ``--used`` spent (someone
else used the key just before). The judge (``rate_limit`` set to the same RPM and TPM,
32 calls in flight) is driven by ``--workers`` closed-loop callers asking one criterion of
a fresh item each, as the engine does, for ``--minutes`` one-minute windows. Per window:
calls the provider served and refused (429), verdicts that reached the caller failed as
``rate_limited``, requests and tokens per minute the provider counted, against the
allowed rates. The limit that binds is the one to be within 10% of.

    .venv/bin/python -m bench.ratelimit [--minutes 3] [--rpm 600] [--tpm 60000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.outputs import add_out_argument, write_results
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.judge import Judge

# The harness's helpers need the bench's own packages (psutil): this bench needs none.
REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))
from fakeprovider import FakeProvider, Limits  # noqa: E402 (found through the path above)

RUBRIC = Rubric.model_validate(
    {
        "id": "bench-hosted",
        "instructions": "Grade the answer to the question for correctness and clarity.",
        "criteria": [{"id": "correct", "text": "The answer is correct and complete."}],
        "judges": ["hosted"],
    }
)


def machine() -> dict[str, Any]:
    """Cores and load at the start: what the figures come from."""
    return {"cores": os.cpu_count(), "load_average": list(os.getloadavg())}


async def drive(judge: Judge, workers: int, seconds: float) -> list[tuple[float, str]]:
    """``workers`` callers scoring fresh items until ``seconds`` pass: (end time, outcome)."""
    stop = time.monotonic() + seconds
    outcomes: list[tuple[float, str]] = []
    counter = iter(range(10**9))

    async def worker() -> None:
        while time.monotonic() < stop:
            i = next(counter)
            rollout = Rollout(f"Question {i}: what is {i} + {i}?", f"The answer is {2 * i}.")
            verdict = await judge.ask(
                CriterionOnItem(RUBRIC, RUBRIC.criteria[0], rollout), deadline=stop + 5
            )
            outcomes.append((time.monotonic(), "ok" if verdict.ok else str(verdict.error_kind)))

    await asyncio.gather(*(worker() for _ in range(workers)))
    return outcomes


def windows(
    limits: Limits, outcomes: list[tuple[float, str]], start: float, minutes: int
) -> list[dict[str, Any]]:
    """Per one-minute window: the provider's served and refused calls, tokens, outcomes."""
    rows = []
    for w in range(minutes):
        lo, hi = start + 60 * w, start + 60 * (w + 1)
        log = [(s, t) for at, s, t in limits.log if lo <= at < hi]
        seen = Counter(kind for at, kind in outcomes if lo <= at < hi)
        rows.append(
            {
                "window": w + 1,
                "served": sum(1 for s, _ in log if s == 200),
                "refused_429": sum(1 for s, _ in log if s == 429),
                "tokens": sum(t for _, t in log),
                "verdicts_ok": seen.get("ok", 0),
                "verdicts_rate_limited": seen.get("rate_limited", 0),
                "verdicts_other_failures": sum(n for k, n in seen.items() if k != "ok")
                - seen.get("rate_limited", 0),
            }
        )
    return rows


def markdown(result: dict[str, Any], command: str) -> str:
    """The result page."""
    a = result["args"]
    lines = [
        "# Rate limiter against a provider that enforces RPM and TPM",
        "",
        f"`{command}` on {result['machine']['cores']} cores: fake provider "
        f"(`tests/fakeprovider.py`) allowing {a['rpm']:g} requests and {a['tpm']:g} tokens per "
        f"minute, its buckets {a['used']:.0%} spent at the start; the judge's `rate_limit` set "
        f"to the same; {a['workers']} closed-loop callers, 32 calls in flight at most; one run "
        f"of {a['minutes']} one-minute windows.",
        "",
        "| window | served | 429 from the provider | rate_limited verdicts | other failures "
        "| requests/min ÷ RPM | tokens/min ÷ TPM |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in result["windows"]:
        lines.append(
            f"| {r['window']} | {r['served']} | {r['refused_429']} | "
            f"{r['verdicts_rate_limited']} | {r['verdicts_other_failures']} | "
            f"{r['served'] / a['rpm']:.3f} | {r['tokens'] / a['tpm']:.3f} |"
        )
    s = result["summary"]
    lines += [
        "",
        f"After the first window: **{s['later_429']}** 429s from the provider and "
        f"**{s['later_rate_limited']}** `rate_limited` verdicts; the binding limit is "
        f"{s['binding']}, used at **{s['binding_ratio']:.3f}** of its rate over windows "
        f"2..{a['minutes']} (target: within 10%, 0.9 to 1.0). Calls waited "
        f"{s['waited_s']:.0f} s in the limiter in all; the learnt ratio was "
        f"{s['ratio']:.3f} tokens per prompt character (the provider counts 0.25 of the "
        "message text).",
        "",
        f"Calls that ended after the last window, when the callers stopped: {s['after_end']} "
        "(a call whose wait for the buckets would pass its deadline fails at once as "
        "`deadline`, typed, never as a score).",
        "",
    ]
    return "\n".join(lines)


def summarize(rows: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    """What the run shows, from its windows after the first."""
    later = rows[1:]
    requests = sum(r["served"] for r in later) / len(later) / args.rpm
    tokens = sum(r["tokens"] for r in later) / len(later) / args.tpm
    binding, ratio = ("TPM", tokens) if tokens >= requests else ("RPM", requests)
    return {
        "later_429": sum(r["refused_429"] for r in later),
        "later_rate_limited": sum(r["verdicts_rate_limited"] for r in later),
        "requests_ratio": requests,
        "tokens_ratio": tokens,
        "binding": binding,
        "binding_ratio": ratio,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """One run of the bench."""
    limits = Limits(rpm=args.rpm, tpm=args.tpm, used=args.used)
    with FakeProvider(limits) as provider:
        config = JudgeConfig(
            model="hosted",
            base_urls=[provider.url],
            max_concurrency=32,
            rate_limit={"requests_per_minute": args.rpm, "tokens_per_minute": args.tpm},
        )
        judge = Judge("hosted", config)
        start = time.monotonic()
        outcomes = await drive(judge, args.workers, 60.0 * args.minutes)
        limiter = judge.backend.limiter
        assert limiter is not None
        await judge.aclose()
    rows = windows(limits, outcomes, start, args.minutes)
    summary = summarize(rows, args)
    end = start + 60.0 * args.minutes
    tail = Counter(kind for at, kind in outcomes if at >= end)
    summary.update(waited_s=limiter.waited_s, ratio=limiter.ratio, after_end=dict(tail))
    return {"args": vars(args), "machine": machine(), "windows": rows, "summary": summary}


def main() -> None:
    """Run the bench and write ``ratelimit.{md,json}`` in ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=3)
    parser.add_argument("--rpm", type=float, default=600)
    parser.add_argument("--tpm", type=float, default=60_000)
    parser.add_argument("--used", type=float, default=0.98)
    parser.add_argument("--workers", type=int, default=64)
    add_out_argument(parser)
    args = parser.parse_args()
    out = args.out
    del args.out
    result = asyncio.run(run(args))
    command = (
        f".venv/bin/python -m bench.ratelimit --minutes {args.minutes} --rpm {args.rpm:g} "
        f"--tpm {args.tpm:g}"
    )
    write_results(out, "ratelimit", result, markdown(result, command))


if __name__ == "__main__":
    main()
