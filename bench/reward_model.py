"""Reward-model calls vs single-token logprob judge calls, on the same CPU, same weights.

``smollm2-rm`` (cpujudge.sh's optional judge: SmolLM2 on vLLM's pooling runner,
``--convert classify``) and the default SmolLM2 chat judge run the same 135M weights on the
same CPU half. Each round scores fresh items (a round tag in the prompt, so neither prefix
cache holds them) with ``Judge.ask(WholeItem)`` on the RM and ``Judge.ask(CriterionOnItem)``
on the chat judge (method ``logprob``: one constrained token), ``--concurrency`` calls in flight;
the order alternates between rounds and the median round of each is reported. An RM call is
one prefill and no decode, and it reads the conversation without a rubric prompt around it.

    .venv/bin/python -m bench.reward_model [--items 32] [--repeats 3] [--concurrency 8]

Needs ``deploy/cpu-judge/cpujudge.sh start smollm2 smollm2-rm``. Prints calls/s and the
prompt tokens per call of every round, then the median rates.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.asks import CriterionOnItem, WholeItem
from rewardsvc.judges.judge import Judge

RUBRIC = Rubric.model_validate(
    {
        "id": "bench-rm",
        "criteria": [{"id": "correct", "text": "The answer is correct."}],
        "judges": ["chat"],
    }
)
CHAT = JudgeConfig(model="smollm2-135m-instruct", base_urls=["http://127.0.0.1:8101/v1"])
RM = JudgeConfig(model="smollm2-rm", base_urls=["http://127.0.0.1:8104/v1"], method="reward_model")


def rollouts(n: int, tag: str) -> list[Rollout]:
    """``n`` sums with right or wrong answers; ``tag`` makes the round's prompts its own."""
    return [
        Rollout(f"[{tag}] What is {k} + {k + 3}?", f"{k} + {k + 3} = {2 * k + 3 + k % 2}.")
        for k in range(n)
    ]


async def timed(
    score: Callable[[Rollout], Awaitable[Verdict]], items: list[Rollout], concurrency: int
) -> tuple[float, int, float]:
    """Calls per second over ``items`` with ``concurrency`` in flight, the failures, and the
    mean prompt tokens per call (vLLM's usage)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(r: Rollout) -> Verdict:
        async with gate:
            return await score(r)

    start = time.perf_counter()
    verdicts = await asyncio.gather(*(one(r) for r in items))
    rate = len(items) / (time.perf_counter() - start)
    tokens = statistics.mean(v.prompt_tokens for v in verdicts)
    return rate, sum(not v.ok for v in verdicts), tokens


async def main(items: int, repeats: int, concurrency: int) -> None:
    chat, rm = Judge("chat", CHAT), Judge("rm", RM)
    criterion = RUBRIC.criteria[0]
    contenders: dict[str, Callable[[Rollout], Awaitable[Verdict]]] = {
        "rm score_item": lambda r: rm.ask(WholeItem(r)),
        "logprob score_criterion": lambda r: chat.ask(CriterionOnItem(RUBRIC, criterion, r)),
    }
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    try:
        for name, score in contenders.items():  # warm-up
            await timed(score, rollouts(4, f"warm-{name}"), concurrency)
        for round_ in range(repeats):
            order = list(contenders) if round_ % 2 == 0 else list(reversed(contenders))
            for name in order:
                rate, failed, tokens = await timed(
                    contenders[name], rollouts(items, f"r{round_}-{name}"), concurrency
                )
                rates[name].append(rate)
                print(
                    f"round {round_} {name}: {rate:.1f} calls/s, {tokens:.0f} prompt tokens "
                    f"per call ({failed} failed)"
                )
    finally:
        await chat.aclose()
        await rm.aclose()
    for name, got in rates.items():
        print(f"median {name}: {statistics.median(got):.1f} calls/s over {repeats} rounds")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(main(args.items, args.repeats, args.concurrency))
