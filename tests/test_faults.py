"""Fault injection against the live service: ``rewardsvc serve`` scoring through fault proxies
(``faultproxy.py``) in front of the real CPU judges.

For each judge fault (killed mid-batch, refusing connections, stalled, trickling bytes,
garbage 200, context-overflow 400, 503 storm) a batch is in flight when the fault starts,
and more requests arrive while it lasts. Every answered request must hold every item
exactly once, in order, with a reward in [0, 1] exactly when its status is ok or degraded;
``/v1/rewards`` never answers 5xx; the trainer routes answer their documented 503 while
judges fail (and never for a fault that a retry cannot cure); the reward log holds one
line per returned item. Judge timeouts and the request deadline are small so that the
file runs in a few minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import CPU_POOL, Service, start_service, stop_service
from faultproxy import FaultProxy, proxied_pool

from rewardsvc.core.pool import JudgePool

pytestmark = pytest.mark.judges

MEAN_RUBRIC = """\
id: faults-mean
description: Either judge suffices.
criteria:
  - id: correct
    text: The response answers the question correctly.
judges: [primary, secondary]
aggregation:
  rule: mean
min_judges: 1
"""

STRICT_RUBRIC = """\
id: faults-strict
description: Both judges are needed.
criteria:
  - id: correct
    text: The response answers the question correctly.
judges: [primary, secondary]
aggregation:
  rule: min
min_judges: 2
"""

# The judge error kinds each fault becomes.
FAULT_KINDS = {
    "drop": {"connection"},
    "refuse": {"connection"},
    "stall": {"timeout", "deadline"},
    "trickle": {"timeout", "deadline"},
    "garbage": {"unparseable"},
    "overflow": {"context_overflow"},
    "storm": {"http_5xx", "rate_limited"},
}

SCORED = ("ok", "degraded")


@dataclass
class Rig:
    """A service whose judges are reached through one fault proxy each."""

    service: Service
    primary: FaultProxy
    secondary: FaultProxy
    reward_log: Path


def write_rig_files(
    folder: Path, proxies: dict[str, FaultProxy], primary_timeout_s: float = 10
) -> tuple[Path, Path]:
    """A rubric folder (faults-mean, faults-strict) and a judge pool through ``proxies``,
    without retries and with a small timeout for the primary judge (the one faulted)."""
    rubrics = folder / "rubrics"
    rubrics.mkdir()
    (rubrics / "faults-mean.yaml").write_text(MEAN_RUBRIC)
    (rubrics / "faults-strict.yaml").write_text(STRICT_RUBRIC)
    pool = proxied_pool(CPU_POOL, proxies, retries=0, max_concurrency=8)
    # The faulted judge gives up soon; the healthy one has room for a loaded machine.
    pool["judges"]["primary"]["timeout_s"] = primary_timeout_s
    pool["judges"]["secondary"]["timeout_s"] = 30
    pool_file = folder / "judges.yaml"
    pool_file.write_text(json.dumps(pool))
    return rubrics, pool_file


def rig_env(rubrics: Path, pool_file: Path, reward_log: Path, **extra: str) -> dict[str, str]:
    """Service settings for a fault rig: no cache (every request reaches the judges)."""
    env = {
        "REWARDSVC_RUBRICS_DIR": str(rubrics),
        "REWARDSVC_JUDGE_POOL": str(pool_file),
        "REWARDSVC_REWARD_LOG": str(reward_log),
        "REWARDSVC_CACHE_SIZE": "0",
        "REWARDSVC_RELOAD": "false",
        "REWARDSVC_REQUEST_TIMEOUT_S": "40",
    }
    env.update(extra)
    return env


def upstream_of(pool: JudgePool, judge: str) -> str:
    """The server root of a judge of ``pool`` (its first base URL without ``/v1``)."""
    return str(pool.judges[judge].base_urls[0]).rstrip("/").removesuffix("/v1")


def wait_until_judges_idle(pool: JudgePool, timeout_s: float = 180.0) -> None:
    """Wait until no request runs or waits in either real judge (vLLM's own gauges).

    A fault that cut connections leaves vLLM finishing the abandoned requests; the next
    fault must start from an idle judge, or its healthy calls would time out behind them.
    """
    deadline = time.monotonic() + timeout_s
    for judge in ("primary", "secondary"):
        url = upstream_of(pool, judge) + "/metrics"
        while time.monotonic() < deadline:
            text = httpx.get(url, timeout=10).text
            busy = [
                line
                for line in text.splitlines()
                if line.startswith(("vllm:num_requests_running", "vllm:num_requests_waiting{"))
                and not line.rstrip().endswith(" 0.0")
            ]
            if not busy:
                break
            time.sleep(0.5)


@contextlib.contextmanager
def running_rig(pool: JudgePool, folder: Path, primary_timeout_s: float = 10) -> Iterator[Rig]:
    """A fresh rig (its own proxies, service and reward log; every breaker closed), started
    once the real judges are idle."""
    wait_until_judges_idle(pool)
    primary = FaultProxy(upstream_of(pool, "primary"))
    secondary = FaultProxy(upstream_of(pool, "secondary"))
    with primary, secondary:
        proxies = {"primary": primary, "secondary": secondary}
        rubrics, pool_file = write_rig_files(folder, proxies, primary_timeout_s)
        log = folder / "rewards.jsonl"
        service = start_service(rig_env(rubrics, pool_file, log), folder / "service.log")
        try:
            yield Rig(service, primary, secondary, log)
        finally:
            stop_service(service)


def items(tag: str, count: int) -> list[dict[str, Any]]:
    """``count`` distinct items whose ids start with ``tag``."""
    return [
        {
            "id": f"{tag}-{n}",
            "prompt": f"What is {n} + {n}?",
            "completion": f"{n} + {n} = {2 * n}.",
            "reference": str(2 * n),
        }
        for n in range(count)
    ]


def check_answer(reply: httpx.Response, sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The results of an answered /v1/rewards request, after checking its invariants."""
    assert reply.status_code == 200, (reply.status_code, reply.text[:500])
    results = reply.json()["results"]
    assert [r["id"] for r in results] == [i["id"] for i in sent]
    for r in results:
        if r["status"] in SCORED:
            assert r["reward"] is not None and 0.0 <= r["reward"] <= 1.0, r
        else:
            assert r["reward"] is None, r
    return results  # type: ignore[no-any-return]


def primary_kinds(results: list[dict[str, Any]]) -> set[str]:
    """The error kinds of the primary judge's failed criteria in ``results``."""
    return {
        c["error_kind"]
        for r in results
        for c in r["judges"].get("primary", {}).get("criteria", {}).values()
        if c.get("error_kind")
    }


async def wait_logged(log: Path, ids: list[str], timeout_s: float = 15.0) -> Counter[str]:
    """The reward-log line count of each of ``ids``, once every one of them is logged."""
    wanted = set(ids)
    counts: Counter[str] = Counter()
    for _ in range(int(timeout_s / 0.1)):
        counts = Counter()
        if log.exists():
            for line in log.read_text().splitlines():
                record = json.loads(line)
                if record.get("id") in wanted:
                    counts[record["id"]] += 1
        if set(counts) == wanted:
            break
        await asyncio.sleep(0.1)
    return counts


async def wait_for_calls(proxy: FaultProxy, count: int, timeout_s: float = 60.0) -> None:
    """Wait until ``proxy`` received ``count`` requests (the batch is then in flight)."""
    for _ in range(int(timeout_s / 0.02)):
        if proxy.total() >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the judge behind the proxy got {proxy.total()} of {count} calls")


async def until_both_score(client: httpx.AsyncClient) -> None:
    """Wait until both judges score again (a breaker opened by an earlier fault lets a
    probe through after its cooldown)."""
    probe = items(f"probe-{uuid.uuid4().hex[:6]}", 1)
    results: list[dict[str, Any]] = []
    for _ in range(60):
        reply = await client.post("/v1/rewards", json={"rubric": "faults-strict", "items": probe})
        results = check_answer(reply, probe)
        if results[0]["status"] == "ok":
            return
        await asyncio.sleep(1)
    raise AssertionError(f"the judges did not recover: {results}")


# Faults that end a call at once leave the primary judge a long timeout, so that a slow
# (loaded) judge does not open its breaker before the fault starts.
PRIMARY_TIMEOUT_S = {"stall": 10.0, "trickle": 10.0}


@pytest.mark.parametrize("fault", list(FAULT_KINDS))
async def test_judge_fault(cpu_pool: JudgePool, tmp_path: Path, fault: str) -> None:
    """A fault of the primary judge that starts mid-batch and lasts loses no item."""
    with running_rig(cpu_pool, tmp_path, PRIMARY_TIMEOUT_S.get(fault, 60.0)) as rig:
        await fault_round(rig, fault)


async def fault_round(rig: Rig, fault: str) -> None:
    """One fault round on a fresh rig (see test_judge_fault)."""
    tag = f"{fault}-{uuid.uuid4().hex[:6]}"
    async with httpx.AsyncClient(base_url=rig.service.url, timeout=90) as client:
        # Phase 1: batches in flight when the fault starts.
        batches = [items(f"{tag}-a{n}", 4) for n in range(2)] + [items(f"{tag}-s", 3)]
        rubrics = ["faults-mean"] * 2 + ["faults-strict"]
        start = rig.primary.total()
        pending = [
            asyncio.ensure_future(client.post("/v1/rewards", json={"rubric": r, "items": b}))
            for r, b in zip(rubrics, batches, strict=True)
        ]
        await wait_for_calls(rig.primary, start + 2)
        rig.primary.set_mode(fault)
        replies = await asyncio.gather(*pending)
        # Phase 2: requests that arrive while the fault lasts (after phase 1, so that their
        # calls reach the faulted judge rather than wait behind slow ones).
        during = items(f"{tag}-d", 3)
        # Bodies unique to the test: the compat routes count the tries of a repeated body.
        question = f"What is 2 + 2? ({tag})"
        compat_body = {"prompt": question, "response": "4", "label": "4"}
        openrlhf_body = {"query": [f"{question} 4"], "prompts": [question]}
        strict_during, slime, openrlhf = await asyncio.gather(
            client.post("/v1/rewards", json={"rubric": "faults-strict", "items": during}),
            client.post(
                "/slime/faults-strict", params={"hold": 0, "format": "dict"}, json=compat_body
            ),
            client.post("/openrlhf/faults-strict", params={"hold": 0}, json=openrlhf_body),
        )
    rig.primary.set_mode("pass")

    for reply, batch, rubric in zip(replies, batches, rubrics, strict=True):
        results = check_answer(reply, batch)
        if rubric == "faults-mean":
            # min_judges 1: the primary's fault never sinks an item the secondary scored.
            for r in results:
                if r["judges"].get("secondary", {}).get("score") is not None:
                    assert r["status"] in SCORED, json.dumps(r)
    during_results = check_answer(strict_during, during)
    await rig.primary.settled()
    # A refused connection never reaches the proxy, so only the kinds below can show that
    # the service met that fault; every other fault is applied by the proxy to a call, or
    # for a drop to the kept-alive connections it reset: a call sent on one of those fails
    # before the proxy reads it (seen on a loaded CI: 0 hits, 7 calls before the drop, the
    # service's next call "Server disconnected", its breaker open after).
    met = rig.primary.hits + (rig.primary.aborted if fault == "drop" else 0)
    assert met > 0 or fault == "refuse", ("the fault never hit a call", rig.primary.seen)
    # The fault's own kind shows; besides it only the breaker it opened (unavailable), or a
    # reset connection retried until the call's deadline (timeout).
    phase1 = [r for reply in replies for r in reply.json()["results"]]
    kinds = primary_kinds(phase1 + during_results)
    assert kinds & FAULT_KINDS[fault], kinds
    assert kinds <= FAULT_KINDS[fault] | {"unavailable", "timeout"}, kinds

    if fault == "overflow":
        # A prompt too long for a judge never fits, so the trainer must not be told to retry:
        # OpenRLHF gets its flagged stand-in, slime (which can carry no flag) a 422 naming
        # its field, never a number.
        assert {r["status"] for r in during_results} == {"rejected"}, json.dumps(during_results)
        assert slime.status_code == 422, slime.text
        assert slime.json()["field"] in {"prompt", "response", "label"}, slime.text
        assert "retry-after" not in slime.headers
        assert openrlhf.status_code == 200, openrlhf.text
    else:
        assert {r["status"] for r in during_results} == {"judge_error"}, during_results
        for reply in (slime, openrlhf):
            assert reply.status_code == 503, reply.text
            assert set(reply.json()) == {"error", "message", "field"}
            assert reply.json()["error"] == "judge_error"
            assert reply.headers.get("retry-after")

    sent = [i["id"] for batch in [*batches, during] for i in batch]
    counts = await wait_logged(rig.reward_log, sent)
    assert counts == Counter(dict.fromkeys(sent, 1))


async def test_service_recovers_after_a_fault(cpu_pool: JudgePool, tmp_path: Path) -> None:
    """After a 503 storm opened the primary's breaker, both judges score again once the
    judge is back (the breaker lets a probe through after its cooldown)."""
    with running_rig(cpu_pool, tmp_path, primary_timeout_s=60) as rig:
        async with httpx.AsyncClient(base_url=rig.service.url, timeout=180) as client:
            rig.primary.set_mode("storm")
            stormed = items("stormed", 4)
            reply = await client.post(
                "/v1/rewards", json={"rubric": "faults-strict", "items": stormed}
            )
            assert {r["status"] for r in check_answer(reply, stormed)} == {"judge_error"}
            rig.primary.set_mode("pass")
            await until_both_score(client)
