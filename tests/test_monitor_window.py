"""The window's kept counts are the counts of its samples, as counted afresh (issue 37)."""

from __future__ import annotations

import random
from collections import Counter

from rewardsvc.monitor.runs import Sample
from rewardsvc.monitor.window import Tally, Window, compute_signals

FLAGS = ["fake_score", "padding", "injection_suspected"]
CRITERIA = ["a", "b", "c"]


def sample(rng: random.Random) -> Sample:
    status = rng.choice(["ok", "ok", "ok", "judge_error", "degraded", "rejected"])
    flags = tuple(rng.sample(FLAGS, rng.choice([0, 0, 1, 2])))
    if rng.random() < 0.1:
        flags += flags  # a sample restored from another replica may repeat a flag
    passes = tuple((c, rng.random() < 0.6) for c in CRITERIA if rng.random() < 0.8)
    reward = None if status != "ok" else rng.choice([0.0, 0.5, 1.0, rng.random()])
    return Sample(reward, rng.randint(1, 400), status, flags, passes, None, None)


def test_kept_counts_give_the_signals_of_a_fresh_count() -> None:
    rng = random.Random(37)
    for size, tail in ((16, 8), (16, 64), (40, 40)):
        window: Window[Sample] = Window(size, tail)
        for step in range(300):
            window.append(sample(rng))
            if step == 150:
                kept = list(window)
                window.clear()
                window.extend(kept)
            listed = list(window)
            assert len(listed) == min(step + 1, size)
            kept_signals = compute_signals(window, FLAGS, CRITERIA, window.tally)
            assert kept_signals == compute_signals(listed, FLAGS, CRITERIA)
            fresh = Tally.of(listed)
            assert window.tally.statuses == fresh.statuses
            assert window.tally.flags == fresh.flags
            assert window.tally.outcomes == fresh.outcomes
            last = listed[-window.tail :]
            assert window.tail_flags.flags == Counter(f for s in last for f in set(s.flags))
