"""Runs in the verifiers 0.4 venv: a v1 task whose config plugs the rewardsvc judge by id.

argv: URL RUBRIC OUT.json. Scores CASES, says ``OUTAGE?`` and waits for a line on stdin
(the test then makes the judges unreachable for a while), scores CASES again, and writes
both to OUT.json. For each (completion, answer) case a Task is built with
``TaskConfig(judges=[{"id": "rewardsvc_judge", ...}])`` (verifiers resolves the id to the
installed module and its config class), a Trace holds the user prompt and the sampled
assistant reply, and verifiers' own ``Task.score`` runs the plugged judge. The rewards
verifiers recorded, or the error it raised, are written to OUT.json.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from verifiers.v1 import AgentConfig, Task, TaskConfig, TaskData
from verifiers.v1.graph import MessageNode
from verifiers.v1.trace import AgentInfo, Trace, TraceTask
from verifiers.v1.types import AssistantMessage, UserMessage

QUESTION = "What is 2 + 3?"


class QATask(TaskData):
    answer: str = ""


async def score_one(url: str, rubric: str, completion: str, answer: str) -> dict[str, Any]:
    config = TaskConfig(
        judges=[
            {
                "id": "rewardsvc_judge",
                "url": url,
                "rubric": rubric,
                "answer_field": "answer",
                "view": "last_reply",
                "run": "verifiers-test",
                "judge_error_wait": 60.0,
            }
        ]
    )
    data = QATask(prompt=[UserMessage(content=QUESTION)], answer=answer)
    task: Task = Task(data, config)
    trace = Trace(
        task=TraceTask(type="QATask", data=data),
        agent=AgentInfo(config=AgentConfig()),
        nodes=[
            MessageNode(message=UserMessage(content=QUESTION)),
            MessageNode(parent=0, message=AssistantMessage(content=completion), sampled=True),
        ],
    )
    try:
        await task.score(trace)
    except Exception as exc:  # verifiers errors the rollout: report what it raised
        return {"error": f"{type(exc).__name__}: {exc}", "rewards": None}
    rewards = {k: (None if v is None else v.score) for k, v in trace.rewards.items()}
    return {"error": None, "rewards": rewards, "info": trace.info.get("rewardsvc")}


# (completion, answer): right, wrong, and no answer (the rubric needs one: rejected). The
# second batch has other completions, so that its verdicts cannot come from the cache.
CASES = [("5", "5"), ("It is 7.", "5"), ("5", "")]
CASES_DURING = [("Five.", "5"), ("It is 9.", "5")]


async def main() -> None:
    url, rubric, out = sys.argv[1:4]
    before = await asyncio.gather(*(score_one(url, rubric, c, a) for c, a in CASES))
    print("OUTAGE?", flush=True)
    sys.stdin.readline()
    during = await asyncio.gather(*(score_one(url, rubric, c, a) for c, a in CASES_DURING))
    with open(out, "w") as f:
        json.dump({"before": before, "during": during}, f)


if __name__ == "__main__":
    asyncio.run(main())
