"""Rubric health simulator: does the monitor raise ``non_discriminative`` soon after a
rubric stops telling a prompt's completions apart, and never on a healthy run?

A simulated GRPO run (seeded RNG, no judges): each batch is 4 prompts x 8 completions. A
rubric of six criteria, scored as a logprob judge would (a pass is a confident "yes", a
probability near 1; a fail near 0), combines into the reward by weight. Each prompt has
its own difficulty per criterion, and each completion passes each criterion at random
with that prompt's rate. The monitor is fed directly, as the server's observer feeds it:
one batch result per request, each item with its reward, its per-criterion breakdown and
its prompt's group key.

Runs:

- ``healthy``: every criterion's pass rate between 0.3 and 0.8, for 10,000 samples: any
  ``non_discriminative`` alert is a false alarm;
- ``saturated``: the policy has saturated two criteria (one passed always, one never)
  from the start: samples until the alert fires (it must within 512);
- ``saturating``: healthy until sample 1,024, then the same two criteria saturate
  linearly over 256 samples: the delay after the onset;
- ``collapsed``: from the start, the completions of a prompt are all alike (mode
  collapse: one draw per prompt): every group has zero spread.

Run: ``python -m bench.rubric_health`` (``--quick`` for a 2,000-sample healthy run).
Results: ``rubric_health.{json,md}`` in ``--out`` (default ``bench/results/local/``, git-ignored;
``--out bench/results`` updates the tracked ones).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.outputs import add_out_argument
from rewardsvc.core.monitor_spec import NON_DISCRIMINATIVE, MonitorConfig
from rewardsvc.core.results import (
    BatchResult,
    CriterionOutcome,
    ItemReward,
    JudgeOutcome,
    Usage,
)
from rewardsvc.monitor import AlertEvent, Monitor

CRITERIA = {  # criterion: (weight, healthy pass rate)
    "accurate": (3.0, 0.6),
    "complete": (2.0, 0.45),
    "cites_source": (1.0, 0.3),
    "clear": (1.0, 0.7),
    "concise": (1.0, 0.5),
    "safe_advice": (2.0, 0.8),
}
SATURATED = {"clear": 1.0, "cites_source": 0.0}
"""The two criteria the policy saturates, and the pass rate they reach."""
PROMPTS, GROUP = 4, 8
RUBRIC, VERSION = "health-sim", "sha256:sim"
ONSET, RAMP = 1024, 256

Rates = Callable[[int], dict[str, float]]
"""A policy: each criterion's pass rate at a sample number."""


def healthy(_step: int) -> dict[str, float]:
    """Every criterion at its healthy pass rate."""
    return {c: rate for c, (_, rate) in CRITERIA.items()}


def saturated(_step: int) -> dict[str, float]:
    """Two criteria saturated from the start."""
    return {**healthy(0), **SATURATED}


def saturating(step: int) -> dict[str, float]:
    """Healthy until ``ONSET``, then two criteria move to saturation over ``RAMP`` samples."""
    out = healthy(step)
    t = min(1.0, max(0.0, (step - ONSET) / RAMP))
    for c, end in SATURATED.items():
        out[c] = out[c] + (end - out[c]) * t
    return out


def verdict(rng: random.Random, passed: bool) -> float:
    """A logprob judge's P(yes): a confident answer, mostly within 0.05 of 1 or 0."""
    doubt = 0.05 * rng.random() ** 2
    return 1.0 - doubt if passed else doubt


def batch(rng: random.Random, step: int, rates: Rates, collapsed: bool = False) -> BatchResult:
    """One request of ``PROMPTS`` x ``GROUP`` items scored by the simulated judge."""
    base = rates(step)
    total = sum(w for w, _ in CRITERIA.values())
    items: list[ItemReward] = []
    for p in range(PROMPTS):
        prompt = f"prompt-{step}-{p}"
        # The prompt's own difficulty moves each criterion's rate a little (a saturated
        # criterion stays saturated).
        rate = {
            c: r if r in (0.0, 1.0) else min(1.0, max(0.0, r + rng.gauss(0.0, 0.1)))
            for c, r in base.items()
        }
        alike = {c: verdict(rng, rng.random() < r) for c, r in rate.items()}
        for g in range(GROUP):
            # Collapsed: every completion of the prompt is the same answer, scored alike.
            scores = (
                alike if collapsed else {c: verdict(rng, rng.random() < r) for c, r in rate.items()}
            )
            reward = sum(CRITERIA[c][0] * s for c, s in scores.items()) / total
            criteria = {c: CriterionOutcome(s) for c, s in scores.items()}
            judge = JudgeOutcome(reward, criteria=criteria)
            items.append(
                ItemReward(f"{prompt}/{g}", reward, "ok", judges={"sim": judge}, group=prompt)
            )
    return BatchResult(RUBRIC, VERSION, items, Usage(), "sim")


@dataclass
class Outcome:
    """What one simulated run raised."""

    name: str
    samples: int
    fired: list[tuple[int, str, tuple[str, ...]]] = field(default_factory=list)
    first: int | None = None
    """The sample at which non_discriminative first fired."""
    rates: tuple[float, float] = (1.0, 0.0)
    """The lowest and highest criterion pass rate over the window at any evaluation."""
    flat: float = 0.0
    """The highest zero-spread share at any evaluation."""


def simulate(
    name: str,
    rates: Rates,
    samples: int,
    seed: int,
    collapsed: bool = False,
    config: MonitorConfig | None = None,
) -> Outcome:
    """Feed ``samples`` items of the policy to a fresh monitor; what fired, and when."""
    rng = random.Random(seed)
    outcome = Outcome(name, samples)

    def record(event: AlertEvent) -> None:
        if event.state != "firing":
            return
        outcome.fired.append((event.sample, event.name, event.criteria))
        if event.name == NON_DISCRIMINATIVE and outcome.first is None:
            outcome.first = event.sample

    cfg = config or MonitorConfig()
    monitor = Monitor(lambda _r: cfg, on_event=record, clock=lambda: 0.0)
    step = 0
    while step < samples:
        result = batch(rng, step, rates, collapsed)
        monitor.observe(RUBRIC, VERSION, "sim", result)
        step += len(result.items)
        health = monitor.runs()[0].health
        if health is not None and health.criteria:
            seen = [c.pass_rate for c in health.criteria]
            low, high = outcome.rates
            outcome.rates = (min(low, *seen), max(high, *seen))
            outcome.flat = max(outcome.flat, health.zero_spread_share or 0.0)
    return outcome


def run_all(healthy_samples: int, seed: int = 7) -> list[Outcome]:
    """The four runs of the module's docstring."""
    return [
        simulate("healthy", healthy, healthy_samples, seed),
        simulate("saturated", saturated, 1024, seed + 1),
        simulate("saturating", saturating, ONSET + 1024, seed + 2),
        simulate("collapsed", healthy, 1024, seed + 3, collapsed=True),
    ]


def write(outcomes: list[Outcome], out: Path, command: str, seconds: float) -> None:
    """``rubric_health.json`` and ``rubric_health.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for o in outcomes:
        false_alarms = (
            len([f for f in o.fired if f[1] == NON_DISCRIMINATIVE]) if o.name == "healthy" else 0
        )
        delay = None
        if o.first is not None:
            delay = o.first - (ONSET if o.name == "saturating" else 0)
        rows.append(
            {
                "run": o.name,
                "samples": o.samples,
                "non_discriminative_at": o.first,
                "samples_until_alert": delay,
                "false_alarms": false_alarms,
                "pass_rates_seen": [round(o.rates[0], 3), round(o.rates[1], 3)],
                "max_zero_spread_share": round(o.flat, 3),
                "fired": [{"sample": s, "alert": n, "criteria": list(c)} for s, n, c in o.fired],
            }
        )
    data = {"command": command, "seconds": round(seconds, 2), "runs": rows}
    (out / "rubric_health.json").write_text(json.dumps(data, indent=2) + "\n")
    lines = [
        "# Rubric health simulator",
        "",
        f"- Command: `{command}`",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- Batches of {PROMPTS} prompts x {GROUP} completions; six criteria; monitor "
        "defaults (window 128, evaluated every 8 samples, firing after 3 breaching "
        "evaluations; saturation at 0.95 / 0.05 over 64 scores, two criteria; zero-spread "
        "share 0.5 over 8 groups). `saturating`: the onset is at sample "
        f"{ONSET}, the delay counted from it.",
        "",
        "| run | samples | non_discriminative fired at | samples until the alert "
        "| false alarms | criterion pass rates seen | max zero-spread share "
        "| every alert fired (at sample) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fired = ", ".join(
            f"{f['alert']} ({'; '.join([str(f['sample']), *f['criteria']])})" for f in r["fired"]
        )
        low, high = r["pass_rates_seen"]
        at = "–" if r["non_discriminative_at"] is None else r["non_discriminative_at"]
        until = "–" if r["samples_until_alert"] is None else r["samples_until_alert"]
        lines.append(
            f"| {r['run']} | {r['samples']:,} | {at} | {until} | {r['false_alarms']} "
            f"| {low:.3f}–{high:.3f} | {r['max_zero_spread_share']:.3f} | {fired or 'none'} |"
        )
    (out / "rubric_health.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    """Run the simulator and write ``rubric_health.{json,md}`` in ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 2,000-sample healthy run")
    add_out_argument(parser)
    args = parser.parse_args()
    started = time.perf_counter()
    outcomes = run_all(2_000 if args.quick else 10_000)
    command = "python -m bench.rubric_health" + (" --quick" if args.quick else "")
    args.out.mkdir(parents=True, exist_ok=True)
    write(outcomes, args.out, command, time.perf_counter() - started)
    print((args.out / "rubric_health.md").read_text())


if __name__ == "__main__":
    main()
