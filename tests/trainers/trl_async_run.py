"""Runs in the TRL 1.16.0 venv: AsyncGRPOTrainer's rollout process scores groups with the
rewardsvc reward function and environment.

argv: URL RUBRIC OUT.json. As ``AsyncRolloutWorker.start`` does, the reward functions and the
environment factory are checked with ``pickle.dumps`` and sent to a child started by
multiprocessing's spawn context through TRL's own ``_child_main`` (which hides CUDA and builds
the loop); the loop class is TRL's ``_AsyncRolloutLoop`` with generation replaced (no vLLM
server here): each rollout's environment is made by the factory, reset with the row, given
the completion through its tool and asked ``get_reward()``, then TRL's own ``_score_group``
turns the rewards (None: NaN) into samples with advantages. One group before, then
``OUTAGE?``: a second group while the judges are unreachable.
"""

from __future__ import annotations

import asyncio
import json
import math
import multiprocessing as mp
import pickle
import sys
import uuid
from typing import Any

from trl.experimental.async_grpo.async_rollout_worker import (
    RolloutGroup,
    TrainingSequence,
    _AsyncRolloutLoop,
    _child_main,
)
from trl.trainer.utils import get_callable_name

from rewardsvc_client.trl_async import async_reward_func, environment_factory

QUESTION = [{"role": "user", "content": "What is 2 + 3?"}]
BEFORE = ["5", "It is 7.", "5, I think."]
# Fresh answers every run: a service with a persistent cache would answer these from it and
# never meet the outage.
NONCE = uuid.uuid4().hex[:6]
DURING = [f"Five. (#{NONCE})", f"It is 9. (#{NONCE})", f"5! (#{NONCE})"]


class ScoringLoop(_AsyncRolloutLoop):
    """TRL's rollout loop with its scoring as is and generation replaced by given answers."""

    def __init__(self, *, reward_funcs: list[Any], environment_factory: Any, go: Any,
                 rollout_buffer: Any, **_: Any) -> None:  # fmt: skip
        self.reward_funcs = reward_funcs
        self.environment_factory = environment_factory
        self._env_reward_types = [type(environment_factory())]
        self.reward_func_names = [get_callable_name(f) for f in reward_funcs] + [
            t.__name__ for t in self._env_reward_types
        ]
        self._provides_rollout_reward = False
        self.rollout_buffer = rollout_buffer
        self.go = go

    async def group(self, answers: list[str], group_id: int) -> list[dict[str, Any]]:
        n = len(answers)
        env_rewards = []
        for answer in answers:  # what _generate_loop does per finished rollout
            env = self.environment_factory()
            env.reset(prompt=QUESTION, answer="5")
            env.submit_answer(answer)
            env_rewards.append((type(env), await env.get_reward()))
        group = RolloutGroup(
            prompts=[QUESTION] * n, reward_kwargs={"answer": ["5"] * n},
            completions=[[{"role": "assistant", "content": a}] for a in answers],
            completions_ids=[[1]] * n,
            completions_sequences=[[TrainingSequence([1, 2], [0, 1], [0.0, -0.5], str(i))]
                                   for i in range(n)],
            tool_call_counts=[1] * n, tool_failure_counts=[0] * n, model_version=0,
            group_id=group_id, env_rewards=env_rewards, rollout_rewards=[None] * n,
        )  # fmt: skip
        samples = await self._score_group(group)
        return [
            {"answer": a, "advantage": s.advantage, "metrics": s.metrics}
            for a, s in zip(answers, samples, strict=True)
        ]

    def run(self) -> None:
        async def both() -> None:
            self.rollout_buffer.put(await self.group(BEFORE, 0))
            await asyncio.get_running_loop().run_in_executor(None, self.go.wait)
            self.rollout_buffer.put(await self.group(DURING, 1))

        asyncio.run(both())


def plain(value: Any) -> Any:
    """NaN as None, for JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def main() -> None:
    url, rubric, out = sys.argv[1:4]
    loop_kwargs = {
        "reward_funcs": [async_reward_func(url, rubric, reference_column="answer",
                                           run="trl-async-test")],
        "environment_factory": environment_factory(url, rubric, reference_key="answer"),
    }  # fmt: skip
    pickle.dumps(loop_kwargs)  # AsyncRolloutWorker.start's check
    ctx = mp.get_context("spawn")
    samples, metrics, errors = ctx.Queue(), ctx.Queue(), ctx.Queue()
    go, stop, ready, failed = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Event()
    version, heartbeat = ctx.Value("i", 0), ctx.Value("d", 0.0)  # kept alive until the end
    child_args = (ScoringLoop, {**loop_kwargs, "go": go}, samples, version, stop, ready,
                  heartbeat, failed, errors, metrics)  # fmt: skip
    process = ctx.Process(target=_child_main, args=child_args)
    process.start()
    before = samples.get(timeout=600)
    print("OUTAGE?", flush=True)
    sys.stdin.readline()
    go.set()
    during = samples.get(timeout=600)
    process.join(60)
    with open(out, "w") as f:
        json.dump(plain({"before": before, "during": during, "names": [
            get_callable_name(loop_kwargs["reward_funcs"][0]), "RewardsvcEnvironment"
        ], "exitcode": process.exitcode}), f)  # fmt: skip


if __name__ == "__main__":
    main()
