"""Recipes against the real CPU judges: gates save judge calls, routing serves mixed data.

The first tests drive the real engine and judges directly (the recipe runner with the
engine's ``ComponentPlans``; grader criteria inside a rubric). The HTTP tests need the service to
score through ``rewardsvc.application.targets``; they skip until it does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Service

from rewardsvc.core.pool import JudgePool
from rewardsvc.core.recipe import Recipe
from rewardsvc.core.results import BatchResult
from rewardsvc.core.rollout import ItemIn, Rollout, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.graders.registry import Graders
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.library.yamlfile import load_file
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.recipe_plan import ComponentPlans
from rewardsvc.scoring.recipes import RecipeRunner, resolve_components
from rewardsvc.server.service import Service as RunningService
from rewardsvc.storage.cache import VerdictCache

ROOT = Path(__file__).resolve().parent.parent
RECIPES = ROOT / "rubrics" / "recipes"
CONTEXT = {"judge_names": frozenset({"primary", "secondary"})}

RIGHT = [
    r"6 times 7 is 42, so the answer is \boxed{42}.",
    r"Half of 9 is 4.5, that is \boxed{\frac{9}{2}}.",
]
WRONG = [r"6 times 7 is 43, so \boxed{43}.", r"Half of 9 is \boxed{4}."]
REFERENCES = ["42", "4.5", "42", "4.5"]

WIRED = pytest.mark.skipif(
    not hasattr(RunningService, "target"), reason="needs service wiring (application.targets)"
)

GRADED_RUBRIC = {
    "id": "graded-answer",
    "requires_reference": True,
    "criteria": [
        {"id": "polite", "text": "The answer is polite and to the point."},
        {"id": "exact", "category": "essential", "grader": {"type": "numeric"}},
    ],
    "judges": ["primary", "secondary"],
}


@pytest.fixture
def graders() -> Iterator[Graders]:
    g = Graders()
    g.warm()  # as the service does at start-up: math-verify's import is not a grading deadline
    yield g
    g.close()


@pytest.mark.judges
async def test_gate_gives_floor_with_zero_judge_calls_on_real_judges(
    cpu_pool: JudgePool, graders: Graders
) -> None:
    recipe = load_file(RECIPES / "math-verified.yaml", Recipe, CONTEXT)
    rubrics = resolve_components(recipe, {}.get)
    engine = Engine(build_judges(cpu_pool), cache=VerdictCache())
    sent: list[str] = []
    batch = [
        ItemIn(str(n), Rollout("Compute it.", text, ref))
        for n, (text, ref) in enumerate(zip([*RIGHT, *WRONG], REFERENCES, strict=True))
    ]

    class Recording(ComponentPlans):
        async def score(self, component: str, positions: list[int]) -> BatchResult:
            sent.extend(batch[n].rollout.completion for n in positions)  # type: ignore[union-attr]
            return await super().score(component, positions)

    try:
        plans = await ComponentPlans.of(engine, recipe, rubrics, batch)
        recording = Recording(engine, plans.plans)
        result = await RecipeRunner(recording, graders).run(recipe, rubrics, batch)
    finally:
        await engine.aclose()

    assert sent == RIGHT
    per_item = plans.planned("reasoning", 0)
    assert per_item > 0
    assert result.usage.judge_calls == len(RIGHT) * per_item
    assert result.usage.judge_calls_skipped == len(WRONG) * per_item
    for item in result.items[: len(RIGHT)]:
        # A judge call may time out on a loaded machine (degraded); a gate never did.
        assert item.status in ("ok", "degraded"), item
        assert item.decided_by is None
        assert item.reward is not None and 0.7 <= item.reward <= 1.0
        reasoning = item.components["reasoning"]
        assert set(reasoning.judges) == {"primary", "secondary"}
        assert reasoning.score is not None
    for item in result.items[len(RIGHT) :]:
        assert (item.reward, item.status, item.decided_by) == (0.0, "ok", "answer")
        assert item.components["reasoning"].judges == {}
        assert item.components["answer"].evidence is not None


class RecordingJudge:
    """A real judge that records which criteria it was asked about."""

    def __init__(self, judge: Judge, asked: list[str]) -> None:
        self.judge, self.asked, self.name = judge, asked, judge.name

    def cache_identity(self) -> str:
        return self.judge.cache_identity()

    async def ask(self, question: Any, *, deadline: float | None = None) -> Verdict:
        assert isinstance(question, CriterionOnItem), "not a holistic rubric"
        self.asked.append(question.criterion.id)
        return await self.judge.ask(question, deadline=deadline)

    async def aclose(self) -> None:
        await self.judge.aclose()


@pytest.mark.judges
async def test_grader_criteria_in_a_rubric_cost_no_judge_call(
    cpu_pool: JudgePool, graders: Graders
) -> None:
    rubric = Rubric.model_validate(GRADED_RUBRIC, context=CONTEXT)
    asked: list[str] = []
    judges = {n: RecordingJudge(j, asked) for n, j in build_judges(cpu_pool).items()}
    engine = Engine(judges, graders=graders)
    batch = [
        ItemIn("right", Rollout("What is 6 times 7?", "It is 42.", "42")),
        ItemIn("wrong", Rollout("What is 6 times 7?", "It is 41.", "42")),
    ]
    try:
        result = await engine.score(rubric, batch, ScoreOptions(use_cache=False))
    finally:
        await engine.aclose()

    assert sorted(asked) == ["polite"] * 4  # two items, two judges, one judged criterion
    assert (result.usage.judge_calls, result.usage.grader_calls) == (4, 2)
    right, wrong = result.items
    for item, expected in ((right, 1.0), (wrong, 0.0)):
        assert item.status in ("ok", "degraded"), item
        for outcome in item.judges.values():
            exact = outcome.criteria["exact"]
            assert (exact.score, exact.error) == (expected, None)
            assert exact.evidence is not None and exact.evidence.get("answer") is not None
            assert outcome.criteria["polite"].evidence is None
    # The essential grader criterion weighs 5 against the judged one's 3.
    assert right.reward is not None and right.reward >= 5 / 8
    assert wrong.reward is not None and wrong.reward <= 3 / 8


@WIRED
@pytest.mark.judges
def test_recipe_by_id_over_http_reports_skipped_calls(service: Service) -> None:
    items = [
        {"id": str(n), "prompt": "Compute it.", "completion": text, "reference": ref}
        for n, (text, ref) in enumerate(zip([*RIGHT, *WRONG], REFERENCES, strict=True))
    ]
    reply = httpx.post(
        f"{service.url}/v1/rewards", json={"rubric": "math-verified", "items": items}, timeout=300
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["rubric"]["kind"] == "recipe"
    per_item = 2 * 3  # reasoning-quality: two judges, three criteria
    usage = body["usage"]
    assert usage["judge_calls"] + usage["cache_hits"] == len(RIGHT) * per_item
    assert usage["judge_calls_skipped"] == len(WRONG) * per_item
    assert usage["grader_calls"] == 2 * len(items)  # answer and format, on every item
    results = body["results"]
    assert [r["reward"] for r in results[len(RIGHT) :]] == [0.0, 0.0]
    assert [r["decided_by"] for r in results] == [None, None, "answer", "answer"]
    assert [r["status"] for r in results[len(RIGHT) :]] == ["ok", "ok"]
    assert all(r["status"] in ("ok", "degraded") for r in results[: len(RIGHT)])
    for r in results[len(RIGHT) :]:
        assert r["components"]["reasoning"]["judges"] == {}
        assert r["components"]["reasoning"]["skipped"] == "gate 'answer' failed"
    for r in results[: len(RIGHT)]:
        assert set(r["components"]["reasoning"]["judges"]) == {"primary", "secondary"}


@WIRED
@pytest.mark.judges
def test_inline_rubric_with_a_grader_criterion_over_http(service: Service) -> None:
    items = [
        {"id": "right", "prompt": "6 times 7?", "completion": "It is 42.", "reference": "42"},
        {"id": "wrong", "prompt": "6 times 7?", "completion": "It is 41.", "reference": "42"},
    ]
    reply = httpx.post(
        f"{service.url}/v1/rewards",
        json={"rubric": GRADED_RUBRIC, "items": items, "options": {"use_cache": False}},
        timeout=300,
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert (body["usage"]["judge_calls"], body["usage"]["grader_calls"]) == (4, 2)
    right, wrong = body["results"]
    for result, expected in ((right, 1.0), (wrong, 0.0)):
        for judge in result["judges"].values():
            assert judge["criteria"]["exact"]["score"] == expected
            assert judge["criteria"]["exact"]["evidence"]


@WIRED
@pytest.mark.judges
def test_routed_batch_of_three_task_types(service: Service) -> None:
    items = [
        {
            "id": "math",
            "prompt": "What is 6 times 7?",
            "completion": RIGHT[0],
            "reference": "42",
            "metadata": {"data_source": "gsm8k"},
        },
        {
            "id": "json",
            "prompt": "List the entities in: Ada Lovelace worked with Charles Babbage in London.",
            "completion": '{"entities": [{"name": "Ada Lovelace", "type": "person"}]',
            "metadata": {"data_source": "entities"},
        },
        {
            "id": "chat",
            "prompt": "How do I boil an egg?",
            "completion": "Put it in boiling water for 8 to 10 minutes, then cool it.",
            "metadata": {"data_source": "chat"},
        },
        {
            "id": "unknown",
            "prompt": "x",
            "completion": "y",
            "metadata": {"data_source": "no-such-source"},
        },
    ]
    reply = httpx.post(
        f"{service.url}/v1/rewards", json={"rubric": "mixed-tasks", "items": items}, timeout=300
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["rubric"]["kind"] == "routing"
    results = {r["id"]: r for r in body["results"]}
    assert [r["id"] for r in body["results"]] == ["math", "json", "chat", "unknown"]
    assert results["math"]["scored_by"]["id"] == "math-verified"
    assert results["json"]["scored_by"]["id"] == "json-extraction"
    assert results["chat"]["scored_by"]["id"] == "helpful-harmless"
    assert set(results["chat"]["components"]) == {"helpful", "harmless"}
    assert results["math"]["status"] in ("ok", "degraded")
    assert results["math"]["reward"] >= 0.7
    # Not valid JSON (the closing brace is missing): the schema gate decides it.
    assert (results["json"]["reward"], results["json"]["status"]) == (0.0, "ok")
    assert results["chat"]["status"] in ("ok", "degraded")
    assert results["unknown"]["status"] == "rejected"
    assert "no-such-source" in results["unknown"]["error"]
