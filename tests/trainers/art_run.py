"""Runs in the openpipe-art venv: ART's own ``gather_trajectory_groups`` scores
``art.TrajectoryGroup`` objects with the rewardsvc group scorer as its ``after_each``.

argv: URL RUBRIC OUT.json. One group of trajectories per batch (chat messages; the reference
in each trajectory's metadata). Then ``OUTAGE?``: the test makes the judges unreachable
while a second group is gathered.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import art

from rewardsvc_client.art import make_group_scorer

QUESTION = "What is 2 + 3?"
ANSWERS = ["5", "It is 7.", "5, I think."]
ANSWERS_DURING = ["Five.", "It is 8."]


async def rollout(answer: str) -> art.Trajectory:
    return art.Trajectory(
        messages_and_choices=[
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": answer},
        ],
        metadata={"reference": "5"},
        reward=0.0,
    )


async def group(answers: list[str]) -> art.TrajectoryGroup:
    return art.TrajectoryGroup(await asyncio.gather(*(rollout(a) for a in answers)))


async def gather(url: str, rubric: str, answers: list[str]) -> list[dict[str, Any]]:
    score = make_group_scorer(url, rubric, run="art-test")
    groups = await art.gather_trajectory_groups([group(answers)], pbar_desc=None, after_each=score)
    return [
        {
            "answers": [t.messages_and_choices[-1]["content"] for t in g.trajectories],
            "rewards": [t.reward for t in g.trajectories],
            "valid": [t.metrics.get("rewardsvc_valid") for t in g.trajectories],
            "degraded": [t.metrics.get("rewardsvc_degraded") for t in g.trajectories],
            "exceptions": [e.message for e in g.exceptions],
        }
        for g in groups
    ]


async def main() -> None:
    url, rubric, out = sys.argv[1:4]
    before = await gather(url, rubric, ANSWERS)
    print("OUTAGE?", flush=True)
    sys.stdin.readline()
    during = await gather(url, rubric, ANSWERS_DURING)
    with open(out, "w") as f:
        json.dump({"before": before, "during": during}, f)


if __name__ == "__main__":
    asyncio.run(main())
