"""Recipes against the real CPU judges: gates save judge calls, routing serves mixed data.

The first test drives the real engine and judges directly (the recipe runner with
``engine_scorer``). The HTTP tests need recipes and routing tables wired into the
registry and ``POST /v1/rewards``; they are marked until that wiring lands.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import Service

from rewardsvc.core.pool import JudgePool
from rewardsvc.core.recipe import Recipe
from rewardsvc.core.results import BatchResult
from rewardsvc.core.rollout import ItemIn, Rollout, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders.run import Graders
from rewardsvc.judges.judge import build_judges
from rewardsvc.library.yamlfile import load_file
from rewardsvc.scoring.cache import VerdictCache
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.recipes import (
    RecipeRunner,
    engine_scorer,
    planned_calls,
    resolve_components,
)

ROOT = Path(__file__).resolve().parent.parent
RECIPES = ROOT / "rubrics" / "recipes"
CONTEXT = {"judge_names": frozenset({"primary", "secondary"})}

RIGHT = [
    r"6 times 7 is 42, so the answer is \boxed{42}.",
    r"Half of 9 is 4.5, that is \boxed{\frac{9}{2}}.",
]
WRONG = [r"6 times 7 is 43, so \boxed{43}.", r"Half of 9 is \boxed{4}."]
REFERENCES = ["42", "4.5", "42", "4.5"]

WIRED = pytest.mark.skip(reason="waiting for recipes and routing in /v1/rewards (issue #16)")


@pytest.fixture
def graders() -> Iterator[Graders]:
    g = Graders()
    yield g
    g.close()


@pytest.mark.judges
async def test_gate_gives_floor_with_zero_judge_calls_on_real_judges(
    cpu_pool: JudgePool, graders: Graders
) -> None:
    recipe = load_file(RECIPES / "math-verified.yaml", Recipe, CONTEXT)
    rubrics = resolve_components(recipe, {}.get)
    engine = Engine(build_judges(cpu_pool), cache=VerdictCache())
    real = engine_scorer(engine)
    sent: list[str] = []

    async def recording(
        rubric: Rubric, rollouts: list[Rollout], options: ScoreOptions | None
    ) -> BatchResult:
        sent.extend(r.completion for r in rollouts)
        return await real(rubric, rollouts, options)

    batch = [
        ItemIn(str(n), Rollout("Compute it.", text, ref))
        for n, (text, ref) in enumerate(zip([*RIGHT, *WRONG], REFERENCES, strict=True))
    ]
    try:
        result = await RecipeRunner(recording, graders).run(recipe, rubrics, batch)
    finally:
        await engine.aclose()

    assert sent == RIGHT
    per_item = planned_calls(rubrics["reasoning"])
    assert result.usage.judge_calls == len(RIGHT) * per_item
    assert result.usage.judge_calls_skipped == len(WRONG) * per_item
    for item in result.items[: len(RIGHT)]:
        assert item.status == "ok", item
        assert item.decided_by is None
        assert item.reward is not None and 0.7 <= item.reward <= 1.0
        reasoning = item.components["reasoning"]
        assert set(reasoning.judges) == {"primary", "secondary"}
        assert reasoning.score is not None
    for item in result.items[len(RIGHT) :]:
        assert (item.reward, item.status, item.decided_by) == (0.0, "ok", "answer")
        assert item.components["reasoning"].judges == {}
        assert item.components["answer"].evidence is not None


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
    assert body["usage"]["judge_calls_skipped"] > 0
    results = body["results"]
    assert [r["reward"] for r in results[len(RIGHT) :]] == [0.0, 0.0]
    assert all(r["status"] == "ok" for r in results)


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
    results = {r["id"]: r for r in reply.json()["results"]}
    assert results["math"]["status"] == "ok" and results["math"]["reward"] >= 0.7
    # Not valid JSON (the closing brace is missing): the schema gate decides it.
    assert (results["json"]["reward"], results["json"]["status"]) == (0.0, "ok")
    assert results["chat"]["status"] in ("ok", "degraded")
    assert results["unknown"]["status"] == "rejected"
    assert "no-such-source" in results["unknown"]["error"]
