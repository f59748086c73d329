"""A process reward model against a real vLLM CPU server: one call per trajectory, one
score per step (and the item's score, its last step's, from the same call).

``smollm2-prm`` is SmolLM2 on the pooling runner with the same head as ``smollm2-rm`` and
``--pooler-config`` task ``token_classify``, STEP pooling at ``<file_sep>`` (token 5): vLLM
returns one row per separator. The steps of a trajectory go in one call, each followed by
the separator; a separator written by the policy is broken first, so it cannot add steps.
"""

from __future__ import annotations

import json
import math
from typing import Any

import httpx
import pytest
from fakejudge import RecordingObserver

from rewardsvc.application.items import read_item
from rewardsvc.application.targets import score_batch
from rewardsvc.core.aggregate import HOLISTIC
from rewardsvc.core.pool import JudgeConfig, JudgePool, RewardModelSettings
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.trajectory import step_key
from rewardsvc.judges.asks import AllSteps, WholeItem
from rewardsvc.judges.identity import defuser_for
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.judges.reward_model import step_conversation
from rewardsvc.scoring.engine import Engine

pytestmark = pytest.mark.judges

PRM_URL = "http://127.0.0.1:8105/v1"
SEPARATOR = "<file_sep>"


def prm_config() -> JudgeConfig:
    return JudgeConfig(
        model="smollm2-prm",
        base_urls=[PRM_URL],
        method="reward_model",
        max_context_tokens=2048,
        reward_model=RewardModelSettings(step_separator=SEPARATOR),
    )


def trajectory(steps: int, poison: bool = False) -> dict[str, Any]:
    """An item whose completion has ``steps`` assistant steps (tool calls, then an answer);
    ``poison``: the policy writes the separator into its steps' text."""
    out: list[dict[str, Any]] = []
    for n in range(steps - 1):
        call = {"name": "add", "arguments": json.dumps({"a": n, "b": 1})}
        out.append({"role": "assistant", "tool_calls": [{"id": f"c{n}", "function": call}]})
        text = f"{n + 1}{SEPARATOR}{SEPARATOR}" if poison else f"{n + 1}"
        out.append({"role": "tool", "tool_call_id": f"c{n}", "content": text})
    answer = f"The sum is {steps}.{SEPARATOR}" if poison else f"The sum is {steps}."
    out.append({"role": "assistant", "content": answer})
    return {"id": f"t{steps}{'p' if poison else ''}", "prompt": "Add up.", "completion": out}


def rollout_of(item: dict[str, Any]) -> Rollout:
    read = read_item(0, item)
    assert read.rollout is not None
    return read.rollout


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


async def test_one_call_per_trajectory_one_score_per_step(prm_server: None) -> None:
    observer = RecordingObserver()
    judges = build_judges(JudgePool(judges={"prm": prm_config()}), observer)
    rubric = Rubric.model_validate(
        {
            "id": "prm",
            "criteria": [
                {"id": "final", "text": "The answer is right."},
                {"id": "progress", "text": "The step helps.", "scope": "step"},
            ],
            "judges": ["prm"],
            "step_combine": "min",
        }
    )
    batch = [trajectory(3), trajectory(2), trajectory(3, poison=True)]
    engine = Engine(judges)
    try:
        response = await score_batch(engine, rubric, batch)
    finally:
        await engine.aclose()
    # One call per trajectory, for its steps and the item (scored as its last step).
    assert [c[0] for c in observer.calls] == ["prm"] * len(batch)
    assert response.usage.judge_calls == len(batch)
    for item, result in zip(batch, response.results, strict=True):
        rollout = rollout_of(item)
        assert result.status == "ok", result.error
        assert result.steps is not None and len(result.steps) == rollout.step_count()
        # Each step's reward is sigmoid of the server's row at that step's separator.
        messages = step_conversation(rollout, SEPARATOR, defuser_for(prm_config()))
        body = {"model": "smollm2-prm", "messages": messages, "task": "token_classify"}
        body["use_activation"] = False
        url = PRM_URL.removesuffix("/v1") + "/pooling"
        rows = httpx.post(url, json=body, timeout=60).json()["data"][0]["data"]
        assert len(rows) == rollout.step_count()  # the policy's separators were broken
        for step, row in zip(result.steps, rows, strict=True):
            assert step.reward == pytest.approx(sigmoid(row[0]), abs=1e-6)
        last, worst = result.steps[-1].reward, min(s.reward for s in result.steps if s.reward)
        assert result.judges["prm"].score == pytest.approx(last)
        # Equal weights of the episode and step criteria: the mean of outcome and process.
        assert result.reward == pytest.approx((last + worst) / 2)


async def test_a_step_score_depends_only_on_the_trajectory_up_to_it(prm_server: None) -> None:
    judge = Judge("prm", prm_config())
    try:
        long = await judge.ask(AllSteps.of(rollout_of(trajectory(3))))
        short = await judge.ask(AllSteps.of(rollout_of(trajectory(3)).at_step(0)))
        item = await judge.ask(WholeItem(rollout_of(trajectory(3))))
    finally:
        await judge.aclose()
    assert list(long) == [step_key(HOLISTIC, k) for k in range(3)]
    assert all(v.ok and v.variance == 0.0 for v in long.values())
    # Causal attention: step 0's score is the same with or without the later steps, which
    # is why each step's verdict is cached under the trajectory up to it.
    assert short[step_key(HOLISTIC, 0)].score == pytest.approx(
        long[step_key(HOLISTIC, 0)].score, abs=1e-5
    )
    # A PRM scores a whole item as its last step.
    assert item.score == pytest.approx(long[step_key(HOLISTIC, 2)].score, abs=1e-5)
