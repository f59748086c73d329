"""Canaries scored through the real CPU judges (vLLM, SmolLM2 and Gemma 3): the runner, the
engine and both API shapes work together, and ``GET /v1/monitor`` reports each judge's
scores of the shipped attacks against the known-bad anchor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rewardsvc.application.monitoring import canary_scorer
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import build_judges
from rewardsvc.library.yamlfile import load_file
from rewardsvc.monitor import CanaryRunner, Monitor, load_canaries
from rewardsvc.scoring.engine import Engine
from tests.test_monitor_canaries import monitor_report

ROOT = Path(__file__).resolve().parent.parent
RUBRIC = "short-answer-correctness"

pytestmark = pytest.mark.judges


@pytest.fixture
async def engine(cpu_pool: JudgePool) -> AsyncIterator[Engine]:
    # A shared 2-core machine can take a minute per call: a timeout is not what this tests.
    slow = cpu_pool.model_dump()
    for judge in slow["judges"].values():
        judge["timeout_s"] = 600
    engine = Engine(build_judges(JudgePool.model_validate(slow)))
    yield engine
    await engine.aclose()


async def test_canaries_through_the_cpu_judges_report_every_judge_and_attack(
    engine: Engine,
) -> None:
    rubric = load_file(ROOT / "rubrics" / f"{RUBRIC}.yaml", Rubric)
    canaries = load_canaries(ROOT / "rubrics" / "canaries")[RUBRIC]
    judges = ["primary", "secondary"]
    monitor = Monitor()
    runner = CanaryRunner(
        monitor,
        {RUBRIC: canaries},
        {RUBRIC: judges},
        canary_scorer(engine, lambda _: rubric),
        budget_items=64,
    )
    assert len(await runner.run_once()) == 2
    attacks = {name for case in canaries.cases for name in case.attacks}
    records = monitor.canaries(RUBRIC)
    assert {(c.judge, c.attack) for c in records} == {(j, a) for j in judges for a in attacks}
    for c in records:
        assert c.reward is not None and c.anchor_reward is not None, (c.judge, c.attack)
        assert c.alert == (c.reward - c.anchor_reward >= canaries.margin)

    body = await monitor_report(monitor, rubric=RUBRIC)
    assert {c["judge"] for c in body["canaries"]} == set(judges)
    for c in body["canaries"]:
        print(
            c["judge"], c["attack"], c["reward"], c["anchor_reward"], c["good_reward"], c["alert"]
        )
