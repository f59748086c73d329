"""One registration per scoring method: the core's list names each method once, the pool
file's ``method`` field derives from it, and every method has exactly one strategy that owns
its prompt instruction and its reply reading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.scoring_methods import METHODS, MethodName
from rewardsvc.judges import methods
from rewardsvc.judges.methods import method_for
from rewardsvc.judges.questions import TokenAnswer
from rewardsvc.judges.reward_model import RewardModel
from rewardsvc.judges.shapes import shape_for
from rewardsvc.judges.strategy import strategy_for

SCHEMA = Path(__file__).resolve().parents[1] / "rubrics" / "schema" / "judges.schema.json"


def _config(method: str) -> JudgeConfig:
    return JudgeConfig(model="m", base_urls=["http://judge.invalid/v1"], method=method)


def test_every_method_is_listed_once_and_the_config_takes_exactly_those() -> None:
    names = [m.name for m in METHODS]
    assert len(names) == len(set(names))
    assert list(get_args(MethodName)) == names
    schema = json.loads(SCHEMA.read_text())
    assert schema["$defs"]["JudgeConfig"]["properties"]["method"]["enum"] == names
    with pytest.raises(ValidationError, match="method"):
        _config("telepathy")


def test_every_method_has_exactly_one_strategy_of_its_own_name() -> None:
    for entry in METHODS:
        strategy = strategy_for(_config(entry.name)).method
        assert strategy.name == entry.name
        # A whole-item method is a reward model's, built per judge; the others are one each.
        assert isinstance(strategy, RewardModel) == entry.whole_item
    llm = {m.name for m in METHODS if not m.whole_item}
    assert set(methods._METHODS) == llm
    assert all(methods._METHODS[name].name == name for name in llm)


def test_each_method_writes_its_own_answer_instruction() -> None:
    chat, completion = shape_for("chat"), shape_for("completion")
    choices = ("yes", "no")
    structured = method_for("structured").instruction(choices, "yes or no", chat, 120)
    assert '{"reasoning": "...", "answer": "..."}' in structured and "at most 120" in structured
    for name in ("logprob", "sampled", "batched"):
        style = method_for(name)
        assert isinstance(style, TokenAnswer)
        assert style.instruction(choices, "yes or no", chat, 120) == "Answer with yes or no only."
        assert style.instruction(choices, "yes or no", completion, 120) == "Answer (yes or no):"
