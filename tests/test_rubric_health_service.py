"""Rubric health through the real service: ``POST /v1/rewards`` batches whose completions
all score alike (scripted fake judges answering with one confident distribution) raise
``non_discriminative`` naming both saturated criteria, in ``GET /v1/monitor`` and the reward
log; ``rewardsvc rubrics health`` reads the same figures from the route and from the log."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fakejudge import FakeJudge
from test_api_support import fake_pool, settings_for, uvicorn_server, write_library

from rewardsvc.authoring.health import from_log
from rewardsvc.cli import main
from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.library.registry import Registry
from rewardsvc.server.app import create_app

KEY = "health-test-key"
BATCHES, PROMPTS, GROUP = 5, 4, 4


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The service over fake judges that say "yes" with p 0.99 to everything, with a
    reward log and an API key; yields its URL and the log's path, after the traffic."""
    log = tmp_path / "rewards.jsonl"
    with FakeJudge() as primary, FakeJudge() as secondary:
        for fake in (primary, secondary):
            fake.script.first_choice_p = 0.99
        library = write_library(tmp_path / "rubrics")
        pool = fake_pool(primary.url, secondary.url)
        settings = settings_for(library, reward_log=log, api_keys=KEY)
        app = create_app(settings, registry=Registry(library, pool))
        with uvicorn_server(app) as url:
            headers = {"Authorization": f"Bearer {KEY}"}
            for b in range(BATCHES):
                items = [
                    {"id": f"{b}-{p}-{g}", "prompt": f"Question {b}.{p}?", "completion": f"A{g}"}
                    for p in range(PROMPTS)
                    for g in range(GROUP)
                ]
                body = {"rubric": "tiny", "run": "grpo", "items": items}
                reply = httpx.post(f"{url}/v1/rewards", json=body, headers=headers, timeout=30)
                assert reply.status_code == 200, reply.text
            deadline = time.monotonic() + 10
            while not _alert_lines(log):  # the log is written off the event loop
                assert time.monotonic() < deadline, "no alert line in the reward log"
                time.sleep(0.05)
            yield url, log


def _alert_lines(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    lines = [json.loads(t) for t in log.read_text().splitlines()]
    return [line for line in lines if line.get("event") == "monitor_alert"]


def test_the_alert_and_the_health_reach_the_route_the_log_and_the_command(
    service: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, log = service
    reply = httpx.get(
        f"{url}/v1/monitor", params={"run": "grpo"}, headers={"Authorization": f"Bearer {KEY}"}
    )
    (run,) = reply.json()["runs"]
    health = run["health"]
    assert run["samples"] == BATCHES * PROMPTS * GROUP
    assert health["groups"] == BATCHES * PROMPTS and health["zero_spread_share"] == 1.0
    assert health["saturated"] == ["correct", "polite"]
    assert all(c["discrimination"] == 0.0 for c in health["criteria"])
    (alert,) = [a for a in run["alerts"] if a["name"] == "non_discriminative"]
    assert alert["state"] == "firing" and alert["criteria"] == ["correct", "polite"]
    (line,) = _alert_lines(log)
    assert line["alert"] == "non_discriminative" and line["criteria"] == ["correct", "polite"]

    # The log replayed into a monitor gives the route's figures.
    (replayed,), problems = from_log(log, "grpo", None, lambda _r: MonitorConfig())
    assert problems == []
    assert replayed["health"]["groups"] == health["groups"]
    assert replayed["health"]["zero_spread_groups"] == health["zero_spread_groups"]
    assert replayed["health"]["saturated"] == health["saturated"]
    for mine, theirs in zip(replayed["health"]["criteria"], health["criteria"], strict=True):
        assert mine["criterion"] == theirs["criterion"]
        assert mine["pass_rate"] == pytest.approx(theirs["pass_rate"])
    assert replayed["alert"]["state"] == "firing"

    # The command: exit 1 while the alert fires, from either source.
    capsys.readouterr()
    assert main(["rubrics", "health", "grpo", "--url", url, "--api-key", KEY, "--json"]) == 1
    (from_route,) = json.loads(capsys.readouterr().out)
    assert from_route["health"] == health and from_route["alert"]["criteria"] == alert["criteria"]
    assert main(["rubrics", "health", "grpo", "--log", str(log)]) == 1
    text = capsys.readouterr().out
    assert "non_discriminative: firing" in text
    assert "saturated criteria: correct (high, 0.99" in text and "polite (high" in text
    assert main(["rubrics", "health", "grpo", "--url", url]) == 2  # no key: 401
    assert "HTTP 401" in capsys.readouterr().err
    assert main(["rubrics", "health", "nope", "--log", str(log)]) == 2


def test_a_bad_log_line_is_named_and_skipped(tmp_path: Path) -> None:
    log = tmp_path / "rewards.jsonl"
    good = {"rubric": "qa", "version": "v", "run": "r", "reward": 0.5, "status": "ok"}
    rows = [json.dumps(good), "{not json", json.dumps({**good, "status": "great"})]
    log.write_text("\n".join(rows) + "\n")
    (report,), problems = from_log(log, "r", None, lambda _r: MonitorConfig())
    assert report["samples"] == 1
    assert [p.split(": ", 1)[0] for p in problems] == [f"{log}:2", f"{log}:3"]
    assert "status 'great'" in problems[1]
