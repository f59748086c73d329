"""A real ``rewardsvc serve`` under the payloads that made it hold memory (issue 36, items
1, 2 and 3): 4 MiB ROLL jobs that fail, an explain request many times its size, ORS calls
waiting for their session. Sent in a loop, they never leave the service holding more than
its documented bound once answered (nothing: held work is released when it ends). What is
held while they run is bounded by ``max_held_bytes`` (``tests/test_held_work.py`` reads the
ledger)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psutil
import pytest
from conftest import Service, start_service, stop_service
from fakejudge import FakeJudge
from test_api_support import fake_pool_doc, write_library
from test_compat_roll import payload
from test_ors import events, write_env

MiB = 1024 * 1024
HELD = 64 * MiB
ROUNDS = 4


class PeakRss:
    """The highest RSS of a process while the block runs, sampled every 20 ms."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.02)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, FakeJudge]]:
    folder = tmp_path_factory.mktemp("held-memory")
    with FakeJudge() as fake:
        pool = folder / "judges.yaml"
        pool.write_text(json.dumps(fake_pool_doc(fake.url, fake.url, timeout_s=30)))
        env = write_env(folder / "env")
        service = start_service(
            {
                "REWARDSVC_RUBRICS_DIR": str(write_library(folder / "rubrics")),
                "REWARDSVC_JUDGE_POOL": str(pool),
                "REWARDSVC_ORS_ENVIRONMENTS": json.dumps([str(env)]),
                "REWARDSVC_MAX_HELD_BYTES": str(HELD),
                "REWARDSVC_MAX_TEXT_CHARS": str(5 * MiB),
                "REWARDSVC_MAX_PROMPT_BYTES_PER_REQUEST": str(12 * MiB),
                "REWARDSVC_MAX_EXPLAIN_BYTES": str(2 * MiB),
            },
            folder / "service.log",
        )
        try:
            yield service, fake
        finally:
            stop_service(service)


async def _roll_jobs(http: httpx.AsyncClient) -> list[int]:
    """Item 1: 25 submits of 4 MiB each, each planning more prompt bytes than allowed."""
    body = payload("4" * (4 * MiB))
    replies = await asyncio.gather(
        *(http.post("/roll/tiny/submit_task", json=body) for _ in range(25))
    )
    return [r.status_code for r in replies]


async def _explain(http: httpx.AsyncClient) -> list[int]:
    """Item 2: ten requests asking explain of 4 items of 600 KB (10 MB of prompts each)."""
    item = {"prompt": "What is 2+2?", "completion": "4 " * 300_000, "reference": "4"}
    body = {"rubric": "tiny", "items": [item] * 4, "options": {"explain": True}}
    replies = await asyncio.gather(*(http.post("/v1/rewards", json=body) for _ in range(10)))
    return [r.status_code for r in replies]


async def _ors_calls(http: httpx.AsyncClient) -> list[int]:
    """Item 3: 6 sessions, each with 7 calls of 2 MiB waiting for its turn."""
    statuses: list[int] = []
    answer = {"name": "answer", "input": {"answer": "4 " * MiB}}

    async def session() -> None:
        sid = events((await http.post("/create_session")).text)[0][1]
        where = {"split": "train", "index": 0, "env_name": "tiny-env"}
        await http.post("/create", json=where, headers={"X-Session-ID": sid})
        calls = [
            http.post("/tiny-env/call", json=answer, headers={"X-Session-ID": sid})
            for _ in range(7)
        ]
        statuses.extend(r.status_code for r in await asyncio.gather(*calls))

    await asyncio.gather(*(session() for _ in range(6)))
    return statuses


def _settled_rss(pid: int) -> int:
    """The RSS once the held work ended (the jobs' tasks finish after their answers)."""
    time.sleep(2.0)
    return int(psutil.Process(pid).memory_info().rss)


@pytest.mark.parametrize("payloads", [_roll_jobs, _explain, _ors_calls])
def test_hostile_payloads_leave_nothing_held(
    served: tuple[Service, FakeJudge], payloads: Any
) -> None:
    service, fake = served
    pid = service.process.pid
    # Slow judges: an ORS session's first call holds its turn while the others wait.
    fake.script.default, fake.script.delay_s = "timeout", 3.0

    async def one_round() -> list[int]:
        async with httpx.AsyncClient(base_url=service.url, timeout=120) as http:
            return await payloads(http)

    before = _settled_rss(pid)
    statuses: list[int] = []
    settled: list[int] = []
    with PeakRss(pid) as peak:
        for _ in range(ROUNDS):
            statuses += asyncio.run(one_round())
            settled.append(_settled_rss(pid))
    assert set(statuses) <= {200, 413, 429}, statuses
    assert {413, 429} & set(statuses), statuses  # each payload meets a bound
    # Once answered and ended, a round leaves nothing held: the last two rounds do not grow
    # the RSS past the second (the first two warm the allocator's arenas with the bodies
    # they parsed, by how many arrived at once: 128 then 186 MB in one loaded run). A leak
    # of the kind fixed here would keep each round's payloads (100 MB for the ROLL one);
    # 48 MiB leaves room for the allocator's slack. The peak (the bodies being parsed, plus
    # held work within max_held_bytes) depends on how many requests arrive at once, so it
    # is reported, not asserted.
    growth = settled[-1] - settled[1]
    rss = [mb // MiB for mb in (before, *settled)]
    assert growth < 48 * MiB, f"RSS MB before, after each round: {rss}; peak {peak.peak // MiB}"
