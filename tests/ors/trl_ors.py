"""TRL's ORS integration (``trl.experimental.openreward``, trl 1.16.0) against rewardsvc.

Usage: ``python trl_ors.py URL ENV INDEX ANSWER OUT``. Builds ``OpenRewardSpec(URL)``, reads
its ``train_dataset``, makes one environment with its ``environment_factory`` (as GRPO does
per rollout), resets it on task INDEX, calls the bound answer tool and writes the prompt,
the tool's text and what ``spec.reward_funcs`` returns to OUT as JSON.
"""

from __future__ import annotations

import json
import os
import sys

from trl.experimental.openreward import OpenRewardSpec


def main() -> None:
    url, env_name, index, answer, out = sys.argv[1:]
    os.environ["OPENREWARD_SESSION_URL"] = url  # a self-hosted ORS server's own URL
    spec = OpenRewardSpec(url, env_name=env_name)
    rows = spec.train_dataset.to_dict()
    env = spec.environment_factory()
    prompt = env.reset(task_index=int(index))
    text = env.answer(answer=answer)  # the tool bound from the environment's tool list
    rewards = spec.reward_funcs(environments=[env])
    env._close()
    found = {"task_index": rows["task_index"], "prompt": prompt, "text": text,
             "rewards": rewards, "finished": env.finished}  # fmt: skip
    with open(out, "w") as f:
        json.dump(found, f)


if __name__ == "__main__":
    main()
