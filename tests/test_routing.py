"""Prefix-affine routing: the pure choice (rewardsvc.judges.routing), the backend that uses
it against fake replicas, and every call of an item reaching one URL of the real judge."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from fakejudge import FakeJudge, Script

from rewardsvc.application.items import read_item
from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rollout import ItemIn, Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges import prompts, routing
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.backends import Backend, RetryPolicy
from rewardsvc.judges.breaker import BreakerPolicy
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.methods import method_for
from rewardsvc.judges.shapes import shape_for
from rewardsvc.scoring.engine import Engine

FAST = RetryPolicy(initial_s=0.01, max_s=0.05, jitter_s=0.01)
URLS = [f"http://judge-{i}.example:8000/v1" for i in range(4)]

RUBRIC = Rubric(
    id="routing",
    instructions="Grade the answer to a short arithmetic question.",
    criteria=[
        {"id": "correct", "text": "The final answer is correct."},
        {"id": "shown", "text": "The response shows how it got the answer."},
        {"id": "short", "text": "The response is at most three sentences long."},
        {"id": "polite", "text": "The response is polite."},
        {"id": "padding", "text": "The response pads itself with filler.", "category": "pitfall"},
    ],
    judges=["primary"],
)


def item(n: int) -> Rollout:
    """A distinct arithmetic item; its marker ``item-n`` identifies its calls' bodies."""
    return Rollout(f"What is {n} plus {n}? (item-{n})", f"{n} + {n} = {2 * n}.", str(2 * n))


# ---------------------------------------------------------------- the pure choice


def first(key: str | None, urls: list[str], in_flight: list[int] | None = None, **kw: Any) -> int:
    loads = in_flight if in_flight is not None else [0] * len(urls)
    return routing.preference(key, urls, loads, load_factor=1.25, **kw)[0]


def test_the_same_key_always_picks_the_same_endpoint() -> None:
    for n in range(50):
        key = routing.affinity_key("rubric", f"item {n}")
        picks = {first(key, URLS) for _ in range(5)}
        assert len(picks) == 1
        # Order of the URL list does not matter: the pick follows the URL, not its slot.
        assert URLS[picks.pop()] == list(reversed(URLS))[first(key, list(reversed(URLS)))]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_keys_spread_evenly(n: int) -> None:
    urls = URLS[:n]
    counts = Counter(first(routing.affinity_key(f"item {k}"), urls) for k in range(3000))
    fair = 3000 / n
    assert set(counts) == set(range(n))
    assert all(abs(c - fair) < 0.15 * fair for c in counts.values()), counts


def test_losing_an_endpoint_moves_only_its_keys() -> None:
    keys = [routing.affinity_key(f"item {k}") for k in range(500)]
    before = {k: URLS[first(k, URLS)] for k in keys}
    after = {k: URLS[1:][first(k, URLS[1:])] for k in keys}
    moved = [k for k in keys if before[k] != after[k]]
    assert moved and all(before[k] == URLS[0] for k in moved)


def test_an_overloaded_endpoint_spills_to_the_keys_next_choice() -> None:
    key = routing.affinity_key("hot item")
    order = routing.rendezvous(key, URLS)
    loads = [0] * 4
    loads[order[0]] = routing.load_limit([0, 0, 0, 0], 1.25)  # exactly at the limit: kept
    assert first(key, URLS, loads) == order[0]
    loads[order[0]] = 9  # mean 2.25: limit ceil(1.25 * 2.25 + 1) = 4
    assert routing.load_limit(loads, 1.25) == 4
    assert first(key, URLS, loads) == order[1]
    assert routing.preference(key, URLS, loads, load_factor=1.25)[-1] == order[0]


def test_a_pinned_key_keeps_its_endpoint_over_the_bound_but_not_over_a_failure() -> None:
    key = routing.affinity_key("hot item")
    order = routing.rendezvous(key, URLS)
    loads = [0] * 4
    loads[order[0]] = 9  # over the bound: an unpinned call spills to the second choice
    assert first(key, URLS, loads) == order[1]
    # Once the item's first call went there, the others follow, however loaded it gets.
    loads[order[1]] = 20
    assert first(key, URLS, loads, pinned=order[1]) == order[1]
    # A pin is where the item's prefix is, not a promise: a retry still leaves it.
    assert first(key, URLS, loads, pinned=order[1], avoid={order[1]}) != order[1]
    # Round robin has no pins.
    assert routing.preference(None, URLS, loads, load_factor=1.25, cursor=3, pinned=1)[0] == 3


def test_the_calls_of_one_item_stay_together_on_an_idle_judge() -> None:
    key = routing.affinity_key("item")
    loads = [0, 0]
    for _ in range(6):
        loads[first(key, URLS[:2], loads)] += 1
    assert sorted(loads) == [0, 6]


def test_a_refusing_breaker_is_skipped_and_all_refusing_gives_none() -> None:
    key = routing.affinity_key("item")
    order = routing.preference(key, URLS, [0] * 4, load_factor=1.25)
    asked: list[int] = []

    def allow(i: int) -> bool:
        asked.append(i)
        return i != order[0]

    assert routing.pick(order, allow) == order[1]
    assert asked == order[:2]  # the breakers after the pick are not asked
    assert routing.pick(order, lambda i: False) is None


def test_a_retry_avoids_the_endpoint_that_failed() -> None:
    key = routing.affinity_key("item")
    home = first(key, URLS)
    again = first(key, URLS, avoid={home})
    assert again != home
    assert again == routing.rendezvous(key, URLS)[1]
    # With one endpoint there is nowhere else: the retry goes back to it.
    assert first(key, URLS[:1], avoid={0}) == 0
    # Without a key: round robin from the cursor, the failed one last.
    assert routing.preference(None, URLS, [0] * 4, load_factor=1.25, cursor=2, avoid={2}) == [
        3,
        0,
        1,
        2,
    ]


def affinity(criterion: int, rollout: Rollout) -> routing.Affinity:
    c = RUBRIC.criteria[criterion]
    got = prompts.criterion_prompt(
        RUBRIC, c, rollout, prompts.Asking(method_for("logprob"), shape_for("chat"))
    ).affinity
    assert got is not None
    return got


def sibling(k: int) -> Rollout:
    """Completion ``k`` of one task, as a GRPO group has several (marker ``item-k``)."""
    return Rollout("What is 21 plus 21?", f"It is {40 + k}. (item-{k})", "42")


def test_prompt_affinity_is_per_item_and_per_trajectory() -> None:
    key = affinity
    assert key(0, item(1)) == key(4, item(1)) != key(0, item(2))
    holistic = prompts.holistic_prompt(
        RUBRIC, item(1), prompts.Asking(method_for("logprob"), shape_for("completion"))
    )
    assert holistic.affinity is not None and holistic.affinity != key(0, item(1))
    # Steps of one trajectory share a key though their item blocks differ.
    one, other = trajectory("Oslo"), trajectory("Bergen")
    assert one.step_count() == 3
    step_keys = {key(c, one.at_step(k)) for k in range(3) for c in (0, 1)}
    assert len(step_keys) == 1
    assert step_keys != {key(0, other.at_step(0))}


def test_the_items_of_one_task_share_a_group_not_an_item_key() -> None:
    a, b = affinity(0, sibling(1)), affinity(3, sibling(2))
    assert a.group == b.group and a.item != b.item
    assert affinity(0, item(1)).group != a.group
    # The reference is part of the task: another one is another group.
    other_reference = Rollout(sibling(1).prompt, sibling(1).completion, "41")
    assert affinity(0, other_reference).group != a.group


def trajectory(city: str) -> Rollout:
    """A three-step agent trajectory (two tool calls, then the answer)."""
    events: list[dict[str, Any]] = []
    for k in range(2):
        call = {"name": "search", "arguments": json.dumps({"query": f"fares part {k}"})}
        events.append({"role": "assistant", "tool_calls": [{"id": f"c{k}", "function": call}]})
        events.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"Fare {k}: 90"})
    events.append({"role": "assistant", "content": "Tuesday is cheapest."})
    task = [{"role": "user", "content": f"Find the cheapest flight from {city} to Rome."}]
    got = read_item(0, {"prompt": task, "completion": events})
    assert got.rollout is not None, got.error
    return got.rollout


def test_routing_config_defaults_and_bounds() -> None:
    config = JudgeConfig(model="m", base_urls=URLS[:2])
    assert (config.routing, config.load_factor) == ("affine", 1.25)
    with pytest.raises(ValueError, match="load_factor"):
        JudgeConfig(model="m", base_urls=URLS[:2], load_factor=0.5)
    with pytest.raises(ValueError, match="routing"):
        JudgeConfig(model="m", base_urls=URLS[:2], routing="random")  # type: ignore[arg-type]


# ---------------------------------------------------------------- backends on fake replicas


@pytest.fixture
def replicas() -> Iterator[list[FakeJudge]]:
    with FakeJudge(Script()) as a, FakeJudge(Script()) as b:
        yield [a, b]


def judge_over(made: list[Judge], urls: list[str], **fields: Any) -> Judge:
    config = JudgeConfig(model="fake", base_urls=urls, timeout_s=5.0, **fields)
    backend = Backend("primary", config, retry=FAST, breaker=BreakerPolicy(threshold=2))
    judge = Judge("primary", config, backend=backend)
    made.append(judge)
    return judge


def home_of(n: int, urls: list[str]) -> int:
    """The index of the URL that item ``n``'s key hashes to first."""
    return routing.rendezvous(affinity(0, item(n)).group, urls)[0]


async def score_items(judge: Judge, items: range) -> list[bool]:
    calls = [judge.ask(CriterionOnItem(RUBRIC, c, item(n))) for n in items for c in RUBRIC.criteria]
    return [v.ok for v in await asyncio.gather(*calls)]


def homes(replicas: list[FakeJudge], items: range) -> dict[int, set[int]]:
    """For each item, the replicas that received any of its calls."""
    out: dict[int, set[int]] = {n: set() for n in items}
    for r, fake in enumerate(replicas):
        for body in fake.script.bodies:
            text = str(body["messages"])
            for n in items:
                if f"(item-{n})" in text:
                    out[n].add(r)
    return out


async def test_every_call_of_an_item_reaches_one_replica_and_items_spread(
    replicas: list[FakeJudge], judges: list[Judge]
) -> None:
    # At the default load bound: a burst of 200 calls, 32 in flight, spills items (not
    # calls) wherever the hash gave one replica a run of them; each item's calls follow
    # its first one, even when they wait for a slot until it has finished.
    judge = judge_over(judges, [r.url for r in replicas])
    items = range(40)
    assert all(await score_items(judge, items))
    seen = homes(replicas, items)
    assert all(len(where) == 1 for where in seen.values()), seen
    per_replica = Counter(next(iter(where)) for where in seen.values())
    assert per_replica[0] >= 8 and per_replica[1] >= 8, per_replica


async def test_the_items_of_one_task_gather_on_one_replica_until_it_is_busy(
    replicas: list[FakeJudge], judges: list[Judge]
) -> None:
    judge = judge_over(judges, [r.url for r in replicas])
    # One item at a time: nothing is in flight, so every item of the task goes home.
    for k in range(6):
        calls = [judge.ask(CriterionOnItem(RUBRIC, c, sibling(k))) for c in RUBRIC.criteria]
        assert all(v.ok for v in await asyncio.gather(*calls))
    seen = homes(replicas, range(6))
    assert len(set().union(*seen.values())) == 1, seen
    # A burst of the task's items: the home fills past the load bound, so items spill to
    # the other replica, each with all of its calls.
    for fake in replicas:
        fake.script.bodies.clear()
    burst = range(10, 50)
    calls = [
        judge.ask(CriterionOnItem(RUBRIC, c, sibling(k))) for k in burst for c in RUBRIC.criteria
    ]
    assert all(v.ok for v in await asyncio.gather(*calls))
    seen = homes(replicas, burst)
    assert all(len(where) == 1 for where in seen.values()), seen
    assert len(set().union(*seen.values())) == 2, seen


async def test_round_robin_splits_the_calls_of_an_item(
    replicas: list[FakeJudge], judges: list[Judge]
) -> None:
    judge = judge_over(judges, [r.url for r in replicas], routing="round_robin")
    items = range(10)
    assert all(await score_items(judge, items))
    assert all(len(where) == 2 for where in homes(replicas, items).values())


async def test_a_failing_replica_moves_its_items_to_the_other(
    replicas: list[FakeJudge], judges: list[Judge]
) -> None:
    urls = [r.url for r in replicas]
    judge = judge_over(judges, urls)
    broken = replicas[0]
    broken.script.default = "500"
    items = range(20)
    assert any(home_of(n, urls) == 0 for n in items)
    for n in items:  # item by item: the breaker opens during the first broken item
        assert all(await score_items(judge, range(n, n + 1)))
    assert broken.script.requests <= len(RUBRIC.criteria)
    assert all(1 in where for where in homes(replicas, items).values())
    assert len(replicas[1].script.bodies) == len(RUBRIC.criteria) * len(items)


async def test_a_killed_replica_costs_one_attempt_then_its_items_move(
    replicas: list[FakeJudge], judges: list[Judge]
) -> None:
    urls = [r.url for r in replicas]
    judge = judge_over(judges, urls)
    dead, alive = replicas
    theirs = [n for n in range(40) if home_of(n, urls) == 0][:3]
    assert len(theirs) == 3
    dead.__exit__(None, None, None)
    for n in theirs:
        verdicts = [await judge.ask(CriterionOnItem(RUBRIC, c, item(n))) for c in RUBRIC.criteria]
        assert all(v.ok for v in verdicts)
    assert len(alive.script.bodies) == len(RUBRIC.criteria) * len(theirs)
    # One failed attempt per item (its later calls follow its retry to the live replica)
    # until the breaker's threshold of two; the third item never tries the dead one.
    assert judge.backend.endpoints[0].calls == 2
    assert all(e.in_flight == 0 for e in judge.backend.endpoints)


async def test_a_retry_goes_to_the_other_replica(
    replicas: list[FakeJudge], judges: list[Judge]
) -> None:
    urls = [r.url for r in replicas]
    judge = judge_over(judges, urls)
    home = home_of(7, urls)
    replicas[home].script.queue.append("500")
    verdict = await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], item(7)))
    assert verdict.ok
    assert replicas[home].script.requests == 1 and replicas[1 - home].script.requests == 1


# ---------------------------------------------------------------- the real judge


@pytest.mark.judges
async def test_real_judge_gets_every_call_of_an_item_on_one_url(cpu_pool: JudgePool) -> None:
    primary = cpu_pool.judges["primary"]
    url = str(primary.base_urls[0])
    twin = url.replace("127.0.0.1", "localhost")
    assert twin != url
    # No retries: a retry goes to the other URL by design, and on a loaded machine an
    # attempt may fail; what is checked here is where each call is first sent.
    config = primary.model_copy(update={"base_urls": [url, twin], "retries": 0})
    engine = Engine({"primary": Judge("primary", config)})
    endpoints = engine.judges["primary"].backend.endpoints  # type: ignore[attr-defined]
    used: set[int] = set()
    try:
        for n in range(6):
            before = [e.calls for e in endpoints]
            batch = await engine.score(RUBRIC, [ItemIn(f"i{n}", item(n))])
            sent = [e.calls - b for e, b in zip(endpoints, before, strict=True)]
            assert sorted(sent) == [0, len(RUBRIC.criteria)], sent
            used.add(sent.index(len(RUBRIC.criteria)))
            assert batch.items[0].status in ("ok", "degraded"), batch.items[0]
    finally:
        await engine.aclose()
    assert all(e.in_flight == 0 for e in endpoints)
    assert used == {0, 1}  # these six items hash to both names of the server
