"""Pure math of comparative rewards: tournaments, orders, Bradley–Terry, win rates, labels.

No I/O and no state. Every function takes what it needs, so a group's rewards can be
recomputed by hand from its breakdown.

Normalization within a group (both methods): a completion's reward is its **expected win
rate against the other completions of its group**, ``r_i = mean_{j≠i} P(i beats j)``. It
lies in [0, 1], is 0.5 for every member of a group of equals, and does not depend on the
scale of the strengths. Pairwise judging estimates ``P(i beats j) = σ(θ_i − θ_j)`` from
Bradley–Terry strengths ``θ`` fitted to the pair outcomes (:func:`bradley_terry`).
Listwise judging reads ``p_i = P(i is the best)`` from one call; under the Plackett–Luce
model (whose pairwise marginals are Bradley–Terry) ``exp θ_i ∝ p_i``, so
``P(i beats j) = p_i / (p_i + p_j)`` (:func:`listwise_win_rates`). For a question about a
problem ("which response has this problem most?") the answer distribution ``q`` points the
other way and ``P(i beats j) = q_j / (q_i + q_j)``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Literal

from rewardsvc.core.aggregate import combine
from rewardsvc.core.rubric import JudgeRule

Tournament = Literal["circular", "all_pairs", "sample"]
Side = Literal["a", "b", "tie"]

LABELS = "ABCDEFGHIJKLMNOPQRST"
"""Answer labels of shown completions; 20, vLLM's default ``--max-logprobs``, so that every
label's probability can be read at the answer position."""

MAX_LISTWISE = len(LABELS)
"""Most completions one listwise call can show."""

DEFAULT_MARGIN = 0.1
"""Preference label rule: ``a`` when P(a better) > 0.5 + margin, ``b`` when it is below
0.5 − margin, else ``tie``."""

BT_PRIOR = 0.1
"""Virtual draws added to each compared pair (half a win each way per unit) so that
strengths stay finite when one completion wins every comparison. Small: two asked orders
that agree with certainty still give σ(θ_i − θ_j) ≈ 0.95."""

_BT_TOLERANCE = 1e-10
_BT_ITERATIONS = 2000


def rng_for(seed: int | str) -> random.Random:
    """A private random generator: plans depend on their seed only, never on global state."""
    return random.Random(seed)


def plan_pairs(
    n: int, tournament: Tournament, rng: random.Random, budget: int | None = None
) -> list[tuple[int, int]]:
    """The pairs ``(i, j)`` of a tournament over ``n`` completions (each is asked in both
    orders by the caller; ``i`` is shown first in the order called ``ab``).

    - ``circular``: each completion against the next, the last against the first (``n``
      pairs; one for ``n = 2``);
    - ``all_pairs``: every pair, ``n (n − 1) / 2``;
    - ``sample``: at most ``budget`` pairs (default ``n``): first a random path through all
      completions (``n − 1`` pairs connect the group), then random further pairs.
    """
    if n < 2:
        return []
    if tournament == "all_pairs":
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    if tournament == "circular":
        return [(0, 1)] if n == 2 else [(i, (i + 1) % n) for i in range(n)]
    if tournament != "sample":
        raise ValueError(f"unknown tournament {tournament!r}")
    every = n * (n - 1) // 2
    limit = min(every, n if budget is None else budget)
    if limit < 1:
        raise ValueError("a sampled tournament needs a budget of at least one pair")
    path = list(range(n))
    rng.shuffle(path)
    pairs = [(path[k], path[k + 1]) for k in range(n - 1)][:limit]
    chosen = {frozenset(p) for p in pairs}
    rest = [(i, j) for i in range(n) for j in range(i + 1, n) if frozenset((i, j)) not in chosen]
    rng.shuffle(rest)
    return pairs + rest[: limit - len(pairs)]


def plan_orders(n: int, count: int, rng: random.Random) -> list[tuple[int, ...]]:
    """``count`` presentation orders of ``n`` completions for listwise judging.

    The first is a random shuffle, the second its reverse (each completion then sits at
    mirrored positions, which cancels a bias that grows or shrinks along the list), and any
    further order is a new shuffle.
    """
    if count < 1:
        raise ValueError("at least one order")
    first = list(range(n))
    rng.shuffle(first)
    orders = [tuple(first)]
    if count >= 2:
        orders.append(tuple(reversed(first)))
    while len(orders) < count:
        more = list(range(n))
        rng.shuffle(more)
        orders.append(tuple(more))
    return orders


def bradley_terry(
    n: int, outcomes: Sequence[tuple[int, int, float]], prior: float = BT_PRIOR
) -> list[float]:
    """Bradley–Terry log-strengths of ``n`` completions from soft pair outcomes.

    Each outcome ``(i, j, p)`` is one comparison whose result is ``p = P(i beat j)`` (a
    judge's probability, not only 0 or 1). Fitted by Hunter's MM iteration on the expected
    win counts, each compared pair holding ``prior`` virtual draws. Strengths are centred to
    mean 0 within each connected part of the comparison graph; a completion never compared
    gets 0, the group's centre.
    """
    wins = [[0.0] * n for _ in range(n)]
    for i, j, p in outcomes:
        if i == j or not 0 <= i < n or not 0 <= j < n:
            raise ValueError(f"bad pair ({i}, {j}) for {n} completions")
        p = min(1.0, max(0.0, p))
        wins[i][j] += p
        wins[j][i] += 1.0 - p
    games = [[wins[i][j] + wins[j][i] for j in range(n)] for i in range(n)]
    for i in range(n):
        for j in range(n):
            if games[i][j] > 0:
                wins[i][j] += prior / 2
                games[i][j] += prior
    strength = [1.0] * n
    for _ in range(_BT_ITERATIONS):
        updated = []
        for i in range(n):
            won = sum(wins[i])
            denom = sum(games[i][j] / (strength[i] + strength[j]) for j in range(n) if j != i)
            updated.append(won / denom if denom > 0 else strength[i])
        change = max(abs(math.log(a) - math.log(b)) for a, b in zip(updated, strength, strict=True))
        strength = updated
        if change < _BT_TOLERANCE:
            break
    theta = [math.log(s) for s in strength]
    for part in _components(games):
        centre = sum(theta[i] for i in part) / len(part)
        for i in part:
            theta[i] -= centre
    return theta


def _components(games: list[list[float]]) -> list[list[int]]:
    n = len(games)
    seen = [False] * n
    parts = []
    for start in range(n):
        if seen[start]:
            continue
        stack, part = [start], []
        seen[start] = True
        while stack:
            i = stack.pop()
            part.append(i)
            for j in range(n):
                if games[i][j] > 0 and not seen[j]:
                    seen[j] = True
                    stack.append(j)
        parts.append(part)
    return parts


def sigmoid(x: float) -> float:
    """σ(x), computed without overflow."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def win_rates(theta: Sequence[float]) -> list[float]:
    """Each completion's mean ``σ(θ_i − θ_j)`` over the others (0.5 alone)."""
    n = len(theta)
    if n < 2:
        return [0.5] * n
    return [
        sum(sigmoid(theta[i] - theta[j]) for j in range(n) if j != i) / (n - 1) for i in range(n)
    ]


def listwise_win_rates(p: Sequence[float], best: bool = True) -> list[float]:
    """Win rates from one distribution over the group: ``p_i / (p_i + p_j)`` averaged over
    ``j`` when ``p`` is P(best); ``p_j / (p_i + p_j)`` when ``best`` is False (``p`` is
    P(has the problem most)). Two completions both at probability 0 draw (0.5)."""
    n = len(p)
    if n < 2:
        return [0.5] * n
    out = []
    for i in range(n):
        total = 0.0
        for j in range(n):
            if j == i:
                continue
            both = p[i] + p[j]
            share = 0.5 if both <= 0 else p[i] / both
            total += share if best else 1.0 - share
        out.append(total / (n - 1))
    return out


def side(p: float) -> Side:
    """Which completion a probability P(a better) favours: ``a``, ``b``, or ``tie`` at 0.5."""
    return "a" if p > 0.5 else "b" if p < 0.5 else "tie"


def consistent(p_ab: float, p_ba: float) -> bool:
    """Whether a pair's verdict survives the swap: P(a better) with a shown first and with b
    shown first fall on the same side of 0.5."""
    return side(p_ab) == side(p_ba)


def order_agreement(per_order: Sequence[Sequence[float]]) -> tuple[int, int]:
    """``(agreeing, compared)`` over every pair of listwise orders and every pair of
    completions: whether the two orders rank the two completions the same way (by their
    probabilities of being picked)."""
    agree = total = 0
    for a in range(len(per_order)):
        for b in range(a + 1, len(per_order)):
            x, y = per_order[a], per_order[b]
            for i in range(len(x)):
                for j in range(i + 1, len(x)):
                    total += 1
                    agree += _sign(x[i] - x[j]) == _sign(y[i] - y[j])
    return agree, total


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def preference_label(p_a_better: float, margin: float = DEFAULT_MARGIN) -> Side:
    """``a`` when ``p_a_better > 0.5 + margin``, ``b`` when it is below ``0.5 − margin``,
    otherwise ``tie``."""
    if not 0 <= margin < 0.5:
        raise ValueError("the margin must be in [0, 0.5)")
    if p_a_better > 0.5 + margin:
        return "a"
    if p_a_better < 0.5 - margin:
        return "b"
    return "tie"


_NEGLIGIBLE = 1e-9


def combine_pair(
    rule: JudgeRule,
    ps: Sequence[float],
    weights: Sequence[float] | None = None,
    *,
    lam: float = 0.5,
    beta: float = 0.1,
) -> float:
    """Several judges' P(a better) as one, by the rubric's rule applied to both sides alike:
    ``R_a = rule(p)``, ``R_b = rule(1 − p)``, result ``R_a / (R_a + R_b)`` (0.5 when both
    are 0). For ``mean`` this is the weighted mean; for ``min`` each side keeps its most
    pessimistic judge, so the rule never favours whichever completion is called ``a``."""
    # uwo subtracts a variance and can go below 0: a negative side would push the other
    # past 1, so each side is clipped at 0 first.
    r_a = max(0.0, combine(rule, ps, weights, lam=lam, beta=beta))
    r_b = max(0.0, combine(rule, [1.0 - p for p in ps], weights, lam=lam, beta=beta))
    both = r_a + r_b
    # Below this both sides say "no": a ratio of two sides that small is float noise (1 − p
    # loses ~1e-16), and it would flip between 0 and 1 with the order of the pair.
    return 0.5 if both <= _NEGLIGIBLE else r_a / both


def population_variance(values: Sequence[float]) -> float:
    """Population variance (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / len(values)
