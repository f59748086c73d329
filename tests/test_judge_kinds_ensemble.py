"""Three kinds of judge in one rubric, on real vLLM CPU servers: an LLM judge asked one
constrained token per criterion (``smollm2``), a reasoning judge that thinks within a
budget before its answer (``smollm2-think``) and a reward model on the pooling runner
(``smollm2-rm``), combined by ``min`` after zscore calibration.

The tiny models' judgements mean nothing; what is checked is that each kind is asked as
it should be (criteria, criteria after reasoning, whole items) and that their scores meet
through the calibration and rule every rubric uses.
"""

from __future__ import annotations

import pytest
import test_judge_kinds_reasoning as thinking
import test_judge_kinds_reward_model as rm
from fakejudge import RecordingObserver

from rewardsvc.application.targets import score_batch
from rewardsvc.core import aggregate
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import build_judges
from rewardsvc.scoring.engine import Engine

pytestmark = pytest.mark.judges

JUDGES = ("primary", "thinker", "rm")


@pytest.fixture
def pool(cpu_pool: JudgePool, rm_server: None, think_server: None) -> JudgePool:
    """The CPU pool's chat judge, a reasoning judge and a reward model (with the two
    defaults, four servers on the machine)."""
    return JudgePool(
        judges={
            "primary": cpu_pool.judges["primary"],
            "thinker": thinking.thinker(),
            "rm": rm.rm_config(),
        }
    )


RUBRIC = Rubric.model_validate(
    {
        "id": "three-kinds",
        "criteria": [
            {"id": "correct", "text": "The final answer is correct."},
            {"id": "clear", "text": "The answer is clear.", "weight": 0.5},
        ],
        "judges": list(JUDGES),
        "min_judges": 3,
        "aggregation": {"rule": "min", "calibration": "zscore"},
    }
)


async def test_llm_reasoning_and_reward_model_judges_meet_in_min_after_calibration(
    pool: JudgePool,
) -> None:
    observer = RecordingObserver()
    engine = Engine(build_judges(pool, observer))
    items = rm.items()
    try:
        response = await score_batch(engine, RUBRIC, items)
    finally:
        await engine.aclose()
    results = response.results
    assert [r.status for r in results] == ["ok"] * len(items), [r.error for r in results]

    calls = [j for j, _ in observer.calls]
    assert calls.count("rm") == len(items)  # whole items
    assert calls.count("primary") == calls.count("thinker") == 2 * len(items)  # per criterion
    thought = [v for j, v in observer.calls if j == "thinker"]
    # Every answer came after some reasoning, which was counted as the judge's tokens.
    assert all(0 < v.reasoning_tokens <= thinking.BUDGET for v in thought)
    assert all(v.completion_tokens > v.reasoning_tokens for v in thought)

    for name in JUDGES:
        raw = [r.judges[name].raw_score for r in results]
        assert all(s is not None for s in raw), name
        stats = aggregate.WindowStats.of([s for s in raw if s is not None])
        for r, s in zip(results, raw, strict=True):
            assert s is not None
            spread = stats.sd >= 1e-9  # a judge that gave every item one score stays raw
            expected = aggregate.normal_cdf((s - stats.mean) / stats.sd) if spread else s
            assert r.judges[name].score == pytest.approx(expected, abs=1e-9), name
    for r in results:
        calibrated = [r.judges[name].score for name in JUDGES]
        assert r.reward == pytest.approx(min(s for s in calibrated if s is not None))
