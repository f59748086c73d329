"""Agentic judges in the run's monitor (issue 39): each request's usage counts its tool
loops by how they ended and their tool calls; the monitor keeps them per (rubric, run),
``GET /v1/monitor`` and the dashboard show them, and the ``tool_loops_unfinished`` alert
fires when the share of loops ending without a verdict moves from the run's baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_agentic_rubrics import RUBRIC, TOOLS, _item, serving
from test_unit_tests_grader import WRONG

from rewardsvc.core.results import BatchResult, Usage
from rewardsvc.monitor import Monitor
from rewardsvc.monitor.alerts import AlertEvent
from rewardsvc.monitor.toolloops import ABSOLUTE, BASELINE, MIN_LOOPS, RISE, ToolLoops
from rewardsvc.sandbox.run import RunRequest


def _batch(finished: int, failed: int = 0, kind: str = "loop_turns", calls: int = 0) -> Usage:
    usage = Usage()
    for _ in range(finished):
        usage.looped("finished", 1)
    for _ in range(failed):
        usage.looped(kind, 1)
    usage.tool_calls += calls
    return usage


def test_usage_counts_loops_by_end_and_adds_them_up() -> None:
    both = _batch(2, 1, calls=1) + _batch(1, 2, kind="loop_wall")
    assert both.tool_loops == {"finished": 3, "loop_turns": 1, "loop_wall": 2}
    assert both.tool_calls == 7


def test_the_alert_fires_when_the_unfinished_share_rises_from_the_baseline() -> None:
    events: list[AlertEvent] = []
    loops = ToolLoops(events.append, clock=lambda: 1000.0)
    # The baseline: one loop in ten ends without a verdict.
    for _ in range(BASELINE // 10):
        assert loops.add("r", "run", _batch(9, 1)) is None
    (entry,) = loops.runs()
    assert entry.baseline == pytest.approx(0.1)
    assert entry.threshold == pytest.approx(0.1 + RISE) and entry.threshold < ABSOLUTE
    # A batch that moves the window's share past the baseline plus the rise fires.
    worse = _batch(0, 40, kind="loop_sandbox")
    fired = loops.add("r", "run", worse)
    assert fired is not None and fired.state == "firing", entry.unfinished_share
    assert fired.name == "tool_loops_unfinished" and fired.run == "run"
    assert entry.outcomes == {"finished": 90, "loop_turns": 10, "loop_sandbox": 40}
    assert entry.loops == 140 and entry.tool_calls == 140
    # Back under once the window is mostly finished loops again.
    resolved = loops.add("r", "run", _batch(200))
    assert resolved is not None and resolved.state == "resolved"
    assert [e.state for e in events] == ["firing", "resolved"]
    # Other runs and rubrics are counted apart; a batch without loops counts nothing.
    assert loops.add("r", "other", Usage()) is None
    assert [(e.rubric, e.run) for e in loops.runs()] == [("r", "run")]


def test_a_run_whose_loops_mostly_fail_from_the_start_alarms_without_a_baseline() -> None:
    loops = ToolLoops()
    assert loops.add("r", "run", _batch(1, MIN_LOOPS - 2)) is None  # too few loops yet
    fired = loops.add("r", "run", _batch(0, 1))
    assert fired is not None and fired.threshold == ABSOLUTE


def _loops(report: dict[str, Any], run: str) -> dict[str, Any]:
    (found,) = [e for e in report["tool_loops"] if e["run"] == run]
    return found


async def test_v1_monitor_shows_each_runs_tool_loops_and_their_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: list[RunRequest]
) -> None:
    async with serving(tmp_path, monkeypatch, TOOLS) as served:

        async def score(run: str, *items: dict[str, Any]) -> None:
            body = {"rubric": RUBRIC, "items": list(items), "run": run}
            reply = await served.client.post("/v1/rewards", json=body)
            assert reply.status_code == 200, reply.text

        # Three programs: a loop each (an identical item's verdict is joined, not looped).
        await score("checked", _item("a"), _item("b", WRONG))
        served.judge.script.tool_forever = ("run_tests", {})
        await score("looping", _item("c", "def add(a, b):\n    return b + a\n"))
        report = (await served.client.get("/v1/monitor")).json()
    checked, looping = _loops(report, "checked"), _loops(report, "looping")
    assert checked["rubric"] == looping["rubric"]
    assert checked["rubric"].startswith("inline:coded@")  # the run's monitor name
    # Each item's loop: the named run_tests, then the auto turn that stops.
    assert (checked["loops"], checked["tool_calls"]) == (2, 2)
    assert checked["outcomes"] == {"finished": 2} and checked["unfinished_share"] == 0.0
    # The named run_tests, then an auto turn that calls it again: over its turns.
    assert (looping["loops"], looping["tool_calls"]) == (1, 2)
    assert looping["outcomes"] == {"loop_turns": 1} and looping["unfinished_share"] == 1.0
    assert looping["alert"] is None  # fewer loops than the alert needs


def test_the_monitor_counts_a_batchs_loops_under_its_rubric_and_run() -> None:
    monitor = Monitor()
    monitor.observe("r", "v1", "run", BatchResult("r", "v1", [], _batch(1, 1, calls=3)))
    monitor.observe("r", "v1", None, BatchResult("r", "v1", [], Usage()))
    (entry,) = monitor.tool_loops.runs()
    assert (entry.rubric, entry.run, entry.loops, entry.tool_calls) == ("r", "run", 2, 5)
