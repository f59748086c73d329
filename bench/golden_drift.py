"""Golden drift simulator: how often does the golden alert fire for a judge that did not
change (false alarms), and how often for one that did (detections)?

No judges: a simulated judge answers each golden question of a shipped golden set
(``rubrics/golden/<rubric>.yaml``) with P(yes). Each question has its own true P(yes),
drawn uniformly in [0.02, 0.98]. An unchanged judge answers each re-score with that P
jittered on the logit scale by N(0, ``sigma``); ``sigma`` = 0.3 is pessimistic: the CPU
judges re-scoring a golden set at temperature 0 move by less (see the golden-sets how-to).
A changed judge (another model behind the name) answers with P jittered by N(0,
``swap_sigma``) = 1.5 once, a new judge that agrees with the old one more than chance.

The answers go through :class:`~rewardsvc.monitor.golden.GoldenBoard` as scored batches:
the first re-score is the baseline, each of the next ``samples`` re-scores is one sample
of the shift statistic; a sample at or above the set's ``max_shift`` is a breach.

Run: ``python -m bench.golden_drift`` (``--samples``, ``--rubric``). Results:
``golden_drift.{json,md}`` in ``--out`` (default ``bench/results/local/``, git-ignored).
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass
from pathlib import Path

from bench.outputs import add_out_argument, write_results
from rewardsvc.core.results import BatchResult, CriterionOutcome, ItemReward, JudgeOutcome, Usage
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.yamlfile import load_file
from rewardsvc.monitor.golden import GoldenBoard
from rewardsvc.monitor.golden_set import GoldenSet, load_golden

ROOT = Path(__file__).resolve().parent.parent
JUDGE = "sim"


def _jitter(p: float, sigma: float, rng: random.Random) -> float:
    logit = math.log(p / (1.0 - p)) + rng.gauss(0.0, sigma)
    return 1.0 / (1.0 + math.exp(-logit))


@dataclass
class SimJudge:
    """A judge's true P(yes) per (item, criterion) of a golden set, and its jitter."""

    golden: GoldenSet
    criteria: list[str]
    truth: dict[tuple[str, str], float]
    sigma: float

    @classmethod
    def draw(cls, golden: GoldenSet, criteria: list[str], sigma: float, rng: random.Random):  # type: ignore[no-untyped-def]
        truth = {(item.id, c): rng.uniform(0.02, 0.98) for item in golden.items for c in criteria}
        return cls(golden, criteria, truth, sigma)

    def swapped(self, swap_sigma: float, rng: random.Random) -> SimJudge:
        """Another model behind the same name: each answer moved once by N(0, swap_sigma)."""
        truth = {k: _jitter(p, swap_sigma, rng) for k, p in self.truth.items()}
        return SimJudge(self.golden, self.criteria, truth, self.sigma)

    def rescore(self, rng: random.Random) -> BatchResult:
        """One re-score of the set, as the engine returns it."""
        items = []
        for item in self.golden.items:
            crit = {
                c: CriterionOutcome(_jitter(self.truth[(item.id, c)], self.sigma, rng))
                for c in self.criteria
            }
            score = sum(v.score or 0.0 for v in crit.values()) / len(crit)
            outcome = JudgeOutcome(score, criteria=crit)
            items.append(ItemReward(item.id, score, "ok", judges={JUDGE: outcome}))
        return BatchResult(self.golden.rubric, "sim", items, Usage())


def breaches(
    judge: SimJudge, after: SimJudge, samples: int, rng: random.Random
) -> tuple[int, float]:
    """Re-scores of ``after`` (``samples`` of them) whose shift against ``judge``'s baseline
    reaches the set's ``max_shift``, and the largest shift seen."""
    board = GoldenBoard(lambda _event: None, lambda *_: None)
    board.record(judge.golden, JUDGE, judge.rescore(rng))
    count, worst = 0, 0.0
    for _ in range(samples):
        rec = board.record(judge.golden, JUDGE, after.rescore(rng))
        shift = rec.shift or 0.0
        count += shift >= rec.max_shift
        worst = max(worst, shift)
        board.rebaseline()  # each sample against a fresh baseline of the unchanged judge
        board.record(judge.golden, JUDGE, judge.rescore(rng))
    return count, worst


def run(rubric: str, samples: int, sigma: float, swap_sigma: float, seed: int) -> dict[str, object]:
    """False alarms of an unchanged judge and detections of a swapped one, over ``samples``."""
    rng = random.Random(seed)
    golden = load_golden(ROOT / "rubrics" / "golden")[rubric]
    criteria = [c.id for c in load_file(ROOT / "rubrics" / f"{rubric}.yaml", Rubric).criteria]
    judge = SimJudge.draw(golden, criteria, sigma, rng)
    false_alarms, worst = breaches(judge, judge, samples, rng)
    swaps = min(samples, 1000)
    detected = sum(breaches(judge, judge.swapped(swap_sigma, rng), 1, rng)[0] for _ in range(swaps))
    return {
        "rubric": rubric,
        "questions": len(golden.items) * len(criteria),
        "max_shift": golden.max_shift,
        "sigma": sigma,
        "samples": samples,
        "false_alarms": false_alarms,
        "false_alarm_rate": false_alarms / samples,
        "largest_unchanged_shift": round(worst, 4),
        "swap_sigma": swap_sigma,
        "swaps": swaps,
        "detected": detected,
        "detection_rate": detected / swaps,
    }


def main() -> None:
    """Run the simulator on each shipped golden set and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--sigma", type=float, default=0.3)
    parser.add_argument("--swap-sigma", type=float, default=1.5)
    parser.add_argument("--seed", type=int, default=41)
    add_out_argument(parser)
    args = parser.parse_args()
    rows = [
        run(rubric, args.samples, args.sigma, args.swap_sigma, args.seed)
        for rubric in sorted(load_golden(ROOT / "rubrics" / "golden"))
    ]
    lines = [
        "# Golden drift simulator",
        "",
        f"`python -m bench.golden_drift --samples {args.samples}` (seed {args.seed})",
        "",
        "| rubric | questions | max_shift | sigma | re-scores | false alarms | largest shift "
        "| swap sigma | swaps | detected |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['rubric']} | {r['questions']} | {r['max_shift']} | {r['sigma']} "
            f"| {r['samples']} | {r['false_alarms']} ({r['false_alarm_rate']:.4%}) "
            f"| {r['largest_unchanged_shift']} "
            f"| {r['swap_sigma']} | {r['swaps']} | {r['detected']} ({r['detection_rate']:.1%}) |"
        )
    write_results(args.out, "golden_drift", {"runs": rows}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
