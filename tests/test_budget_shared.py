"""A run's budget across replicas sharing Redis: one cost counter, one alert, every replica
refuses once it has seen the total past the cap."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis_server import RedisServer

from rewardsvc.core.results import Usage
from rewardsvc.monitor.alerts import AlertEvent
from rewardsvc.monitor.spend import BudgetExceeded, Spend
from rewardsvc.storage.redis_link import RedisLink


def test_without_shared_state_a_run_is_refused_once_its_cost_reaches_the_budget() -> None:
    events: list[AlertEvent] = []
    spend = Spend({"capped": 10.0}.get, events.append)
    for _ in range(3):
        spend.check("capped")
        spend.add("paid", "capped", Usage(judge_calls=2, cost=3.0), 2)
    spend.check("capped")  # 9 of 10: still under
    spend.add("paid", "capped", Usage(judge_calls=2, cost=3.0), 2)
    with pytest.raises(BudgetExceeded) as refused:
        spend.check("capped")
    assert refused.value.kind == "budget_exceeded" and refused.value.field == "run"
    assert [(e.name, e.run, e.state, e.value, e.threshold) for e in events] == [
        ("budget_exceeded", "capped", "firing", 12.0, 10.0)
    ]
    spend.add("paid", "capped", Usage(cost=3.0), 1)  # work admitted before the cap
    assert len(events) == 1  # the alert fires once
    spend.check("other")  # runs without a budget are never refused
    spend.add("paid", None, Usage(cost=100.0), 1)
    spend.check(None)
    (run,) = [r for r in spend.runs() if r.run == "capped"]
    assert run.cost_per_reward == pytest.approx(15.0 / 9)


async def test_replicas_share_one_cost_counter_and_raise_one_alert(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    events: list[AlertEvent] = []
    links = [RedisLink(redis.url, timeout_s=1.0, prefix="t") for _ in range(3)]
    replicas = []
    for link in links:
        spend = Spend({"capped": 10.0}.get, events.append)
        spend.share(link, 3600)
        replicas.append(spend)
    try:
        for n in range(4):  # 3 + 3 + 3 + 3: the fourth batch, on replica 0, crosses 10
            replica = replicas[n % 3]
            replica.check("capped")
            replica.add("paid", "capped", Usage(cost=3.0), 1)
            await replica.drain()
        assert [(e.name, e.value) for e in events] == [("budget_exceeded", 12.0)]
        with pytest.raises(BudgetExceeded):
            replicas[0].check("capped")
        # Replica 1 last saw 6: it scores one more batch, learns the total, then refuses.
        replicas[1].check("capped")
        replicas[1].add("paid", "capped", Usage(cost=3.0), 1)
        await replicas[1].drain()
        with pytest.raises(BudgetExceeded) as refused:
            replicas[1].check("capped")
        assert refused.value.cost == pytest.approx(15.0)
        assert len(events) == 1  # crossed once, by one replica
    finally:
        for link in links:
            await link.aclose()
        redis.stop()
