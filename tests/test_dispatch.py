"""What a request's ``rubric`` names (rubric, recipe, routing table) and scoring with it.

These tests use recipes made of deterministic graders only, so no judge is involved; the
judged paths run against the real CPU judges in ``test_recipes_judges.py``.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_api_support import app_client, settings_for

from rewardsvc.application.targets import Target, plan_request, resolve_target, score_target
from rewardsvc.core.errors import ErrorKind, RequestError
from rewardsvc.core.recipe import Recipe
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders.registry import Graders
from rewardsvc.library.registry import Registry, load_pool
from rewardsvc.protocol.rewards import RewardRequest
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.planning import Cost
from rewardsvc.server.errors import STATUS_OF_KIND
from rewardsvc.server.service import Service

ROOT = Path(__file__).resolve().parent.parent
POOL = load_pool(ROOT / "deploy" / "cpu-judge" / "judges.yaml")

JSON_RECIPE = """\
kind: recipe
id: {id}
components:
  - id: valid-json
    weight: 1
    grader: {{type: json, schema: {{type: object, required: [name]}}}}
  - id: short
    weight: 1
    grader: {{type: length, max_words: 20}}
gates:
  - {{component: valid-json, threshold: 1.0, floor: 0.05}}
"""

REGEX_RECIPE = """\
kind: recipe
id: polite
components:
  - id: thanks
    grader: {type: regex, pattern: '(?i)thank', mode: must_match}
"""

ROUTING = """\
kind: routing
id: mixed
routes:
  structured: extract
  chat: polite
"""


def no_rubric(rubric_id: str) -> Rubric:
    raise RequestError(f"no rubric {rubric_id!r}", kind=ErrorKind.UNKNOWN_RUBRIC, field="rubric")


def same(rubric: Rubric) -> Rubric:
    return rubric


WIRED = pytest.mark.skipif(
    not hasattr(Service, "target"), reason="needs service wiring (application.targets)"
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A library with one rubric, two grader-only recipes and a routing table."""
    shutil.copy(ROOT / "rubrics" / "helpful-answer.yaml", tmp_path)
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "extract.yaml").write_text(JSON_RECIPE.format(id="extract"))
    (recipes / "polite.yaml").write_text(REGEX_RECIPE)
    (recipes / "mixed.yaml").write_text(ROUTING)
    return tmp_path


@pytest.fixture
def library(folder: Path) -> Registry:
    return Registry(folder, POOL)


@pytest.fixture(scope="module")
def graders() -> Iterator[Graders]:
    g = Graders()
    yield g
    g.close()


@pytest.fixture
async def engine(graders: Graders) -> AsyncIterator[Engine]:
    # No judges: any judge call would fail the request, so these rewards are graders' alone.
    e = Engine({}, graders=graders)
    yield e


def resolve(registry: Registry, value: Any) -> Target:
    return resolve_target(registry, value, no_rubric, same)


def test_an_id_names_a_rubric_a_recipe_or_a_routing_table(library: Registry) -> None:
    assert resolve(library, "helpful-answer").kind == "rubric"
    recipe = resolve(library, "extract")
    assert (recipe.kind, recipe.version) == ("recipe", library.recipe("extract").version)
    routing = resolve(library, "mixed")
    assert routing.kind == "routing"
    assert set(routing.routes) == {"extract", "polite"}
    assert all(t.kind == "recipe" for t in routing.routes.values())
    with pytest.raises(RequestError) as caught:
        resolve(library, "nope")
    assert STATUS_OF_KIND[caught.value.kind] == 404


def test_request_body_reads_a_recipe_object_as_a_recipe() -> None:
    doc = {"kind": "recipe", "id": "x", "components": [{"id": "a", "grader": {"type": "exact"}}]}
    body = RewardRequest.model_validate({"rubric": doc, "items": [{}]})
    assert isinstance(body.rubric, Recipe)
    body = RewardRequest.model_validate({"rubric": "x", "items": [{}]})
    assert body.rubric == "x"


def test_inline_recipe_errors_name_the_field(library: Registry) -> None:
    unknown = Recipe.model_validate(
        {"kind": "recipe", "id": "x", "components": [{"id": "a", "rubric": "no-such-rubric"}]}
    )
    with pytest.raises(RequestError) as caught:
        resolve(library, unknown)
    assert STATUS_OF_KIND[caught.value.kind] == 404
    assert caught.value.field == "rubric.components[0].rubric"
    inline = {
        "id": "r",
        "criteria": [{"id": "c", "text": "Is it fine?"}],
        "judges": ["no-such-judge"],
    }
    bad_judge = Recipe.model_validate(
        {"kind": "recipe", "id": "x", "components": [{"id": "a", "rubric": inline}]}
    )
    with pytest.raises(RequestError) as caught:
        resolve(library, bad_judge)
    assert STATUS_OF_KIND[caught.value.kind] == 422
    assert caught.value.field.startswith("rubric.components[0].rubric.judges")
    assert "no-such-judge" in str(caught.value)


async def test_grader_recipe_reports_components_gate_and_usage(
    library: Registry, engine: Engine
) -> None:
    items = [
        {"id": "good", "prompt": "p", "completion": '{"name": "Ada"}'},
        {"id": "bad", "prompt": "p", "completion": "not json"},
        {"id": "broken", "prompt": "p"},
    ]
    response = await score_target(resolve(library, "extract"), engine, items)
    assert response.rubric.kind == "recipe" and response.rubric.id == "extract"
    good, bad, broken = response.results
    assert (good.reward, good.status, good.decided_by) == (1.0, "ok", None)
    assert good.components is not None
    assert good.components["valid-json"].evidence
    assert (bad.reward, bad.status, bad.decided_by) == (0.05, "ok", "valid-json")
    assert broken.status == "rejected" and "completion" in (broken.error or "")
    assert response.usage.judge_calls == 0
    assert response.usage.grader_calls == 4  # two graders on the two readable items


async def test_routed_batch_is_split_scored_and_put_back_in_order(
    library: Registry, engine: Engine
) -> None:
    items = [
        {"prompt": "p", "completion": "Thank you!", "metadata": {"data_source": "chat"}},
        {"prompt": "p", "completion": '{"name": "A"}', "metadata": {"data_source": "structured"}},
        {"prompt": "p", "completion": "x", "metadata": {"data_source": "elsewhere"}},
        {"prompt": "p", "completion": "rude", "metadata": {"data_source": "chat"}},
        {"prompt": "p", "completion": "x"},
        {"prompt": 3, "completion": "x", "metadata": {"data_source": "chat"}},
    ]
    response = await score_target(resolve(library, "mixed"), engine, items)
    assert response.rubric.kind == "routing"
    results = response.results
    assert [r.id for r in results] == ["0", "1", "2", "3", "4", "5"]
    assert [r.reward for r in results] == [1.0, 1.0, None, 0.0, None, None]
    assert [r.scored_by.id if r.scored_by else None for r in results] == [
        "polite",
        "extract",
        None,
        "polite",
        None,
        None,
    ]
    assert "items[2].metadata.data_source" in (results[2].error or "")
    assert "'elsewhere' is not routed" in (results[2].error or "")
    assert "missing" in (results[4].error or "")
    assert "items[5].prompt" in (results[5].error or "")
    assert {r.status for r in (results[2], results[4], results[5])} == {"rejected"}
    assert response.usage.grader_calls == 2 + 1 * 2  # extract: 2 graders; polite: 1 each


async def test_grader_only_targets_plan_no_judge_call(library: Registry, engine: Engine) -> None:
    items = [
        {"id": "a", "prompt": "p", "completion": "{}", "metadata": {"data_source": "structured"}},
        {"id": "b", "prompt": "p", "completion": "thanks", "metadata": {"data_source": "chat"}},
    ]
    for name in ("extract", "mixed"):
        planned = await plan_request(resolve(library, name), engine, items)
        assert planned.cost == Cost(), name


@WIRED
async def test_recipes_and_routing_over_http(folder: Path) -> None:
    async with app_client(settings_for(folder), POOL) as (http, _, _):
        items = [
            {"prompt": "p", "completion": "Thanks!", "metadata": {"data_source": "chat"}},
            {"prompt": "p", "completion": "[1]", "metadata": {"data_source": "structured"}},
            {"prompt": "p", "completion": "x", "metadata": {"data_source": "other"}},
        ]
        reply = await http.post("/v1/rewards", json={"rubric": "mixed", "items": items})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["rubric"]["kind"] == "routing"
        assert [r["reward"] for r in body["results"]] == [1.0, 0.05, None]
        assert body["results"][1]["decided_by"] == "valid-json"
        assert body["results"][1]["scored_by"]["id"] == "extract"
        assert body["results"][2]["status"] == "rejected"
        assert body["usage"]["grader_calls"] == 3
        assert body["usage"]["judge_calls"] == 0

        inline = {"kind": "recipe", "id": "mine", "components": [{"id": "a", "rubric": "nope"}]}
        reply = await http.post("/v1/rewards", json={"rubric": inline, "items": items})
        assert reply.status_code == 404, reply.text
        assert reply.json()["field"] == "rubric.components[0].rubric"
