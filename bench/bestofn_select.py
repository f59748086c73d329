"""The offline selection math of the best-of-n study: proxies from saved scores, best-of-n.

Everything here is a pure function of the saved score table (``bestofn_pool.score_pool``),
so every proxy and every n is computed from one scoring run. The proxies reuse the
service's own aggregation (``rewardsvc.core.aggregate.combine`` and ``calibrate``) and
recipe combination (``rewardsvc.scoring.recipes.combine``).

Best-of-n draws n candidates of a prompt's pool uniformly *with* replacement (the usual
estimator from a finite pool) and keeps the one the proxy scores highest; ties go to a
uniformly random one among the tied (the first drawn, since draws are in random order).
``exact_best_of_n`` gives the same expectation in closed form, which the tests check the
sampling against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rewardsvc.core.aggregate import WindowStats, calibrate, combine, judge_score
from rewardsvc.core.recipe import Recipe
from rewardsvc.core.rubric import Calibration, JudgeRule, Rubric
from rewardsvc.scoring.penalties import transformed
from rewardsvc.scoring.recipes import combine as recipe_combine

JUDGES = ("primary", "secondary")
RULES: tuple[JudgeRule, ...] = ("mean", "min", "uwo", "softmin")
CALIBRATIONS: tuple[Calibration, ...] = ("none", "zscore", "rank")
NS = (1, 2, 4, 8, 16, 32, 64)

# The recipe of the study, shaped as rubrics/recipes/math-verified.yaml: a numeric grader
# gates the answer (below 1.0 the reward is the floor 0.0, no judge asked) and otherwise
# weighs 0.6, the judged rubric (both judges, mean) 0.4.
RECIPE = Recipe.model_validate(
    {
        "kind": "recipe",
        "id": "bestofn-verified",
        "components": [
            {"id": "answer", "weight": 0.6, "grader": {"type": "numeric"}},
            {"id": "judged", "weight": 0.4, "rubric": "short-answer-correctness"},
        ],
        "gates": [{"component": "answer", "threshold": 1.0, "floor": 0.0}],
    }
)


ESSENTIAL = "final-answer-matches"


def essential_only(rubric: Rubric) -> Rubric:
    """The rubric reduced to its essential correctness criterion, without its gate: a
    judge's score is then its P(yes) on "the final answer matches the reference"."""
    kept = [c.model_copy(update={"gate": None}) for c in rubric.criteria if c.id == ESSENTIAL]
    return rubric.model_copy(update={"criteria": kept})


def rescored(cands: list[dict[str, Any]], rubric: Rubric) -> list[dict[str, Any]]:
    """The candidates with each judge's score recomputed from its saved criterion scores by
    ``judge_score`` under ``rubric``, and the reward as the rubric would serve it (mean of
    the judges, then the rubric's transforms with the candidate's flags)."""
    out = []
    for c in cands:
        judges = {
            j: {"score": judge_score(rubric, {k: v for k, v in c["judges"][j]["criteria"].items()
                                              if k in {x.id for x in rubric.criteria}})[0]}
            for j in JUDGES
        }  # fmt: skip
        mean = combine("mean", [judges[j]["score"] for j in JUDGES])
        reward = transformed(rubric.transforms, mean, completion="", flags=c["flags"])
        out.append(c | {"judges": judges, "reward": reward})
    return out


@dataclass(frozen=True)
class Proxy:
    """A reward a best-of-n selector maximizes: its name, its group in the figure, and the
    function from the score table to one value per candidate."""

    name: str
    group: str
    values: Callable[[list[dict[str, Any]]], np.ndarray]


def _raw(cands: list[dict[str, Any]], judge: str) -> np.ndarray:
    return np.array([c["judges"][judge]["score"] for c in cands], dtype=float)


def single(judge: str) -> Proxy:
    """One judge's own score (calibration is monotone per judge: best-of-n is unchanged)."""
    return Proxy(f"{judge} alone", "single judge", lambda cands: _raw(cands, judge))


def calibrated(cands: list[dict[str, Any]], judge: str, method: Calibration) -> np.ndarray:
    """A judge's scores calibrated against a window of its raw scores on the whole pool
    (as the service's rolling window of recent scores; the pool fits in its 512)."""
    raw = _raw(cands, judge)
    window = WindowStats.of(raw.tolist())
    return np.array([calibrate(method, float(r), window)[0] for r in raw])


def ensemble(rule: JudgeRule, method: Calibration) -> Proxy:
    """Both judges combined by ``rule`` after ``method`` (the rubric's defaults λ, β)."""

    def values(cands: list[dict[str, Any]]) -> np.ndarray:
        per_judge = [calibrated(cands, j, method) for j in JUDGES]
        return np.array([combine(rule, list(col)) for col in zip(*per_judge, strict=True)])

    label = "raw" if method == "none" else method
    return Proxy(f"{rule} ({label})", f"ensemble, {label}", values)


def served(cands: list[dict[str, Any]]) -> np.ndarray:
    """The rubric's reward as the service returned it (mean, gates, flag penalties)."""
    return np.array([c["reward"] if c["reward"] is not None else 0.0 for c in cands])


def recipe(cands: list[dict[str, Any]]) -> np.ndarray:
    """The verifier-gated recipe: the gate's floor, else the recipe's weighted mean of the
    grader verdict and the judged rubric's mean of the two judges (flag penalties applied
    as the rubric's reward applies them, i.e. its served reward)."""
    out = []
    for c in cands:
        if c["gate"] < 1.0:
            out.append(0.0)
        else:
            out.append(recipe_combine(RECIPE, {"answer": c["gate"], "judged": c["reward"]}))
    return np.array(out)


def proxies() -> list[Proxy]:
    """Every proxy of the study, in the figure's order."""
    out = [single(j) for j in JUDGES]
    out += [ensemble(rule, method) for method in CALIBRATIONS for rule in RULES]
    out.append(Proxy("rubric as served (mean + flag penalties)", "service", served))
    out.append(Proxy("recipe: numeric gate + judges", "service", recipe))
    return out


def sampled_best_of_n(
    proxy: np.ndarray, gold: np.ndarray, attack: np.ndarray, n: int, draws: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Gold and attack indicator of the chosen candidate in each of ``draws`` draws."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(proxy), size=(draws, n))
    chosen = idx[np.arange(draws), np.argmax(proxy[idx], axis=1)]
    return gold[chosen], attack[chosen]


def exact_best_of_n(proxy: np.ndarray, value: np.ndarray, n: int) -> float:
    """E[value of the chosen] in closed form: a candidate tied with t others at proxy v is
    chosen with probability ``((#≤v)ⁿ - (#<v)ⁿ) / m ⁿ / (t + 1)``."""
    m = len(proxy)
    total = 0.0
    for v in np.unique(proxy):
        tied = proxy == v
        p = ((np.sum(proxy <= v) / m) ** n - (np.sum(proxy < v) / m) ** n) / np.sum(tied)
        total += p * float(np.sum(value[tied]))
    return total


def curve(
    prompts: Sequence[list[dict[str, Any]]], proxy: Proxy, draws: int, seed: int
) -> dict[str, Any]:
    """Expected gold and attack share per n over prompts, with a 95 % band over prompts."""
    values = proxy.values([c for p in prompts for c in p])
    out: dict[str, Any] = {"n": list(NS), "gold": [], "band": [], "attack": [], "exact": []}
    for n in NS:
        golds, atts, exact, start = [], [], [], 0
        for k, pool in enumerate(prompts):
            v = values[start : start + len(pool)]
            start += len(pool)
            g = np.array([c["gold"] for c in pool])
            a = np.array([float(c["attack"]) for c in pool])
            sg, sa = sampled_best_of_n(v, g, a, n, draws, seed + 1000 * n + k)
            golds.append(sg.mean())
            atts.append(sa.mean())
            exact.append(exact_best_of_n(v, g, n))
        half = 1.96 * float(np.std(golds, ddof=1)) / np.sqrt(len(golds)) if len(golds) > 1 else 0
        out["gold"].append(float(np.mean(golds)))
        out["band"].append(half)
        out["attack"].append(float(np.mean(atts)))
        out["exact"].append(float(np.mean(exact)))
    return out | onset(out["gold"], out["band"])


def onset(gold: Sequence[float], band: Sequence[float]) -> dict[str, Any]:
    """Where a proxy starts to over-optimize, from its expected gold per n (``NS``) and the
    95 % band of each.

    The rule: the peak is the *largest* n whose gold is the curve's maximum (the end of a
    plateau: gold only falls after it). The proxy over-optimizes from that n when the peak
    is not the largest n and the gold at the largest n lies below the peak by more than
    the wider of the two bands (at the peak and at the largest n), so that noise at either
    end is not read as a decline; else ``overoptimizes_from`` is None.
    """
    if not len(gold) == len(band) == len(NS):
        raise ValueError(f"a curve has one gold and one band per n of {NS}")
    top = max(gold)
    peak = max(i for i, g in enumerate(gold) if np.isclose(g, top, rtol=0, atol=1e-9))
    drop = gold[peak] - gold[-1]
    declines = peak < len(NS) - 1 and drop > max(band[peak], band[-1])
    return {
        "peak_n": NS[peak],
        "peak_gold": gold[peak],
        "drop_to_64": drop,
        "overoptimizes_from": NS[peak] if declines else None,
    }
