"""The monitor keys a criterion by what it is: an item's own ``correct`` ("The response
rhymes.") is not the rubric's ``correct``, in the pass-rate signals, in rubric health, in
the reward log and its replay; and per-prompt rubrics by the thousand keep the monitor's
state bounded."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakejudge import FakeJudge
from rewardlog import reward_lines
from test_api_support import fake_pool, settings_for, uvicorn_server, write_library

from rewardsvc.authoring.health import from_log
from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.core.results import BatchResult, CriterionOutcome, ItemReward, JudgeOutcome, Usage
from rewardsvc.library.registry import Registry
from rewardsvc.monitor import Monitor
from rewardsvc.monitor.health import MAX_CRITERIA
from rewardsvc.monitor.runs import MAX_COLUMNS
from rewardsvc.server.app import create_app


def version_of(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def own_key(criterion: str, version: str) -> str:
    """The monitor's key of an item rubric's criterion: its id and 12 hex of the version."""
    return f"{criterion}@{version.removeprefix('sha256:')[:12]}"


RHYMES = version_of("tiny with the item's own correct: The response rhymes.")


def item(group: str, scores: dict[str, float], version: str | None = None) -> ItemReward:
    criteria = {c: CriterionOutcome(s) for c, s in scores.items()}
    judges = {"j": JudgeOutcome(0.5, criteria=criteria)}
    return ItemReward("x", 0.5, "ok", judges=judges, group=group, version=version)


def observe(monitor: Monitor, items: list[ItemReward]) -> None:
    monitor.observe("tiny", "sha256:v", "r", BatchResult("tiny", "sha256:v", items, Usage()))


def test_an_items_own_criterion_never_counts_as_the_rubrics() -> None:
    monitor = Monitor(lambda _r: MonitorConfig(eval_every=16), clock=lambda: 0.0)
    library = [item(f"p{n // 4}", {"correct": 1.0}) for n in range(8)]
    own = [item(f"q{n // 4}", {"correct": 0.0}, RHYMES) for n in range(8)]
    observe(monitor, library + own)
    (state,) = monitor.runs()
    # The rubric's criterion: its own 8 samples, all passed.
    assert state.signals["criterion_pass_rate:correct"] == 1.0
    assert state.health is not None
    by_key = {c.criterion: c for c in state.health.criteria}
    assert (by_key["correct"].samples, by_key["correct"].pass_rate) == (8, 1.0)
    # The item's criterion: under its rubric's version, none passed.
    rhymes = own_key("correct", RHYMES)
    assert (by_key[rhymes].samples, by_key[rhymes].pass_rate) == (8, 0.0)
    assert set(by_key) == {"correct", rhymes}


def test_thousands_of_item_rubrics_keep_the_monitor_bounded() -> None:
    config = MonitorConfig(window=256, eval_every=64)
    monitor = Monitor(lambda _r: config, clock=lambda: 0.0)
    for b in range(100):  # 3200 prompts, each with its own rubric of three criteria
        own = [
            item(f"{b}-{n // 4}", {"a": 1.0, "b": 0.0, "c": 0.5}, version_of(f"{b}-{n // 4}"))
            for n in range(32)
        ]
        observe(monitor, own)
    observe(monitor, [item(f"lib-{n // 4}", {"correct": 1.0}) for n in range(64)])
    (state,) = monitor.runs()
    assert state.samples == 3264 and len(state.window) == config.window
    # Pass-rate signals are the rubric's criteria: its own, though item rubrics came first.
    assert list(state.criteria) == ["correct"]
    assert state.signals["criterion_pass_rate:correct"] == 1.0
    assert len(state.history.columns) <= MAX_COLUMNS
    assert state.health is not None and len(state.health.criteria) <= MAX_CRITERIA
    keys = {key for sample in state.window for key, _ in sample.scores}
    assert len(keys) <= 3 * config.window  # what the window holds, nothing beyond it


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The service over fake judges, with a reward log; yields its URL and the log."""
    log = tmp_path / "rewards.jsonl"
    with FakeJudge() as fake:
        library = write_library(tmp_path / "rubrics")
        settings = settings_for(library, reward_log=log)
        app = create_app(settings, registry=Registry(library, fake_pool(fake.url, fake.url)))
        with uvicorn_server(app) as url:
            yield url, log


def _health(url: str) -> dict[str, Any]:
    (run,) = httpx.get(f"{url}/v1/monitor", params={"run": "item-criteria"}).json()["runs"]
    return {c["criterion"]: c["samples"] for c in run["health"]["criteria"]}


def test_the_service_files_item_criteria_apart_in_its_monitor_and_reward_log(
    served: tuple[str, Path],
) -> None:
    url, log = served
    rhymes = [{"id": "correct", "text": "The response rhymes."}]
    items = [
        {"id": f"{p}-{g}", "prompt": f"Question {p}?", "completion": f"A{g}",
         **({"criteria": rhymes} if p == 1 else {})}
        for p in range(2)
        for g in range(4)
    ]  # fmt: skip
    body = {"rubric": "tiny", "run": "item-criteria", "items": items}
    reply = httpx.post(f"{url}/v1/rewards", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    own = {r["version"] for r in reply.json()["results"] if r["version"] is not None}
    (version,) = own
    key = own_key("correct", version)
    assert _health(url) == {"correct": 4, "polite": 4, key: 4}

    deadline = time.monotonic() + 10
    while len(reward_lines(log)) < len(items):  # the log is written off the event loop
        assert time.monotonic() < deadline, "the reward log lacks lines"
        time.sleep(0.05)
    assert [line.get("item_version") for line in reward_lines(log)] == [None] * 4 + [version] * 4
    (replayed,), problems = from_log(log, "item-criteria", None, lambda _r: MonitorConfig())
    assert problems == []
    assert {c["criterion"]: c["samples"] for c in replayed["health"]["criteria"]} == _health(url)
