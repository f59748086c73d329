"""SIGTERM in the middle of a batch: ``rewardsvc serve`` on the real CPU judges, reached
through fault proxies that slow the primary judge down so that batches are in flight.

Requests accepted before SIGTERM are answered in full (every item once, rewards in [0, 1]
exactly for ok/degraded), within the shutdown timeout, and logged; requests arriving
after it get 503 with Retry-After (and ``/readyz`` 503, so a load balancer stops sending);
the process then exits cleanly. A batch that cannot finish within the shutdown timeout is
still answered, its unfinished judge work failed, not cut off with the connection.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import Service, start_service, stop_service
from faultproxy import FaultProxy
from test_faults import (
    check_answer,
    items,
    rig_env,
    upstream_of,
    wait_for_calls,
    wait_logged,
    write_rig_files,
)

from rewardsvc.core.pool import JudgePool

pytestmark = pytest.mark.judges


@pytest.fixture
def proxies(cpu_pool: JudgePool) -> Iterator[tuple[FaultProxy, FaultProxy]]:
    """Proxies to the primary and secondary CPU judges; the primary trickles its answers."""
    with (
        FaultProxy(upstream_of(cpu_pool, "primary"), trickle_s=0.003) as primary,
        FaultProxy(upstream_of(cpu_pool, "secondary")) as secondary,
    ):
        yield primary, secondary


def start(
    folder: Path, primary: FaultProxy, secondary: FaultProxy, shutdown_timeout_s: float
) -> tuple[Service, Path]:
    """A service through the proxies with this shutdown timeout; its reward log's path."""
    # The primary's timeout outlasts its slow answers: only the shutdown may cut them.
    rubrics, pool_file = write_rig_files(
        folder, {"primary": primary, "secondary": secondary}, primary_timeout_s=120
    )
    log = folder / "rewards.jsonl"
    env = rig_env(
        rubrics,
        pool_file,
        log,
        REWARDSVC_SHUTDOWN_TIMEOUT_S=str(shutdown_timeout_s),
        REWARDSVC_REQUEST_TIMEOUT_S="120",
    )
    return start_service(env, folder / "service.log"), log


async def test_sigterm_answers_accepted_requests_and_refuses_later_ones(
    proxies: tuple[FaultProxy, FaultProxy], tmp_path: Path
) -> None:
    """Accepted before SIGTERM: answered in full within the shutdown timeout, and logged.
    After SIGTERM: 503 with Retry-After on every scoring route, /readyz 503."""
    primary, secondary = proxies
    shutdown_timeout_s = 60.0
    service, log = start(tmp_path, primary, secondary, shutdown_timeout_s)
    try:
        primary.set_mode("trickle")
        batches = [items(f"accepted{n}", 3) for n in range(3)]
        async with httpx.AsyncClient(base_url=service.url, timeout=180) as client:
            accepted = [
                asyncio.ensure_future(
                    client.post("/v1/rewards", json={"rubric": "faults-mean", "items": batch})
                )
                for batch in batches
            ]
            await wait_for_calls(primary, 2)
            assert not any(task.done() for task in accepted), "the batches ended too soon"
            service.process.send_signal(signal.SIGTERM)
            sigterm_at = time.monotonic()
            await asyncio.sleep(0.5)
            later = await asyncio.gather(
                client.post("/v1/rewards", json={"rubric": "faults-mean", "items": items("x", 1)}),
                client.post("/openrlhf/faults-mean", json={"query": ["2 + 2 = 4"]}),
                client.post("/slime/faults-mean", json={"prompt": "2 + 2?", "response": "4"}),
            )
            ready = await client.get("/readyz")
            replies = []
            for task in asyncio.as_completed(accepted):
                replies.append(await task)
                assert time.monotonic() - sigterm_at <= shutdown_timeout_s
        for reply in later:
            assert reply.status_code == 503, reply.text
            body = reply.json()
            assert set(body) == {"error", "message", "field"} and body["error"] == "shutting_down"
            assert reply.headers.get("retry-after")
        assert ready.status_code == 503, ready.text
        by_first_id = {r.json()["results"][0]["id"]: r for r in replies}
        for batch in batches:
            results = check_answer(by_first_id[batch[0]["id"]], batch)
            assert {r["status"] for r in results} <= {"ok", "degraded"}, results
        assert service.process.wait(timeout=shutdown_timeout_s + 30) == 0
        sent = [i["id"] for batch in batches for i in batch]
        assert await wait_logged(log, sent, timeout_s=1) == Counter(dict.fromkeys(sent, 1))
    finally:
        stop_service(service)


async def test_batch_past_the_shutdown_timeout_is_answered_not_cut(
    proxies: tuple[FaultProxy, FaultProxy], tmp_path: Path
) -> None:
    """A batch whose judge stalls past the shutdown timeout still gets an answer (the stalled
    judge's work failed, the other judge's scores kept), and every item is logged."""
    primary, secondary = proxies
    service, log = start(tmp_path, primary, secondary, shutdown_timeout_s=3)
    try:
        batch = items("stalled", 3)
        async with httpx.AsyncClient(base_url=service.url, timeout=180) as client:
            primary.set_mode("stall")
            pending = asyncio.ensure_future(
                client.post("/v1/rewards", json={"rubric": "faults-mean", "items": batch})
            )
            await wait_for_calls(primary, 1)
            service.process.send_signal(signal.SIGTERM)
            try:
                reply = await pending
            except httpx.TransportError as exc:
                raise AssertionError(f"the accepted request was cut off: {exc!r}") from exc
        results = check_answer(reply, batch)
        assert {r["status"] for r in results} <= {"degraded", "judge_error"}, results
        assert service.process.wait(timeout=60) == 0
        sent = [i["id"] for i in batch]
        assert await wait_logged(log, sent, timeout_s=1) == Counter(dict.fromkeys(sent, 1))
    finally:
        stop_service(service)
