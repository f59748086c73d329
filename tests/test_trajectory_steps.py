"""Process rewards: step planning, step assembly and the step_combine math (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from explaining import explain
from hypothesis import given
from hypothesis import strategies as st

from rewardsvc.application.items import read_item
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.scoring import steps


def rubric(criteria: list[dict[str, Any]], **extra: Any) -> Rubric:
    return Rubric.model_validate({"id": "p", "criteria": criteria, "judges": ["a", "b"], **extra})


STEP = [
    {"id": "progress", "text": "The step helps.", "scope": "step", "category": "essential"},
    {"id": "error", "text": "The step errs.", "scope": "step", "category": "pitfall"},
]


def three_steps() -> Rollout:
    out: list[dict[str, Any]] = []
    for n in range(2):
        call = {"name": "lookup", "arguments": json.dumps({"n": n})}
        out.append({"role": "assistant", "tool_calls": [{"id": f"c{n}", "function": call}]})
        out.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"value {n}"})
    out.append({"role": "assistant", "content": "Done."})
    item = read_item(0, {"prompt": "Look two things up.", "completion": out})
    assert item.rollout is not None
    return item.rollout


def test_plan_is_step_major_and_keys_name_criterion_and_step() -> None:
    r = rubric([{"id": "final", "text": "Right answer."}, *STEP])
    calls = steps.plan(r, three_steps())
    assert [(c.step, c.criterion.id) for c in calls] == [
        (0, "progress"),
        (0, "error"),
        (1, "progress"),
        (1, "error"),
        (2, "progress"),
        (2, "error"),
    ]
    assert calls[3].key == "error@step1"
    assert calls[0].rollout.step == 0 and calls[0].rollout.step_count() == 1
    assert steps.plan(rubric([{"id": "final", "text": "Right answer."}]), three_steps()) == []
    episode = steps.episode_rubric(r)
    assert episode is not None and [c.id for c in episode.criteria] == ["final"]
    assert steps.episode_rubric(rubric(STEP)) is None


def test_combine_rules() -> None:
    rewards = [0.2, None, 0.8, 0.5]
    assert steps.combine(rewards, "min") == 0.2
    assert steps.combine(rewards, "mean") == pytest.approx(0.5)
    assert steps.combine(rewards, "last") == 0.5
    # discounted: sum of gamma^k r_k over sum of gamma^k, k the step index of scored steps
    expected = (0.2 + 0.5**2 * 0.8 + 0.5**3 * 0.5) / (1 + 0.5**2 + 0.5**3)
    assert steps.combine(rewards, "discounted", 0.5) == pytest.approx(expected)
    assert steps.combine([None, None], "mean") is None
    assert steps.combine([], "min") is None


@given(
    st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=20),
    st.sampled_from(["min", "mean", "last", "discounted"]),
    st.floats(0.01, 1.0),
)
def test_combined_reward_stays_within_the_scored_steps(
    rewards: list[float | None], how: Any, gamma: float
) -> None:
    value = steps.combine(rewards, how, gamma)
    scored = [r for r in rewards if r is not None]
    if not scored:
        assert value is None
    else:
        assert value is not None and min(scored) - 1e-9 <= value <= max(scored) + 1e-9


def ok(score: float) -> Verdict:
    return Verdict(score=score)


def test_a_failed_step_call_degrades_that_step_only() -> None:
    r = rubric(STEP, step_combine="mean")
    verdicts = {
        "a": {
            "progress@step0": ok(1.0),
            "error@step0": ok(0.0),
            "progress@step1": Verdict.failed("boom", kind="timeout"),
            "error@step1": ok(0.0),
            "progress@step2": ok(0.5),
            "error@step2": ok(0.0),
        },
        "b": {
            "progress@step0": ok(0.0),
            "error@step0": ok(0.0),
            "progress@step1": Verdict.failed("down"),
            "error@step1": ok(0.0),
            "progress@step2": ok(0.5),
            "error@step2": ok(0.0),
        },
    }
    results = steps.assemble(r, 3, verdicts)
    assert [s.status for s in results] == ["ok", "judge_error", "ok"]
    # Essential weight 5, pitfall -3 absent: judge score = 5 * progress / 5.
    assert results[0].reward == pytest.approx(0.5)  # judges 1.0 and 0.0, mean rule
    assert results[1].reward is None and "boom" in (results[1].error or "")
    assert results[2].reward == pytest.approx(0.5)
    assert results[0].criteria == {"progress": 0.5, "error": 0.0}
    assert steps.process_reward(r, results) == pytest.approx(0.5)
    assert steps.item_status(results) == "degraded"
    # One judge failing a step leaves it degraded when min_judges is met.
    verdicts["b"]["progress@step1"] = ok(1.0)
    results = steps.assemble(r, 3, verdicts)
    assert results[1].status == "degraded" and results[1].reward == pytest.approx(1.0)
    results = steps.assemble(r, 3, verdicts, min_judges=2)
    assert results[1].status == "judge_error"


def test_item_reward_mixes_scopes_by_weight() -> None:
    mixed = rubric([{"id": "final", "text": "Right.", "weight": 3}, *STEP])
    # Episode weight 3, step weight 5 (the pitfall's negative weight does not count).
    assert steps.item_reward(mixed, 1.0, 0.2) == pytest.approx((3 * 1.0 + 5 * 0.2) / 8)
    assert steps.item_reward(mixed, None, 0.2) is None
    assert steps.item_reward(rubric(STEP), None, 0.7) == 0.7
    only_episode = rubric([{"id": "final", "text": "Right."}])
    assert steps.item_reward(only_episode, 0.4, None) is None
    assert steps.item_status([]) == "judge_error"


async def test_explain_lists_every_call_a_judge_would_read() -> None:
    pool = {
        "a": JudgeConfig(model="m", base_urls=["http://127.0.0.1:1/v1"], api="chat"),
        "b": JudgeConfig(model="m", base_urls=["http://127.0.0.1:1/v1"], api="completion"),
    }
    r = rubric([{"id": "final", "text": "Right answer."}, *STEP])
    shown = await explain(r, three_steps(), pool)
    keys = {"final"} | {f"{c}@step{k}" for c in ("progress", "error") for k in range(3)}
    assert set(shown["a"]) == keys and set(shown["b"]) == keys
    assert isinstance(shown["a"]["final"], list) and isinstance(shown["b"]["final"], str)
    assert "Grade step 2 only" in shown["b"]["progress@step1"]
    graded = rubric([*STEP, {"id": "done", "grader": {"type": "regex", "pattern": "Done"}}])
    assert "done" not in (await explain(graded, three_steps(), pool))["a"]  # no judge reads it
    holistic = rubric([{"id": "final", "text": "Right answer."}], combine="implicit")
    assert set(await explain(holistic, three_steps(), {"a": pool["a"]})) == {"a"}
    assert list((await explain(holistic, three_steps(), pool))["a"]) == [
        "_holistic"
    ]  # aggregate.HOLISTIC, as in breakdowns
