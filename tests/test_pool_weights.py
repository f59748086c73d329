"""A judge pool's ``weight``: how much each judge counts when judge scores combine.

The weight belongs to the pool, not to the rubric: it multiplies the rubric's own judge
weights wherever scores combine, reaches rubrics made from an item's own criteria, and
leaves the rubric's version alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_engine import StubJudge, constant

from rewardsvc.application.targets import score_batch
from rewardsvc.core import item_rubric
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.registry import load_pool, validation_context
from rewardsvc.scoring.engine import Engine

RUBRIC: dict[str, Any] = {
    "id": "weighted",
    "criteria": [{"id": "correct", "text": "The answer is correct.", "category": "essential"}],
    "judges": ["strong", {"name": "weak", "weight": 2}],
}


def pool(strong: float, weak: float) -> JudgePool:
    judge = {"model": "m", "base_urls": ["http://127.0.0.1:9/v1"]}
    return JudgePool.model_validate(
        {"judges": {"strong": {**judge, "weight": strong}, "weak": {**judge, "weight": weak}}}
    )


def test_pool_weight_multiplies_the_rubric_weight_and_keeps_the_version() -> None:
    bound = Rubric.model_validate(RUBRIC, context=validation_context(pool(1.0, 0.25)))
    plain = Rubric.model_validate(RUBRIC)
    assert bound.judge_weights == {"strong": 1.0, "weak": 0.5}
    assert plain.judge_weights == {"strong": 1.0, "weak": 2.0}
    assert bound.version() == plain.version()
    made = item_rubric.derive(bound, [{"id": "extra", "text": "The answer is short."}], "extend")
    assert made.judge_weights == bound.judge_weights


def test_weights_are_read_once_per_rubric_and_anew_for_an_edited_copy() -> None:
    bound = Rubric.model_validate(RUBRIC, context=validation_context(pool(1.0, 0.25)))
    assert bound.judge_weights is bound.judge_weights
    with pytest.raises(TypeError):
        bound.judge_weights["weak"] = 9.0  # type: ignore[index]
    weak = bound.judges[1].model_copy(update={"weight": 4.0})
    heavier = bound.model_copy(update={"judges": [weak]})
    assert heavier.judge_weights == {"weak": 1.0}
    assert bound.judge_weights == {"strong": 1.0, "weak": 0.5}
    assert bound == Rubric.model_validate(RUBRIC, context=validation_context(pool(1.0, 0.25)))


async def test_a_weaker_judge_counts_less_in_the_reward() -> None:
    engine = Engine(
        {"strong": StubJudge("strong", constant(0.9)), "weak": StubJudge("weak", constant(0.1))}
    )
    items = [{"prompt": "What is 7 * 8?", "completion": "56"}]
    rewards = {}
    for weak in (0.5, 0.125):  # x the rubric's 2: weak counts as much as strong, then a quarter
        rub = Rubric.model_validate(RUBRIC, context=validation_context(pool(1.0, weak)))
        rewards[weak] = (await score_batch(engine, rub, items)).results[0].reward
    assert rewards[0.5] == pytest.approx(0.5)
    assert rewards[0.125] == pytest.approx((0.9 * 1 + 0.1 * 0.25) / 1.25)


def test_the_default_pool_weighs_its_judges(repo_root: Any) -> None:
    served = load_pool(repo_root / "deploy" / "cpu-judge" / "judges.serve.yaml")
    assert served.judges["primary"].weight > served.judges["secondary"].weight
    tiny = load_pool(repo_root / "deploy" / "cpu-judge" / "judges.yaml")
    assert {j.weight for j in tiny.judges.values()} == {1.0}
