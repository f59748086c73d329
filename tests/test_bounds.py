"""What one request may cost: prompts alive at once, planned prompt bytes, inline rubric
size, comparative planning, validate's admission, paced starts, and joined deadlines.

Memory is asserted on counts (rendered ``Prompt`` objects alive while a judge blocks), never
on RSS, and nothing here asserts a duration.
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

from fakejudge import _choices, _distribution, _reply

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import ItemIn, Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.backends import Backend, Endpoint
from rewardsvc.judges.failures import BackendError
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.prompts import Prompt
from rewardsvc.scoring.engine import Engine

# ------------------------------------------------------------------ helpers


def rubric(criteria: int = 4, **overrides: Any) -> Rubric:
    """A rubric of ``criteria`` binary criteria scored by ``primary``."""
    data: dict[str, Any] = {
        "id": "bounds-test",
        "instructions": "Grade the answer.",
        "criteria": [
            {"id": f"c{k}", "text": f"The answer meets point {k}.", "category": "important"}
            for k in range(criteria)
        ],
        "judges": ["primary"],
    }
    data.update(overrides)
    return Rubric.model_validate(data)


def items(count: int, size: int = 1000, tag: str = "") -> list[ItemIn]:
    """``count`` distinct items whose completions are ``size`` characters or more."""
    return [
        ItemIn(f"i{n}", Rollout(prompt="Q?", completion=f"{tag}{n} " + "x" * size))
        for n in range(count)
    ]


class BlockingBackend(Backend):
    """A real backend (its slots, deadlines and retries) whose HTTP post waits for ``go``
    and then answers "yes" as vLLM would; ``posted`` counts the posts started."""

    def __init__(self, name: str, config: JudgeConfig):
        super().__init__(name, config)
        self.go = asyncio.Event()
        self.posted = 0

    async def _post(
        self, shape: Any, body: dict[str, Any], budget: float, endpoint: Endpoint
    ) -> Any:
        self.posted += 1
        try:
            async with asyncio.timeout(budget):
                await self.go.wait()
        except TimeoutError:
            raise BackendError("deadline", "the call's deadline passed") from None
        return _reply(body, True, ["yes"], _distribution(_choices(body), 0.8))


def blocking_judge(concurrency: int) -> tuple[Judge, BlockingBackend]:
    """A real ``Judge`` on a :class:`BlockingBackend` with ``concurrency`` slots."""
    config = JudgeConfig(
        model="m", base_urls=["http://127.0.0.1:1/v1"], max_concurrency=concurrency
    )
    backend = BlockingBackend("primary", config)
    return Judge("primary", config, backend=backend), backend


def prompts_alive() -> int:
    """Rendered judge prompts that exist right now."""
    gc.collect()
    return sum(isinstance(o, Prompt) for o in gc.get_objects())


async def until(condition: Any, seconds: float = 10.0) -> None:
    """Yield to the loop until ``condition()`` holds (a generous bound, not a timing)."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


# ------------------------------------------------------------------ prompts rendered at a turn


async def test_prompts_alive_are_bounded_by_the_judge_concurrency() -> None:
    """400 planned calls, a judge of 4 slots that blocks: at most 4 prompts exist at once
    (on c824dfc every call rendered its prompt before waiting for a slot: 400)."""
    judge, backend = blocking_judge(4)
    engine = Engine({"primary": judge})
    before = prompts_alive()
    scoring = asyncio.create_task(engine.score(rubric(4), items(100)))
    await until(lambda: backend.posted == 4)
    for _ in range(20):  # whatever else was going to start has started
        await asyncio.sleep(0)
    assert prompts_alive() - before <= 4
    backend.go.set()
    batch = await scoring
    assert [r.status for r in batch.items] == ["ok"] * 100
    assert batch.usage.judge_calls == 400
    await engine.aclose()


async def test_a_call_waiting_for_a_turn_past_its_deadline_fails_as_deadline() -> None:
    judge, _ = blocking_judge(1)
    engine = Engine({"primary": judge})
    batch = await engine.score(rubric(2), items(1), deadline=time.monotonic() + 0.3)
    verdicts = [c for j in batch.items[0].judges.values() for c in j.criteria.values()]
    assert [v.error_kind for v in verdicts] == ["deadline", "deadline"]
    assert batch.items[0].reward is None
    await engine.aclose()


# ------------------------------------------------------------------ joined verdicts


class SlowJudge:
    """A duck-typed judge whose calls take ``delay_s`` and honour their own deadline."""

    name = "primary"

    def __init__(self, delay_s: float):
        self.delay_s = delay_s
        self.calls = 0

    def cache_identity(self) -> str:
        return "slow"

    async def score_criterion(
        self,
        rubric: Rubric,
        criterion: Criterion,
        rollout: Rollout,
        *,
        deadline: float | None = None,
    ) -> Verdict:
        self.calls += 1
        budget = (
            self.delay_s if deadline is None else min(self.delay_s, deadline - time.monotonic())
        )
        await asyncio.sleep(max(0.0, budget))
        if deadline is not None and time.monotonic() >= deadline:
            return Verdict.failed("deadline: the call's deadline passed", kind="deadline")
        return Verdict(score=1.0)

    async def score_holistic(
        self, rubric: Rubric, rollout: Rollout, *, deadline: float | None = None
    ) -> Verdict:
        raise AssertionError("not used")

    async def aclose(self) -> None:
        return None


async def test_a_request_joining_an_inflight_verdict_keeps_its_own_deadline() -> None:
    """A second request (deadline far away) joins the call of a first one whose deadline is
    short: it must get a verdict, not the first request's deadline failure."""
    judge = SlowJudge(delay_s=0.6)
    engine = Engine({"primary": judge})
    same = items(1)
    first = asyncio.create_task(engine.score(rubric(1), same, deadline=time.monotonic() + 0.2))
    await asyncio.sleep(0.05)  # the first request's call is in flight
    second = await engine.score(rubric(1), same, deadline=time.monotonic() + 30)
    early = await first
    assert early.items[0].status == "judge_error"  # its own deadline: right for it
    assert second.items[0].status == "ok", second.items[0]
    assert second.items[0].reward is not None
    await engine.aclose()
