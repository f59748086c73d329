"""Golden sets: the library's sets validate against their rubrics; a judge whose answers
shift mid-run fires the golden alert at the first re-score after the shift, an unchanged
one never does over 100 re-scores; re-scores bypass the verdict cache (call counts); a
judge's identity change is recorded on the run's timeline and alerts; the simulator's
false-alarm count; the on-demand route and the Prometheus gauges."""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakejudge import FakeJudge
from fastapi import FastAPI
from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry
from test_monitor import Clock, batch, item

from bench import golden_drift
from rewardsvc.application.monitoring import GOLDEN_LABEL, canary_scorer
from rewardsvc.application.root import compose
from rewardsvc.cli import main
from rewardsvc.core.errors import ErrorKind, Unavailable
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.judge import build_judges
from rewardsvc.library.yamlfile import load_file
from rewardsvc.monitor import AlertEvent, Monitor
from rewardsvc.monitor.golden_runner import GoldenRunner
from rewardsvc.monitor.golden_set import GoldenSet, load_golden
from rewardsvc.scoring.engine import Engine
from rewardsvc.server import dashboard, golden
from rewardsvc.server.app import install_error_handlers
from rewardsvc.server.monitor_metrics import attach
from rewardsvc.server.service import Service, start_service
from rewardsvc.settings import Settings
from rewardsvc.storage.cache import VerdictCache

ROOT = Path(__file__).resolve().parent.parent
RUBRIC_ID = "short-answer-correctness"
RUBRIC = load_file(ROOT / "rubrics" / f"{RUBRIC_ID}.yaml", Rubric)
GOLDEN = load_golden(ROOT / "rubrics" / "golden")[RUBRIC_ID]


def test_the_library_ships_golden_sets_whose_labels_name_their_rubrics_criteria() -> None:
    sets = load_golden(ROOT / "rubrics" / "golden")
    assert {RUBRIC_ID, "instruction-following"} <= set(sets)
    for rubric_id, golden_set in sets.items():
        criteria = {
            c.id for c in load_file(ROOT / "rubrics" / f"{rubric_id}.yaml", Rubric).criteria
        }
        named = {c for i in golden_set.items for c in i.labels}
        assert named <= criteria, rubric_id
        labels = [
            v for i in golden_set.items for v in [*i.labels.values(), i.label] if v is not None
        ]
        assert True in labels and False in labels, rubric_id  # both answers are labelled


def test_validate_names_file_and_line_of_a_bad_golden_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "golden.yaml"
    bad.write_text(
        "rubric: short-answer-correctness\n"
        "items:\n"
        "  - id: fine\n    prompt: p\n    completion: c\n    label: true\n"
        "  - id: unlabelled\n    prompt: p\n    completion: c\n"
    )
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:7:" in out and "items[1]" in out and "labels" in out


def test_validate_tells_a_golden_set_without_its_rubric_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Known by its items, as a canary file is by its cases: not read as a rubric.
    bad = tmp_path / "golden.yaml"
    bad.write_text("items:\n  - id: a\n    prompt: p\n    completion: c\n    label: true\n")
    assert main(["validate", str(bad)]) == 1
    assert capsys.readouterr().out.splitlines() == [f"{bad}:1: rubric: Field required"]


def test_validate_names_a_label_that_is_no_criterion_of_the_rubric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "golden").mkdir()
    (tmp_path / f"{RUBRIC_ID}.yaml").write_text(
        (ROOT / "rubrics" / f"{RUBRIC_ID}.yaml").read_text(encoding="utf-8")
    )
    bad = tmp_path / "golden" / f"{RUBRIC_ID}.yaml"
    bad.write_text(
        f"rubric: {RUBRIC_ID}\n"
        "items:\n"
        "  - id: a\n    prompt: p\n    completion: c\n"
        "    labels: {final-answer-matches: true, made-up: false}\n"
    )
    assert main(["validate", str(bad)]) == 1  # the rubric is found in the file's library
    out = capsys.readouterr().out
    assert f"{bad}:6: items[0].labels.made-up: rubric {RUBRIC_ID!r} has no criterion" in out


class DriftingJudge:
    """A logprob judge for the engine: each golden question has its own P(yes); after
    ``shift_after`` calls it answers another model's P(yes); ``noise`` jitters each answer
    on the logit scale (a judge that is not bit-for-bit stable). Counts its calls."""

    def __init__(self, name: str, shift_after: int | None = None, noise: float = 0.0) -> None:
        self.name, self.shift_after, self.noise = name, shift_after, noise
        self.calls = 0
        self.rng = random.Random(7)

    def cache_identity(self) -> str:
        return f"drifting:{self.name}"

    async def ask(self, question: Any, *, deadline: float | None = None) -> Verdict:
        assert isinstance(question, CriterionOnItem)
        self.calls += 1
        key = f"{question.rollout.completion}|{question.criterion.id}"
        p = 0.05 + 0.9 * (zlib.crc32(key.encode()) % 1000) / 1000  # stable across runs
        if self.shift_after is not None and self.calls > self.shift_after:
            p = 1.0 - p  # another model: answers the other way round
        if self.noise:
            p = 1 / (1 + math.exp(-(math.log(p / (1 - p)) + self.rng.gauss(0, self.noise))))
        return Verdict(score=p, probs={"yes": p, "no": 1 - p})

    async def aclose(self) -> None:
        return None


def runner_over(
    engine: Engine, monitor: Monitor, identify: Any = None, **kwargs: Any
) -> GoldenRunner:
    async def unknown(_judge: str) -> None:
        return None

    return GoldenRunner(
        monitor,
        {RUBRIC_ID: GOLDEN},
        {RUBRIC_ID: ["primary"]},
        canary_scorer(engine, lambda _: RUBRIC, GOLDEN_LABEL),
        identify or unknown,
        **{"interval_s": 60.0, **kwargs},
    )


async def test_a_judge_whose_answers_shift_after_n_calls_fires_at_the_next_rescore() -> None:
    questions = len(GOLDEN.items) * len(RUBRIC.criteria)
    judge = DriftingJudge("primary", shift_after=3 * questions)
    events: list[AlertEvent] = []
    clock = Clock()
    monitor = Monitor(on_event=events.append, clock=clock)
    runner = runner_over(Engine({"primary": judge}), monitor)
    for _ in range(3):  # the baseline, then two re-scores of the same judge
        (rec,) = await runner.run_once()
        clock.now += 61
        assert not rec.alert and rec.shift in (None, 0.0)
    assert rec.accuracy is not None and rec.agreement is not None
    (rec,) = await runner.run_once()  # the first re-score after the shift
    assert judge.calls == 4 * questions
    assert rec.alert and rec.shift is not None and rec.shift >= GOLDEN.max_shift
    assert [(e.name, e.state, e.rubric) for e in events] == [
        ("golden:primary", "firing", RUBRIC_ID)
    ]

    app = FastAPI()
    app.include_router(dashboard.router)
    app.state.monitor = monitor
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        body = (await c.get("/v1/monitor", params={"history": "true"})).json()
    (out,) = body["golden"]
    assert (out["judge"], out["alert"], out["rescores"]) == ("primary", True, 4)
    assert out["shift"] == pytest.approx(rec.shift) and len(out["history"]) == 4

    registry = CollectorRegistry()
    attach(monitor, registry=registry)
    text = generate_latest(registry).decode()
    assert f'rewardsvc_judge_golden_alert{{judge="primary",rubric="{RUBRIC_ID}"}} 1.0' in text
    assert "rewardsvc_judge_golden_shift{" in text and "rewardsvc_judge_golden_accuracy{" in text


async def test_an_unchanged_noisy_judge_raises_no_alert_over_100_rescores() -> None:
    # Jittered as the simulator's unchanged judge is (sigma 0.3 on the logit scale).
    judge = DriftingJudge("primary", noise=0.3)
    events: list[AlertEvent] = []
    clock = Clock()
    monitor = Monitor(on_event=events.append, clock=clock)
    runner = runner_over(Engine({"primary": judge}), monitor)
    shifts = []
    for _ in range(101):
        (rec,) = await runner.run_once()
        shifts.append(rec.shift)
        clock.now += 61
    assert events == [] and rec.rescores == 101
    assert all(s is not None and 0 < s < GOLDEN.max_shift for s in shifts[1:])


async def test_golden_rescores_bypass_the_verdict_cache(tmp_path: Path) -> None:
    judge = DriftingJudge("primary")
    engine = Engine({"primary": judge}, VerdictCache(4096))
    clock = Clock()
    runner = runner_over(engine, Monitor(clock=clock))
    questions = len(GOLDEN.items) * len(RUBRIC.criteria)
    await runner.run_once()
    clock.now += 61
    await runner.run_once()
    assert judge.calls == 2 * questions  # asked again, although the cache is on


async def test_every_n_batches_makes_a_pair_due_before_its_interval() -> None:
    judge = DriftingJudge("primary")
    clock = Clock()
    monitor = Monitor(clock=clock)
    runner = runner_over(Engine({"primary": judge}), monitor, interval_s=3600, every_batches=2)
    assert len(await runner.run_once()) == 1
    assert await runner.run_once() == []
    monitor.observe("other", "v1", "run", batch([item(0.5, 10)]))
    assert await runner.run_once() == []
    monitor.observe("other", "v1", "run", batch([item(0.5, 10)]))
    assert len(await runner.run_once()) == 1


def pool_of(url: str) -> JudgePool:
    return JudgePool(
        judges={"primary": {"model": "fake", "base_urls": [url], "retries": 0, "revision": "r1"}}
    )


async def test_an_identity_change_is_on_the_runs_timeline_and_alerts_until_rebaselined(
    fake: FakeJudge,
) -> None:
    fake.script.model_entry = {"id": "fake", "root": "org/small-model", "max_model_len": 2048}
    judges = build_judges(pool_of(fake.url))
    events: list[AlertEvent] = []
    clock = Clock()
    monitor = Monitor(on_event=events.append, clock=clock)
    monitor.observe(RUBRIC_ID, "v1", "run-a", batch([item(0.5, 10)]))
    runner = runner_over(Engine(judges), monitor, identify=lambda n: judges[n].served_identity())
    await runner.identify_all()
    (ident,) = monitor.golden.identities()
    assert ident.identity == {
        "model": "fake",
        "revision": "r1",
        "served": "fake",
        "root": "org/small-model",
        "max_model_len": "2048",
    }
    await runner.run_once()
    assert events == [] and not ident.alert

    fake.script.model_entry = {"id": "fake", "root": "org/other-model", "max_model_len": 4096}
    clock.now += 61
    await runner.run_once()
    assert ident.alert and ident.previous is not None
    assert ident.previous["root"] == "org/small-model"
    assert ident.identity["root"] == "org/other-model"
    assert [(e.name, e.state) for e in events] == [("judge_identity:primary", "firing")]
    (state,) = monitor.runs(RUBRIC_ID)
    marks = [(m.kind, m.name) for m in state.events]
    assert marks == [
        (
            "identity",
            "primary changed (max_model_len: 2048 -> 4096, "
            "root: org/small-model -> org/other-model)",
        )
    ]

    app = FastAPI()
    install_error_handlers(app)
    app.include_router(dashboard.router)
    app.include_router(golden.router)
    app.state.monitor, app.state.golden = monitor, runner
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        body = (await c.get("/v1/monitor", params={"history": "true"})).json()
        (judge_out,) = body["judges"]
        assert judge_out["alert"] and judge_out["previous"]["root"] == "org/small-model"
        (run_out,) = body["runs"]
        assert run_out["history"]["events"][0]["kind"] == "identity"
        reply = await c.post("/v1/monitor/golden", json={"rebaseline": True})
        assert reply.status_code == 200, reply.text
        (rescored,) = reply.json()["golden"]
        assert rescored["shift"] is None and rescored["rescores"] == 3
        bad = await c.post("/v1/monitor/golden", json={"rubric": "nope"})
        assert bad.status_code == 422 and bad.json()["field"] == "rubric"
    assert not ident.alert and events[-1].state == "resolved"


async def test_an_on_demand_rescore_while_one_runs_is_refused() -> None:
    monitor = Monitor(clock=Clock())
    runner = runner_over(Engine({"primary": DriftingJudge("primary")}), monitor)
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(golden.router)
    app.state.golden = runner
    async with (
        runner._lock,  # a re-score in flight
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c,
    ):
        reply = await c.post("/v1/monitor/golden", json={})
    assert reply.status_code == 429 and reply.json()["error"] == "overloaded"


def test_the_simulator_counts_no_false_alarm_in_10000_rescores_of_an_unchanged_judge() -> None:
    for rubric in (RUBRIC_ID, "instruction-following"):
        result = golden_drift.run(rubric, 10_000, 0.3, 1.5, seed=41)
        assert result["false_alarm_rate"] < 0.001, result
        assert result["detection_rate"] > 0.95, result


def test_a_golden_set_refuses_duplicate_ids_and_too_many_items() -> None:
    one = {"id": "a", "prompt": "p", "completion": "c", "label": True}
    with pytest.raises(ValueError, match="unique"):
        GoldenSet(rubric="r", items=[one, one])
    with pytest.raises(ValueError, match="at most 64"):
        GoldenSet(rubric="r", items=[{**one, "id": f"i{n}"} for n in range(65)])


def fake_pool(fake: FakeJudge, folder: Path) -> Path:
    """A pool file binding the library's judge names to the fake judge."""
    pool = folder / "judges.yaml"
    pool.write_text(
        "judges:\n"
        + "".join(
            f"  {name}:\n    model: fake\n    base_urls: ['{fake.url}']\n    retries: 0\n"
            for name in ("primary", "secondary")
        )
    )
    return pool


async def test_the_service_composes_a_golden_runner_over_the_library(
    fake: FakeJudge, tmp_path: Path
) -> None:
    pool = fake_pool(fake, tmp_path)
    settings = Settings(rubrics_dir=ROOT / "rubrics", judge_pool=pool, golden_every_batches=5)
    app = await compose(settings)
    try:
        runner = app.golden
        assert runner is not None and {RUBRIC_ID, "instruction-following"} <= set(runner.sets)
        assert runner.every_batches == 5 and runner.judges[RUBRIC_ID] == ["primary", "secondary"]
        (rec,), deferred = await runner.rescore(RUBRIC_ID, "secondary")
        assert deferred == [] and rec.answered == len(GOLDEN.items)
        assert fake.script.requests == len(GOLDEN.items) * len(RUBRIC.criteria)
        assert app.monitor is not None and app.monitor.runs() == []  # not a run's traffic
        (ident,) = app.monitor.golden.identities()
        assert (ident.judge, ident.identity["served"]) == ("secondary", "fake")
    finally:
        await app.aclose()
    off = await compose(Settings(rubrics_dir=ROOT / "rubrics", judge_pool=pool, golden_budget=0))
    try:
        assert off.golden is None
    finally:
        await off.aclose()


async def test_golden_rescores_are_admitted_and_a_refusal_leaves_the_pair_for_later() -> None:
    admitted: list[tuple[int, int, int]] = []
    full = False

    @contextlib.contextmanager
    def admit(items: int, calls: int, prompt_bytes: int) -> Iterator[None]:
        if full:
            raise Unavailable("no slot", kind=ErrorKind.OVERLOADED)
        admitted.append((items, calls, prompt_bytes))
        yield

    judge = DriftingJudge("primary")
    clock = Clock()
    monitor = Monitor(clock=clock)
    runner = GoldenRunner(
        monitor,
        {RUBRIC_ID: GOLDEN},
        {RUBRIC_ID: ["primary"]},
        canary_scorer(Engine({"primary": judge}), lambda _: RUBRIC, GOLDEN_LABEL, admit),
        lambda _judge: asyncio.sleep(0, None),
        interval_s=60.0,
    )
    await runner.run_once()
    questions = len(GOLDEN.items) * len(RUBRIC.criteria)
    ((items, calls, prompt_bytes),) = admitted
    assert (items, calls) == (len(GOLDEN.items), questions) and prompt_bytes > 0
    full = True
    clock.now += 61
    assert await runner.run_once() == [] and judge.calls == questions  # refused: not asked
    full = False
    clock.now += 61
    assert len(await runner.run_once()) == 1 and judge.calls == 2 * questions


async def test_the_service_admits_its_golden_rescores_through_its_gate(
    fake: FakeJudge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, int]] = []
    real = Service.admitted

    def spy(
        self: Service, items: int, calls: int, prompt_bytes: int = 0, sandbox_s: float = 0.0
    ) -> contextlib.AbstractContextManager[None]:
        seen.append((items, calls))
        return real(self, items, calls, prompt_bytes, sandbox_s)

    monkeypatch.setattr(Service, "admitted", spy)
    settings = Settings(
        rubrics_dir=ROOT / "rubrics", judge_pool=fake_pool(fake, tmp_path), canary_budget=0
    )
    service = await start_service(settings)
    try:
        assert service.monitor is not None
        while len(service.monitor.golden.records()) < 4:  # the start-up round: 2 sets x 2
            await asyncio.sleep(0.05)
    finally:
        await service.aclose()
    questions = len(GOLDEN.items) * len(RUBRIC.criteria)
    assert seen.count((len(GOLDEN.items), questions)) == 2  # each judge's re-score
    assert len(seen) == 4
