"""Runs in the nemo-rl venv (torch, ray): NeMo-RL's reward path, as its source has it, takes
rewards from ``RewardsvcEnvironment`` running as a Ray actor.

NeMo-RL has no installable release (the PyPI name ``nemo-rl`` is a 0.0.0 placeholder and its
dependencies are GPU builds), so its contract is pinned to NVIDIA-NeMo/RL commit
7ea279abfbeb698b092856d0dab61e7cf39bc909 (2026-08-22) and played here:

* ``nemo_rl/experience/rollouts.py::calculate_rewards``: samples grouped by ``task_name``, one
  ``task_to_env[task].step.remote(message_logs, extra_env_info)`` per task (message logs cut
  to ``role`` and ``content``), ``ray.get`` on all of them with no timeout, each result
  unpacked by position into (observations, metadata, next_stop_strings, rewards,
  terminateds, answers); dict rewards gathered per name and stacked, tensor rewards stacked.
* ``run_multi_turn_rollout``: ``total_reward += sum(rewards.values())`` for dict rewards
  (each also kept as a batch column), else ``+= rewards``; the environment's observation is
  appended to the message log (logged per sample in ``train_data_step*.jsonl``).
* ``nemo_rl/algorithms/utils.py::get_gdpo_reward_component_keys``: the batch keys starting
  ``reward/``, sorted: the components GDPO normalizes.

argv: URL RUBRIC OUT.json. Then ``OUTAGE?``: the test makes the judges unreachable while a
second batch is scored.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import ray
import torch

from rewardsvc_client.nemo_rl import RewardsvcEnvironment

QUESTION = "What is 2 + 3?"


def sample(answer: str, ground_truth: str | None) -> dict[str, Any]:
    log = [
        {"role": "user", "content": QUESTION, "token_ids": torch.tensor([1, 2])},
        {"role": "assistant", "content": answer, "token_ids": torch.tensor([3])},
    ]
    info = {"ground_truth": ground_truth} if ground_truth is not None else {}
    return {"message_log": log, "extra_env_info": info, "task_name": "rewardsvc"}


BEFORE = [sample("5", "5"), sample("It is 7.", "5"), sample("5", None)]
DURING = [sample("Five.", "5"), sample("It is 9.", "5")]


def calculate_rewards(batch: list[dict[str, Any]], task_to_env: dict[str, Any]) -> Any:
    """NeMo-RL's calculate_rewards at the pinned commit (see the module docstring)."""
    to_env = [[{k: m[k] for k in ("role", "content")} for m in s["message_log"]] for s in batch]
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(batch):
        groups.setdefault(s["task_name"], []).append(i)
    futures = {
        task_to_env[task].step.remote([to_env[i] for i in idx],
                                      [batch[i]["extra_env_info"] for i in idx]): idx
        for task, idx in groups.items()
    }  # fmt: skip
    results = ray.get(list(futures))
    order, scalars, named, observations = [], [], {}, []
    for idx, result in zip(futures.values(), results, strict=True):
        obs, _metadata, _stops, rewards, _terminateds, _answers = result
        for j, i in enumerate(idx):
            order.append(i)
            if isinstance(rewards, dict):
                for name, values in rewards.items():
                    named.setdefault(name, []).append(values[j])
            else:
                scalars.append(rewards[j])
            observations.append(obs[j])
    ranks = sorted(range(len(order)), key=lambda k: order[k])
    if named:
        rewards = {n: torch.stack([v[k] for k in ranks]) for n, v in named.items()}
    else:
        rewards = torch.stack([scalars[k] for k in ranks])
    return rewards, [observations[k] for k in ranks], results[0][1]


def rollout(batch: list[dict[str, Any]], task_to_env: dict[str, Any]) -> dict[str, Any]:
    """One turn of run_multi_turn_rollout: the total reward and the per-name columns."""
    rewards, observations, metadata = calculate_rewards(batch, task_to_env)
    total = torch.zeros(len(batch), dtype=torch.float32)
    columns = {}
    if isinstance(rewards, dict):
        total += sum(rewards.values())
        columns = {name: r.tolist() for name, r in rewards.items()}
    else:
        total += rewards
    gdpo = sorted(k for k in columns if k.startswith("reward/"))
    return {
        "total_reward": total.tolist(),
        "columns": columns,
        "gdpo_components": gdpo,
        "observations": [o["content"] for o in observations],
        "metadata": metadata,
    }


def main() -> None:
    url, rubric, out = sys.argv[1:4]
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    cfg = {"url": url, "rubric": rubric, "run": "nemo-rl-test", "judge_error_wait": 120}
    scalar = {"rewardsvc": ray.remote(RewardsvcEnvironment).remote(cfg)}
    named = {
        "rewardsvc": ray.remote(RewardsvcEnvironment).remote(
            {**cfg, "objectives": True, "scalar_key": "reward/rewardsvc"}
        )
    }
    before = {"scalar": rollout(BEFORE, scalar), "dict": rollout(BEFORE, named)}
    print("OUTAGE?", flush=True)
    sys.stdin.readline()
    during = {"scalar": rollout(DURING, scalar)}
    _, metrics = ray.get(scalar["rewardsvc"].global_post_process_and_metrics.remote(None))
    with open(out, "w") as f:
        json.dump({"before": before, "during": during, "metrics": metrics}, f)
    ray.shutdown()


if __name__ == "__main__":
    main()
