"""Runs in the skyrl-gym 0.4.0 venv: SkyRL's own env registry makes ``RewardsvcTextEnv``
(``skyrl_gym.register`` + ``skyrl_gym.make(env_class, env_config=..., extras=...)``, as
SkyRL's generator does) and episodes run as its agent loop runs them: ``init`` then ``step``
per turn, each in a thread executor, reading ``reward``, ``done`` and ``metadata``, then
``get_metrics`` and ``close``.

argv: URL RUBRIC OUT.json. First: two one-turn episodes (episode level), a two-turn episode
with turn-level rewards. Then ``OUTAGE?``: the test makes the judges unreachable while two
more one-turn episodes step.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv

QUESTION = "What is 2 + 3?"
POOL = ThreadPoolExecutor(8)


async def episode(config: dict[str, Any], actions: list[str], **extras: Any) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    env = skyrl_gym.make("rewardsvc", env_config=config, extras={
        "reward_spec": {"ground_truth": "5"}, **extras
    })  # fmt: skip
    assert isinstance(env, BaseTextEnv)
    await loop.run_in_executor(POOL, env.init, [{"role": "user", "content": QUESTION}])
    steps = []
    for action in actions:
        out = await loop.run_in_executor(POOL, env.step, action)
        steps.append({"reward": out["reward"], "done": out["done"], "metadata": out["metadata"],
                      "observations": out["observations"]})  # fmt: skip
        if out["done"]:
            break
    metrics = env.get_metrics()
    await loop.run_in_executor(POOL, env.close)
    return {"actions": actions, "steps": steps, "metrics": metrics}


async def main() -> None:
    url, rubric, out = sys.argv[1:4]
    skyrl_gym.register(id="rewardsvc", entry_point="rewardsvc_client.skyrl:RewardsvcTextEnv")
    config = {"url": url, "rubric": rubric, "run": "skyrl-test"}
    before = await asyncio.gather(
        episode(config, ["5"]),
        episode(config, ["It is 7."]),
        episode(config, ["It is 6.", "5"], max_turns=2, turn_rewards=True,
                followups=["Check it again."]),
    )  # fmt: skip
    print("OUTAGE?", flush=True)
    sys.stdin.readline()
    nonce = uuid.uuid4().hex[:6]  # fresh answers: a persistent service cache would skip the judges
    during = await asyncio.gather(
        episode(config, [f"Five. (#{nonce})"]), episode(config, [f"It is 9. (#{nonce})"])
    )
    with open(out, "w") as f:
        json.dump({"before": before, "during": during}, f)


if __name__ == "__main__":
    asyncio.run(main())
