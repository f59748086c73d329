"""Several uvicorn workers: ``rewardsvc serve --workers 2`` refuses to start without shared
state, and with Redis both workers serve one port and share the verdict cache: an item
scored once is a cache hit on either worker, with the same reward."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from conftest import start_service, stop_service
from fakejudge import FakeJudge
from redis_server import RedisServer
from test_monitor_shared import write_config

ITEM = {"id": "x", "prompt": "What is 2+2?", "completion": "4, since two plus two is four."}
ITEMS_METRIC = re.compile(r"^rewardsvc_items_total\{[^}]*\} (\S+)$", re.MULTILINE)


def test_more_than_one_worker_needs_redis(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSVC_")}
    with FakeJudge() as judge:
        env |= write_config(tmp_path, judge.url) | {"REWARDSVC_WORKERS": "2"}
        done = subprocess.run(
            [sys.executable, "-m", "rewardsvc.cli", "serve", "--port", "1"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert "2 workers need REWARDSVC_REDIS_URL" in done.stderr


def items_scored(url: str) -> float:
    """``rewardsvc_items_total`` of whichever worker answers this (new) connection."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return sum(float(v) for v in ITEMS_METRIC.findall(text))


def test_two_workers_serve_and_share_the_cache(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    try:
        with FakeJudge() as judge:
            env = write_config(tmp_path, judge.url) | {
                "REWARDSVC_REDIS_URL": redis.url,
                "REWARDSVC_WORKERS": "2",
            }
            service = start_service(env, tmp_path / "service.log")
            try:
                url = service.url
                body = {"rubric": "shared-tiny", "items": [ITEM]}
                first = httpx.post(f"{url}/v1/rewards", json=body, timeout=60).json()
                calls = judge.script.requests
                assert calls == 1 and not first["results"][0]["cached"]

                # Many connections at once: the kernel hands them to both workers.
                def post(_: int) -> dict:
                    reply = httpx.post(f"{url}/v1/rewards", json=body, timeout=60)
                    assert reply.status_code == 200, reply.text
                    return reply.json()["results"][0]

                with ThreadPoolExecutor(16) as pool:
                    repeats = list(pool.map(post, range(64)))
                    counts = set(pool.map(lambda _: items_scored(url), range(64)))
            finally:
                stop_service(service)
    finally:
        redis.stop()
    # Every repeat came from the shared cache (none asked the judge), whichever worker
    # answered: a hit, or joined to an identical read in flight in its worker.
    assert judge.script.requests == calls
    assert {r["reward"] for r in repeats} == {first["results"][0]["reward"]}
    assert any(r["cached"] for r in repeats)
    # Two workers with their own counters, which together scored every item (1 + 64 is
    # odd, so the two counts differ and both show up among the scrapes).
    positive = sorted(c for c in counts if c > 0)
    assert len(positive) == 2 and sum(positive) == 65, counts
