"""The SkyRL, AReaL and TRL-async adapters pickle and keep their contracts without a service
(the live paths are in test_trainers_skyrl_areal_trl.py)."""

from __future__ import annotations

import inspect
import math
import pickle

import pytest

from rewardsvc_client import DeadlineExceededError
from rewardsvc_client.areal import make_reward_fn, reward_is_real
from rewardsvc_client.skyrl import RewardsvcTextEnv
from rewardsvc_client.trl_async import async_reward_func, environment_factory

DEAD = "http://127.0.0.1:9"  # nothing listens: every request fails


def test_areal_reward_fn_pickles_and_raises_within_its_budget() -> None:
    reward_fn = pickle.loads(pickle.dumps(make_reward_fn(DEAD, "r", budget=1.5)))
    # No answer within the budget (nothing listens): the deadline error, never a reward.
    with pytest.raises(DeadlineExceededError):
        reward_fn("p", "c", [1], [2], answer="5")
    nan = make_reward_fn(DEAD, "r", budget=1.0, on_failure="nan")("p", "c", [1], [2])
    assert math.isnan(nan)
    assert reward_is_real({"rewards": 0.5}) and not reward_is_real({"rewards": math.nan})


async def test_trl_async_pieces_pickle_and_mask_a_failed_request() -> None:
    reward = pickle.loads(pickle.dumps(async_reward_func(DEAD, "r", retries=0)))
    assert inspect.iscoroutinefunction(reward.__call__)  # TRL's is_async_callable
    assert await reward(prompts=["p"], completions=["c"]) == [None]
    env = pickle.loads(pickle.dumps(environment_factory(DEAD, "r")))()
    tools = [n for n, _ in inspect.getmembers(type(env), inspect.isfunction)]
    assert [t for t in tools if t not in ("reset", "get_reward") and not t.startswith("_")] == [
        "submit_answer"
    ]  # the one tool TRL exposes
    env.reset(prompt="p", answer="5")
    assert await env.get_reward() is None  # nothing submitted
    env.submit_answer("5")
    assert await env.get_reward() is None and env.verdict["status"] == "request_failed"


def test_skyrl_env_flags_its_stand_in() -> None:
    env = RewardsvcTextEnv({"url": DEAD, "rubric": "r", "judge_error_wait": 0}, {})
    env.init([{"role": "user", "content": "q"}])
    out = env.step("a")
    assert out["done"] and out["reward"] == 0.0
    assert out["metadata"]["rewardsvc"]["valid"] is False
    assert env.get_metrics()["rewardsvc_valid"] == 0.0
