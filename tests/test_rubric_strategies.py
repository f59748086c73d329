"""The rubric's strategies read as properties, not as string comparisons at each use."""

from __future__ import annotations

from typing import Any

from rewardsvc.core.rubric import Rubric


def _rubric(**extra: Any) -> Rubric:
    criteria = [
        {"id": "a", "text": "The answer is right."},
        {"id": "b", "text": "Each step is sound.", "scope": "step"},
        {"id": "c", "grader": {"type": "length", "max_words": 10}},
    ]
    return Rubric.model_validate({"id": "r", "judges": ["j"], "criteria": criteria, **extra})


def test_criteria_say_how_they_are_scored() -> None:
    a, b, c = _rubric().criteria
    assert (a.per_step, b.per_step, c.per_step) == (False, True, False)
    assert (a.asks_judges, b.asks_judges, c.asks_judges) == (True, False, False)
    assert [x.id for x in _rubric().step_criteria] == ["b"]


def test_rubric_says_its_kind_and_combine() -> None:
    plain = _rubric()
    assert not plain.is_constitution and not plain.implicit_combine
    holistic = Rubric.model_validate(
        {
            "id": "h",
            "judges": ["j"],
            "combine": "implicit",
            "criteria": [{"id": "a", "text": "The answer is right."}],
        }
    )
    assert holistic.implicit_combine
    constitution = Rubric.model_validate(
        {
            "id": "c",
            "kind": "constitution",
            "judges": ["j"],
            "criteria": [{"id": "a", "text": "Be honest about uncertainty."}],
        }
    )
    assert constitution.is_constitution
