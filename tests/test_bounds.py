"""What one request may cost and how long it may hold the loop: prompts alive at once,
comparative planning and fencing, admission's count of calls, paced starts and long
batches, and the deadline of a joined verdict (the HTTP limits are in ``test_guards``).

Memory is asserted on counts (rendered ``Prompt`` objects alive while a judge blocks), never
on RSS, and nothing here asserts a duration.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from typing import Any

import pytest
from fakejudge import _choices, _distribution, _reply
from test_api_support import wait_for
from test_engine import StubJudge, constant

from rewardsvc.core import comparative as cmp
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import ItemIn, Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import comparative, prompts
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.backends import Backend
from rewardsvc.judges.failures import BackendError
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.prompts import Prompt
from rewardsvc.scoring import group_calls
from rewardsvc.scoring import groups as groups_module
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import plan_groups, score_groups
from rewardsvc.server.guards import Turns
from rewardsvc.storage.cache import VerdictCache

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
    """A real backend (its slots, deadlines and retries) whose attempt (the POST to an
    endpoint) waits for ``go`` and then answers the first allowed choice as vLLM would;
    ``posted`` counts the attempts started."""

    def __init__(self, name: str, config: JudgeConfig):
        super().__init__(name, config)
        self.go = asyncio.Event()
        self.posted = 0

    async def _send_to(self, shape: Any, body: dict[str, Any], budget: float, *routed: Any) -> Any:
        self.posted += 1
        try:
            async with asyncio.timeout(budget):
                await self.go.wait()
        except TimeoutError:
            raise BackendError("deadline", "the call's deadline passed") from None
        choices = _choices(body)
        return _reply(body, True, choices[:1], _distribution(choices, 0.8))


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


# ------------------------------------------------------------------ prompts rendered at a turn


async def test_prompts_alive_are_bounded_by_the_judge_concurrency() -> None:
    """400 planned calls, a judge of 4 slots that blocks: at most 4 prompts exist at once
    (on c824dfc every call rendered its prompt before waiting for a slot: 400)."""
    judge, backend = blocking_judge(4)
    engine = Engine({"primary": judge})
    before = prompts_alive()
    scoring = asyncio.create_task(engine.score(rubric(4), items(100)))
    await wait_for(lambda: backend.posted == 4)
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


class SlowJudge(StubJudge):
    """A stub judge whose calls take ``delay_s`` and honour their own deadline."""

    def __init__(self, delay_s: float):
        super().__init__("primary", constant(1.0))
        self.delay_s = delay_s

    async def ask(self, question: Any, *, deadline: float | None = None) -> Verdict:
        assert isinstance(question, CriterionOnItem)
        budget = self.delay_s if deadline is None else deadline - time.monotonic()
        await asyncio.sleep(max(0.0, min(self.delay_s, budget)))
        if deadline is not None and time.monotonic() >= deadline:
            return Verdict.failed("deadline: the call's deadline passed", kind="deadline")
        return await super().ask(question, deadline=deadline)


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


# ------------------------------------------------------------------ groups


def group_judges(concurrency: int) -> tuple[dict[str, Judge], BlockingBackend]:
    judge, backend = blocking_judge(concurrency)
    return {"primary": judge}, backend


async def test_group_prompts_alive_are_bounded_and_blocks_are_fenced_once_per_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pairwise all_pairs group of 12 (132 calls) on a judge of 3 slots that blocks: at
    most 3 prompts exist at once, and each text is sanitized once for the group. On c824dfc
    all 132 prompts were rendered at planning, each sanitizing its 3 texts (396 times)."""
    sanitized = []
    real = comparative.untrusted

    def counting(text: str, label: str, defuser: Any) -> str:
        sanitized.append(text)
        return real(text, label, defuser)

    monkeypatch.setattr(comparative, "untrusted", counting)
    judges, backend = group_judges(3)
    group = GroupIn("g", tuple(Rollout("Q?", f"answer {n} " + "w" * 2000) for n in range(12)))
    options = GroupOptions(method="pairwise", tournament="all_pairs")
    before = prompts_alive()
    scoring = asyncio.create_task(score_groups(judges, rubric(1), [group], options))
    await wait_for(lambda: backend.posted == 3)
    for _ in range(20):
        await asyncio.sleep(0)
    assert prompts_alive() - before <= 3
    assert len(sanitized) == 13  # the prompt and each completion, once
    backend.go.set()
    batch = await scoring
    assert batch.results[0].status == "ok"
    assert batch.usage.judge_calls == 132
    for judge in judges.values():
        await judge.aclose()


async def test_planned_work_counts_only_the_groups_that_will_be_scored() -> None:
    """Admission counts what is planned: a rejected group (too many for one listwise call,
    or a single completion) costs nothing; c824dfc counted its orders."""
    rub = rubric(2, judges=["primary", "secondary"])
    judges = {"primary": blocking_judge(1)[0], "secondary": blocking_judge(1)[0]}
    ok = GroupIn("ok", tuple(Rollout("Q?", f"answer {n}") for n in range(4)))
    huge = GroupIn("huge", tuple(Rollout("Q?", f"answer {n}") for n in range(cmp.MAX_LISTWISE + 1)))
    alone = GroupIn("alone", (Rollout("Q?", "only"),))
    planned = await plan_groups(judges, rub, [ok, huge, alone], GroupOptions(orders=2))
    calls, size = planned.cost.calls, planned.cost.prompt_bytes
    assert calls == 2 * 2 * 2  # orders x judges x criteria, for the one group scored
    assert size >= calls * prompts.CALL_OVERHEAD_BYTES
    pairwise = GroupOptions(method="pairwise", tournament="all_pairs")
    assert (await plan_groups(judges, rub, [ok], pairwise)).cost.calls == 6 * 2 * 2 * 2
    for judge in judges.values():
        await judge.aclose()


async def test_group_planning_and_assembly_run_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On c824dfc planning (every prompt of the request) ran on the loop: 46 s of blocked
    loop for a 1.6 MB all_pairs request."""
    where: list[str] = []
    real_plan, real_assemble = group_calls._plan_group, groups_module.group_reward

    def plan(*args: Any, **kwargs: Any) -> Any:
        where.append(threading.current_thread().name)
        return real_plan(*args, **kwargs)

    def assemble(*args: Any, **kwargs: Any) -> Any:
        where.append(threading.current_thread().name)
        return real_assemble(*args, **kwargs)

    monkeypatch.setattr(group_calls, "_plan_group", plan)
    monkeypatch.setattr(groups_module, "group_reward", assemble)
    judges, backend = group_judges(4)
    backend.go.set()
    group = GroupIn("g", tuple(Rollout("Q?", f"answer {n}") for n in range(3)))
    batch = await score_groups(judges, rubric(1), [group])
    assert batch.results[0].status == "ok"
    assert len(where) == 2 and threading.main_thread().name not in where
    for judge in judges.values():
        await judge.aclose()


# ------------------------------------------------------------------ paced starts


async def test_requests_start_a_few_per_turn_of_the_loop() -> None:
    """Twelve requests arriving at once under a pace of 4 per turn start over 3 or more
    turns, in arrival order; c824dfc started them all in one."""
    turns = Turns(4)
    tick = 0
    running = True

    def count() -> None:
        nonlocal tick
        tick += 1
        if running:
            asyncio.get_running_loop().call_soon(count)

    asyncio.get_running_loop().call_soon(count)
    started: list[tuple[int, int]] = []

    async def request(n: int) -> None:
        await turns.wait()
        started.append((n, tick))

    await asyncio.gather(*(request(n) for n in range(12)))
    running = False
    assert [n for n, _ in started] == list(range(12))
    per_turn: dict[int, int] = {}
    for _, at in started:
        per_turn[at] = per_turn.get(at, 0) + 1
    assert max(per_turn.values()) <= 4 and len(per_turn) >= 3


async def test_a_request_cancelled_while_waiting_its_turn_gives_it_up() -> None:
    turns = Turns(1)
    waits = [asyncio.create_task(turns.wait()) for _ in range(3)]
    await asyncio.sleep(0)  # the first has started, the others wait their turn
    waits[1].cancel()
    await asyncio.wait_for(waits[2], 5)  # the next in line takes the cancelled one's turn
    assert waits[0].done() and waits[1].cancelled()


# ------------------------------------------------------------------ the loop during large work


async def test_a_large_batch_of_cache_hits_lets_the_loop_turn() -> None:
    """1024 items served from the verdict cache: other tasks get the loop while the batch is
    scored. On c824dfc the whole batch ran in one stretch (0.2 to 0.8 s of blocked loop,
    the other task never ran)."""
    engine = Engine({"primary": StubJudge("primary", constant(1.0))}, VerdictCache(100_000))
    batch = items(1024, 200)
    await engine.score(rubric(5), batch)  # now cached
    turns = 0
    done = False

    async def other() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    watcher = asyncio.create_task(other())
    await asyncio.sleep(0)
    before = turns
    scored = await engine.score(rubric(5), batch)
    during = turns - before
    done = True
    await watcher
    assert scored.usage.cache_hits == 5120
    assert during >= 2
