"""Scalarize first or normalize per objective (GDPO): what a group-relative advantage keeps
of a sparse binary objective beside a dense judged one.

Synthetic GRPO groups (no service, no model): G completions per prompt, each with a sparse
binary objective ``correct`` (1 with probability ``p``, as a math answer check gives) and a
dense objective ``explanation`` in [0, 1] (a judged score: a per-prompt level plus
per-completion spread ``sigma``, independent of correctness; ``sigma`` 1.0 is left unclipped,
standing for a dense score on a wider scale than [0, 1]). Two advantages of the same
rewards, with the same objective weights (``w`` for correct, ``1 - w`` for explanation):

- **scalarized first** (GRPO on the recipe's scalar, TRL's ``sum_then_normalize``):
  ``r = w·c + (1-w)·e``, then ``(r - mean_group) / (std_group + 1e-4)``;
- **normalized per objective** (GDPO, TRL's ``normalize_then_sum``, veRL's ``gdpo``): each
  objective ``(x - mean_group) / (std_group + 1e-4)``, then the weighted sum, then
  normalized over the batch.

Figures, over groups whose correctness varies (where the sparse objective has something to
say; a group all right or all wrong has no correctness advantage under either method):

- ``sign agreement``: the fraction of completions whose advantage has the sign of their
  correctness advantage (right answers pushed up, wrong ones down);
- ``right > 0``: the fraction of right answers pushed up;
- ``share``: the fraction of the advantage's variance that correctness explains (squared
  correlation of the advantage with correctness, within those groups).

    .venv/bin/python -m bench.gdpo [--groups 2000] [--size 8] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Sequence

EPS = 1e-4  # TRL's
WIDE = 0.5
"""A dense spread above this is left unclipped: a score on a wider scale than [0, 1] (a
reward model's logit, a length count), which rewardsvc's objectives never are."""


def _normalized(values: Sequence[float]) -> list[float]:
    mean = statistics.fmean(values)
    std = statistics.pstdev(values)
    return [(v - mean) / (std + EPS) for v in values]


def _groups(
    rng: random.Random, groups: int, size: int, p: float, sigma: float
) -> list[tuple[list[float], list[float]]]:
    """(correct, explanation) per completion, for each group."""
    out = []
    for _ in range(groups):
        level = rng.uniform(0.3, 0.7)  # how well this prompt's replies explain, on average
        correct = [1.0 if rng.random() < p else 0.0 for _ in range(size)]
        explanation = [rng.gauss(level, sigma) for _ in range(size)]
        if sigma <= WIDE:  # a score in [0, 1]; a wider spread stands for an unbounded score
            explanation = [min(1.0, max(0.0, e)) for e in explanation]
        out.append((correct, explanation))
    return out


def scalarized(correct: Sequence[float], dense: Sequence[float], w: float) -> list[float]:
    """GRPO's advantage of the weighted scalar."""
    return _normalized([w * c + (1 - w) * e for c, e in zip(correct, dense, strict=True)])


def decoupled(groups: Sequence[tuple[list[float], list[float]]], w: float) -> list[list[float]]:
    """GDPO's advantage: each objective normalized in its group, summed, batch-normalized."""
    summed = [
        [w * c + (1 - w) * e for c, e in zip(_normalized(cs), _normalized(es), strict=True)]
        for cs, es in groups
    ]
    flat = [a for g in summed for a in g]
    mean, std = statistics.fmean(flat), statistics.pstdev(flat)
    return [[(a - mean) / (std + EPS) for a in g] for g in summed]


def _figures(
    groups: Sequence[tuple[list[float], list[float]]], advantages: Sequence[Sequence[float]]
) -> tuple[float, float, float]:
    agree = right_up = rights = total = 0
    xs: list[float] = []
    ys: list[float] = []
    for (correct, _), adv in zip(groups, advantages, strict=True):
        if min(correct) == max(correct):
            continue
        mean_c = statistics.fmean(correct)
        for c, a in zip(correct, adv, strict=True):
            total += 1
            agree += (a > 0) == (c > mean_c)
            if c > 0:
                rights += 1
                right_up += a > 0
            xs.append(c - mean_c)
            ys.append(a)
    share = statistics.correlation(xs, ys) ** 2
    return agree / total, right_up / rights, share


def run(groups: int, size: int, seed: int) -> list[dict[str, float]]:
    """The figures of both methods for each setting of p, sigma and w."""
    rows = []
    for p in (0.125, 0.5):
        for sigma in (0.1, 0.3, 1.0):
            for w in (0.5, 0.2):
                rng = random.Random(seed)
                data = _groups(rng, groups, size, p, sigma)
                scalar = [scalarized(c, e, w) for c, e in data]
                gdpo = decoupled(data, w)
                s = _figures(data, scalar)
                d = _figures(data, gdpo)
                rows.append({"p": p, "sigma": sigma, "w": w, "scalar": s, "gdpo": d})  # type: ignore[dict-item]
    return rows


def main() -> None:
    """Print the table (markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{args.groups} groups of {args.size}, seed {args.seed}; groups with mixed correctness")
    print()
    print("| p(correct) | dense sigma | w(correct) | sign agreement scalar / GDPO "
          "| right > 0 scalar / GDPO | share scalar / GDPO |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for row in run(args.groups, args.size, args.seed):
        s, d = row["scalar"], row["gdpo"]  # type: ignore[misc]
        print(
            f"| {row['p']} | {row['sigma']} | {row['w']} | {s[0]:.3f} / {d[0]:.3f} "  # type: ignore[index]
            f"| {s[1]:.3f} / {d[1]:.3f} | {s[2]:.3f} / {d[2]:.3f} |"  # type: ignore[index]
        )


if __name__ == "__main__":
    main()
