"""Rubric health's kept inputs and the cheaper Spearman give, bit for bit, what the
implementations before issue 37's cut gave (kept here as references), over a seeded stream
of samples: groups, item rubrics' criteria, statuses other than ok, criteria that come and
go, more criteria than a health reports, and windows rebuilt as the shared store does."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from itertools import groupby

from rewardsvc.core.monitor_spec import HealthConfig, MonitorConfig
from rewardsvc.monitor import stats
from rewardsvc.monitor.health import (
    MAX_CRITERIA,
    CriterionHealth,
    GroupStat,
    Health,
    Observed,
    Saturation,
    measure,
)
from rewardsvc.monitor.runs import RunState, Sample
from rewardsvc.monitor.window import Window

# ------------------------------------------------------------------ the references (f6dead7)


def reference_measure(window: Iterable[Observed], config: HealthConfig) -> Health:
    ok = [s for s in window if s.status == "ok"]
    groups = [s.group for s in ok if s.group is not None]
    columns: dict[str, list[float]] = {}
    for s in ok:
        for cid, score in s.scores:
            columns.setdefault(cid, []).append(score)
    within: dict[str, list[float]] = {}
    for g in groups:
        for cid, variance in g.variances:
            within.setdefault(cid, []).append(variance)
    kept = None
    if len(columns) > MAX_CRITERIA:
        kept = set(sorted(columns, key=lambda c: len(columns[c]), reverse=True)[:MAX_CRITERIA])
    criteria = []
    for cid, scores in columns.items():
        if kept is not None and cid not in kept:
            continue
        rate = sum(scores) / len(scores)
        saturated: Saturation | None = None
        if len(scores) >= config.min_samples:
            if rate >= config.saturated_high:
                saturated = "high"
            elif rate <= config.saturated_low:
                saturated = "low"
        spreads = within.get(cid, [])
        criteria.append(
            CriterionHealth(cid, len(scores), rate, saturated, stats.mean(spreads), len(spreads))
        )
    flat = sum(g.spread <= config.epsilon for g in groups)
    return Health(len(ok), len(groups), flat, tuple(criteria))


def reference_ranks(xs: Sequence[float]) -> list[float]:
    order = sorted(range(len(xs)), key=xs.__getitem__)
    out = [0.0] * len(xs)
    i = 0
    for _, run in groupby(order, key=xs.__getitem__):
        tied = list(run)
        j = i + len(tied) - 1
        for k in tied:
            out[k] = (i + j) / 2 + 1
        i = j + 1
    return out


def reference_spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    if len(xs) < 3:
        return None
    rx, ry = reference_ranks(xs), reference_ranks(ys)
    n = len(rx)
    if n != len(ry):
        return None
    mx, my = sum(rx) / n, sum(ry) / n
    dx = [x - mx for x in rx]
    dy = [y - my for y in ry]
    sxy = sum(a * b for a, b in zip(dx, dy, strict=True))
    sxx = sum(d**2 for d in dx)
    syy = sum(d**2 for d in dy)
    if sxx <= 0 or syy <= 0:
        return None
    return sxy / math.sqrt(sxx * syy)


# ------------------------------------------------------------------ the stream

RUBRIC = ["correct", "complete", "clear", "honest", "safe"]
STATUSES = ["ok"] * 6 + ["judge_error", "degraded", "rejected"]
SCORES = [0.0, 0.125, 0.5, 0.8, 1.0]


def criteria_at(step: int, rng: random.Random) -> list[str]:
    """The criteria a sample is scored on: the rubric's, then item rubrics' (keyed with
    their version) by the dozen, more than a health reports, then fewer again."""
    phase = (step // 150) % 4
    if phase == 0:
        return [c for c in RUBRIC if rng.random() < 0.9]
    if phase == 1:
        prompt = rng.randrange(40)
        return [f"q{prompt}-{k}@{prompt:012x}" for k in range(rng.randint(1, 4))]
    if phase == 2:
        return [*rng.sample(RUBRIC, 2), f"extra{rng.randrange(90)}"]
    return RUBRIC[: rng.randint(0, 5)]


def sample(step: int, rng: random.Random) -> Sample:
    status = rng.choice(STATUSES)
    cids = criteria_at(step, rng)
    if cids and rng.random() < 0.05:
        cids.append(cids[0])  # a sample restored from another replica may repeat one
    scores = tuple((c, rng.choice([*SCORES, rng.random()])) for c in cids)
    reward = rng.choice([0.0, 0.5, 1.0, -0.0, rng.random()]) if status == "ok" else None
    group = None
    if status == "ok" and rng.random() < 0.3:
        spread = rng.choice([0.0, 1e-4, 0.5, rng.random()])
        variances = tuple((c, rng.choice([0.0, 0.25, rng.random()])) for c in cids[:3])
        group = GroupStat(rng.randint(2, 8), spread, variances)
    passes = tuple((c, s >= 0.5) for c, s in scores[:5])
    return Sample(
        reward,
        rng.choice([40, 80, rng.randint(1, 900)]),
        status,
        (),
        passes,
        None,
        None,
        scores,
        group,
    )


CONFIGS = [
    HealthConfig(),
    HealthConfig(epsilon=1e-3, min_samples=4, saturated_high=0.7, saturated_low=0.3),
]


def test_kept_inputs_measure_what_the_whole_window_measured() -> None:
    rng = random.Random(37)
    seen = {"cut": 0, "flat": 0, "groups": 0}
    for size in (16, 64, 128):
        window: Window[Sample] = Window(size, 8)
        for step in range(700):
            window.append(sample(step, rng))
            if step in (200, 480):
                # The shared store rebuilds a window from its samples.
                listed = list(window)
                window.clear()
                window.extend(listed)
            listed = list(window)
            for config in CONFIGS:
                expected = repr(reference_measure(listed, config))
                assert repr(measure(window, config, window.health_inputs)) == expected
                assert repr(measure(listed, config)) == expected
            health = reference_measure(listed, CONFIGS[1])
            seen["cut"] += len({c for s in listed if s.status == "ok" for c, _ in s.scores}) > (
                MAX_CRITERIA
            )
            seen["flat"] += health.zero_spread_groups > 0
            seen["groups"] += health.groups > health.zero_spread_groups
    assert min(seen.values()) > 50, seen


def test_a_run_evaluates_the_health_and_signals_it_did() -> None:
    rng = random.Random(38)
    config = MonitorConfig(window=32, eval_every=4, baseline=16)
    state = RunState("r", "run", "v1", config, 0.0)
    evaluations = 0
    for step in range(900):
        if step == 300:
            state.change_version("v2", config, 1.0)
        if step == 600:
            state.restore(state.samples, 40, list(state.window), [], [])
        state.add_sample(sample(step, rng), 2.0)
        if (step + 1) % config.eval_every:
            continue
        evaluations += 1
        listed = list(state.window)
        assert repr(state.health) == repr(reference_measure(listed, config.health))
        rewards = [s.reward for s in listed if s.reward is not None]
        lengths = [float(s.length) for s in listed if s.reward is not None]
        expected = reference_spearman(rewards, lengths)
        assert repr(state.signals["reward_length_corr"]) == repr(expected)
    assert evaluations == 225


def test_spearman_is_the_reference_bit_for_bit() -> None:
    rng = random.Random(39)
    pools = [
        [0.0, 1.0],
        [0.0, -0.0, 0.5, 1.0],
        [0.1, 0.2, 0.30000000000000004, 0.3],
        [-math.inf, 0.0, math.inf, 1e300, -1e-300],
    ]
    for _ in range(3000):
        n = rng.choice([0, 1, 2, 3, 5, 17, 128, 300])
        pool = rng.choice(pools)
        xs = [rng.choice([*pool, rng.random()]) for _ in range(n)]
        ys = [
            rng.choice([*pool, float(rng.randint(0, 30))]) for _ in range(n + rng.choice([0, 0, 1]))
        ]
        assert stats.ranks(xs) == reference_ranks(xs)
        assert repr(stats.spearman(xs, ys)) == repr(reference_spearman(xs, ys))


def test_a_rank_deviation_squares_alike_by_product_and_power() -> None:
    # Spearman squares rank deviations (halves of integers; at most half a 4096-sample
    # window) as d * d, which it says is d**2: every such deviation, checked.
    for k in range(-8192, 8193):
        d = k / 2
        assert d * d == d**2
