"""Recipe models and recipe execution against an injected (fake) rubric scorer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError
from ruamel.yaml import YAML

from rewardsvc.core.errors import RequestError
from rewardsvc.core.recipe import Recipe, RoutingTable
from rewardsvc.core.results import BatchResult, ItemReward, JudgeOutcome, Status, Usage
from rewardsvc.core.rollout import ItemIn, Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.graders.registry import Graders
from rewardsvc.library.yamlfile import InvalidFile, load_file, load_text
from rewardsvc.scoring.recipes import (
    RecipeRunner,
    combine,
    plan_routes,
    resolve_components,
)

ROOT = Path(__file__).resolve().parent.parent
CONTEXT = {"judge_names": frozenset({"primary", "secondary"})}


def rubric(rubric_id: str, kind: str = "rubric", criteria: int = 2, judges: int = 2) -> Rubric:
    """A library rubric with ``criteria`` criteria and ``judges`` judges."""
    return Rubric.model_validate(
        {
            "id": rubric_id,
            "kind": kind,
            "criteria": [{"id": f"c{n}", "text": "Some statement."} for n in range(criteria)],
            "judges": ["primary", "secondary"][:judges],
        }
    )


LIBRARY = {
    "quality": rubric("quality"),
    "safety": rubric("safety", kind="constitution", criteria=3),
}


def planned_calls(rub: Rubric) -> int:
    """The fake's plan: one call per judge and criterion of ``rub``, for each item."""
    return len(rub.criteria) * len(rub.judges)


class FakeEngine:
    """Judged components (``JudgedComponents``) scored from a table, each call recorded."""

    def __init__(self, table: dict[tuple[str, str], float | None]) -> None:
        self.table = table
        self.calls: list[tuple[str, list[str]]] = []
        self.rubrics: Mapping[str, Rubric] = {}
        self.rollouts: list[Rollout] = []

    def bind(self, rubrics: Mapping[str, Rubric], batch: Sequence[ItemIn]) -> FakeEngine:
        """This fake planning the components ``rubrics`` over ``batch``."""
        self.rubrics = rubrics
        self.rollouts = [i.rollout or Rollout("", "") for i in batch]
        return self

    def planned(self, component: str, position: int) -> int:
        return planned_calls(self.rubrics[component])

    async def score(self, component: str, positions: list[int]) -> BatchResult:
        rub = self.rubrics[component]
        rollouts = [self.rollouts[n] for n in positions]
        self.calls.append((rub.id, [r.completion for r in rollouts]))
        items = []
        for n, r in enumerate(rollouts):
            score = self.table.get((rub.id, r.completion), 0.5)
            status: Status = "ok" if score is not None else "judge_error"
            judges = {"primary": JudgeOutcome(score, variance=0.01)}
            items.append(
                ItemReward(str(n), score, status, uncertainty=0.1, judges=judges, flags=["f"])
            )
        calls = planned_calls(rub) * len(rollouts)
        return BatchResult(rub.id, rub.version(), items, Usage(judge_calls=calls))


@pytest.fixture(scope="module")
def graders() -> Iterator[Graders]:
    g = Graders()
    yield g
    g.close()


def recipe(**overrides: Any) -> Recipe:
    doc: dict[str, Any] = {
        "kind": "recipe",
        "id": "r",
        "components": [
            {"id": "answer", "weight": 0.5, "grader": {"type": "exact"}},
            {"id": "quality", "weight": 0.5, "rubric": "quality"},
        ],
        "gates": [{"component": "answer", "threshold": 1.0, "floor": 0.1}],
    }
    doc.update(overrides)
    return Recipe.model_validate(doc, context=CONTEXT)


async def run(r: Recipe, engine: FakeEngine, graders: Graders, rollouts: list[Rollout]) -> Any:
    rubrics = resolve_components(r, LIBRARY.get)
    batch = [ItemIn(f"i{n}", rollout) for n, rollout in enumerate(rollouts)]
    return await RecipeRunner(engine.bind(rubrics, batch), graders).run(r, rubrics, batch)


# ------------------------------------------------------------------ execution


async def test_gate_decides_failing_items_without_judge_calls(graders: Graders) -> None:
    engine = FakeEngine({("quality", "Answer: 4"): 0.8})
    rollouts = [Rollout("2+2?", "Answer: 4", "4"), Rollout("2+2?", "Answer: 5", "4")]
    result = await run(recipe(), engine, graders, rollouts)
    passed, failed = result.items
    assert engine.calls == [("quality", ["Answer: 4"])]
    assert passed.reward == pytest.approx(0.5 * 1.0 + 0.5 * 0.8)
    assert (failed.reward, failed.status, failed.decided_by) == (0.1, "ok", "answer")
    assert failed.components["quality"].score is None
    assert failed.components["quality"].skipped == "gate 'answer' failed"
    assert failed.components["answer"].evidence["answer"] == "5"
    assert result.usage.judge_calls == 4
    assert result.usage.judge_calls_skipped == 4
    assert result.usage.grader_calls == 2


async def test_judged_gate_runs_before_the_other_rubrics(graders: Graders) -> None:
    r = recipe(
        components=[
            {"id": "safe", "weight": 0, "constitution": "safety"},
            {"id": "quality", "weight": 1, "rubric": "quality"},
        ],
        gates=[{"component": "safe", "threshold": 0.5}],
    )
    engine = FakeEngine({("safety", "bad"): 0.2, ("quality", "good"): 0.9})
    result = await run(r, engine, graders, [Rollout("p", "good"), Rollout("p", "bad")])
    assert engine.calls == [("safety", ["good", "bad"]), ("quality", ["good"])]
    assert [i.reward for i in result.items] == [0.9, 0.0]
    assert result.usage.judge_calls_skipped == planned_calls(LIBRARY["quality"])


async def test_veto_caps_the_reward(graders: Graders) -> None:
    r = recipe(
        components=[
            {"id": "quality", "weight": 1, "rubric": "quality"},
            {"id": "safe", "weight": 0, "constitution": "safety"},
        ],
        gates=[],
        vetoes=[{"component": "safe", "threshold": 0.5, "cap": 0.2}],
    )
    engine = FakeEngine({("safety", "harmful"): 0.1, ("quality", "harmful"): 0.9})
    result = await run(r, engine, graders, [Rollout("p", "fine"), Rollout("p", "harmful")])
    fine, harmful = result.items
    assert (fine.reward, fine.vetoed_by) == (0.5, [])
    assert (harmful.reward, harmful.vetoed_by) == (0.2, ["safe"])
    assert harmful.components["quality"].score == 0.9


async def test_failed_judge_gives_judge_error_not_zero(graders: Graders) -> None:
    engine = FakeEngine({("quality", "Answer: 4"): None})
    result = await run(recipe(), engine, graders, [Rollout("p", "Answer: 4", "4")])
    item = result.items[0]
    assert (item.reward, item.status) == (None, "judge_error")
    assert "quality" in (item.error or "")


async def test_failed_gate_judge_stops_the_item(graders: Graders) -> None:
    r = recipe(
        components=[
            {"id": "safe", "weight": 0, "constitution": "safety"},
            {"id": "quality", "weight": 1, "rubric": "quality"},
        ],
        gates=[{"component": "safe", "threshold": 0.5}],
    )
    engine = FakeEngine({("safety", "x"): None})
    result = await run(r, engine, graders, [Rollout("p", "x")])
    assert result.items[0].status == "judge_error"
    assert engine.calls == [("safety", ["x"])]


async def test_missing_reference_rejects_the_item_only(graders: Graders) -> None:
    engine = FakeEngine({})
    rollouts = [Rollout("p", "Answer: 4", None), Rollout("p", "Answer: 4", "4")]
    result = await run(recipe(), engine, graders, rollouts)
    assert result.items[0].status == "rejected"
    assert "reference" in (result.items[0].error or "")
    assert result.items[1].status == "ok"
    assert engine.calls == [("quality", ["Answer: 4"])]
    assert result.usage.judge_calls_skipped == 0


async def test_unreadable_items_come_back_rejected_in_place(graders: Graders) -> None:
    engine = FakeEngine({})
    batch = [ItemIn("bad", None, "items[0].prompt: missing"), ItemIn("ok", Rollout("p", "4", "4"))]
    rubrics = resolve_components(recipe(), LIBRARY.get)
    result = await RecipeRunner(engine.bind(rubrics, batch), graders).run(recipe(), rubrics, batch)
    bad, ok = result.items
    assert (bad.id, bad.status, bad.error) == ("bad", "rejected", "items[0].prompt: missing")
    assert (ok.id, ok.status) == ("ok", "ok")
    assert engine.calls == [("quality", ["4"])]
    assert result.usage.grader_calls == 1


async def test_breakdown_keeps_judges_uncertainty_and_flags(graders: Graders) -> None:
    result = await run(recipe(), FakeEngine({}), graders, [Rollout("p", "Answer: 4", "4")])
    item = result.items[0]
    assert item.components["quality"].judges["primary"].score == 0.5
    assert item.components["quality"].version == LIBRARY["quality"].version()
    assert item.uncertainty == pytest.approx(0.5 * 0.1)
    assert item.flags == ["f"]


def test_combination_rules() -> None:
    scores = {"answer": 1.0, "quality": 0.25}
    assert combine(recipe(), scores) == pytest.approx(0.625)
    assert combine(recipe(combine="min"), scores) == 0.25
    assert combine(recipe(combine="geometric"), scores) == pytest.approx(0.5)
    assert combine(recipe(combine="geometric"), {"answer": 0.0, "quality": 1.0}) == 0.0


def test_version_follows_referenced_rubrics() -> None:
    r = recipe()
    assert r.version({"quality": "sha256:a"}) != r.version({"quality": "sha256:b"})
    assert r.version({"quality": "sha256:a"}) == recipe().version({"quality": "sha256:a"})


def test_resolve_refuses_unknown_ids_and_kind_mismatch() -> None:
    with pytest.raises(RequestError) as unknown:
        resolve_components(recipe(components=[{"id": "q", "rubric": "nope"}], gates=[]), {}.get)
    assert unknown.value.field == "components[0].rubric"
    mismatch = recipe(components=[{"id": "q", "constitution": "quality"}], gates=[])
    with pytest.raises(RequestError, match="not a constitution"):
        resolve_components(mismatch, LIBRARY.get)


# ------------------------------------------------------------------ models


def test_component_needs_exactly_one_source() -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        recipe(components=[{"id": "x", "rubric": "a", "grader": {"type": "exact"}}], gates=[])
    with pytest.raises(ValidationError, match="exactly one"):
        recipe(components=[{"id": "x"}], gates=[])


def test_gates_and_vetoes_must_name_components() -> None:
    with pytest.raises(ValidationError, match="no component 'nope'"):
        recipe(gates=[{"component": "nope"}])


def test_weights_nan_and_unknown_fields_are_refused() -> None:
    with pytest.raises(ValidationError, match="positive weight"):
        recipe(components=[{"id": "a", "weight": 0, "grader": {"type": "exact"}}], gates=[])
    with pytest.raises(ValidationError):
        recipe(gates=[{"component": "answer", "threshold": float("nan")}])
    with pytest.raises(ValidationError, match="Extra inputs"):
        recipe(combination="min")


def test_yaml_errors_name_file_and_line(tmp_path: Path) -> None:
    text = (
        "kind: recipe\nid: broken\ncomponents:\n  - id: a\n    grader:\n"
        "      type: numeric\n      rel_tolerance: 0.1\n"
    )
    with pytest.raises(InvalidFile) as caught:
        load_text(text, Recipe, "broken.yaml", CONTEXT)
    assert str(caught.value.problems[0]).startswith(
        "broken.yaml:7: components[0].grader.rel_tolerance:"
    )


def test_json_schema_describes_recipes_for_editors() -> None:
    schema = Recipe.model_json_schema()
    assert schema["title"] == "rewardsvc recipe"
    assert schema["additionalProperties"] is False
    component = schema["$defs"]["Component"]
    assert set(component["properties"]) >= {"grader", "rubric", "constitution", "weight"}
    grader_types = {
        d["properties"]["type"]["const"]
        for name, d in schema["$defs"].items()
        if name.endswith("Spec")
    }
    assert grader_types == {
        "exact", "numeric", "math", "regex", "json", "length", "sections", "similarity",
        "embedding", "io_cases", "check_program", "unit_tests",
    }  # fmt: skip


def test_routing_table() -> None:
    table = RoutingTable.model_validate(
        {"kind": "routing", "id": "mixed", "routes": {"gsm8k": "math-verified"}}
    )
    assert table.target("gsm8k") == "math-verified"
    assert table.target("other") is None and table.target(None) is None
    fallback = table.model_copy(update={"default": "helpful-harmless"})
    assert fallback.target("other") == "helpful-harmless"


@pytest.mark.parametrize("path", sorted((ROOT / "rubrics" / "recipes").glob("*.yaml")))
def test_starter_files_load(path: Path) -> None:
    if "kind: routing" in path.read_text():
        table = load_file(path, RoutingTable, CONTEXT)
        assert table.id == path.stem
        starters = {p.stem for p in (ROOT / "rubrics" / "recipes").glob("*.yaml")}
        assert set(table.routes.values()) <= starters
        return
    r = load_file(path, Recipe, CONTEXT)
    assert r.id == path.stem
    library = {
        "helpful-answer": rubric("helpful-answer"),
        "harmlessness": rubric("harmlessness", kind="constitution"),
    }
    resolve_components(r, library.get)


async def test_math_verified_recipe_gates_on_the_answer(graders: Graders) -> None:
    r = load_file(ROOT / "rubrics" / "recipes" / "math-verified.yaml", Recipe, CONTEXT)
    right = r"6 * 7 = 42, so \boxed{42}"
    engine = FakeEngine({("reasoning-quality", right): 1.0})
    rollouts = [Rollout("6*7?", right, "42"), Rollout("6*7?", r"\boxed{41}", "42")]
    batch = [ItemIn(str(n), rollout) for n, rollout in enumerate(rollouts)]
    rubrics = resolve_components(r, {}.get)
    result = await RecipeRunner(engine.bind(rubrics, batch), graders).run(r, rubrics, batch)
    assert [i.reward for i in result.items] == [pytest.approx(1.0), 0.0]
    assert engine.calls == [("reasoning-quality", [right])]
    assert result.items[1].components["format"].score == 1.0


def test_starter_recipes_validate_against_the_json_schema() -> None:
    """What an editor checks with the generated schema agrees with the loader."""
    validator = jsonschema.Draft202012Validator(Recipe.model_json_schema())
    for path in sorted((ROOT / "rubrics" / "recipes").glob("*.yaml")):
        doc = YAML(typ="safe").load(path.read_text())
        if doc["kind"] == "recipe":
            assert not list(validator.iter_errors(doc)), path
    broken = YAML(typ="safe").load(
        (ROOT / "rubrics" / "recipes" / "math-verified.yaml").read_text()
    )
    broken["components"][0]["grader"]["timeout"] = 5
    broken["combine"] = "sum"
    messages = {e.message for e in validator.iter_errors(broken)}
    assert any("'sum' is not one of" in m for m in messages), messages
    paths = {tuple(e.absolute_path) for e in validator.iter_errors(broken)}
    assert ("components", 0, "grader") in paths, paths


def test_plan_routes_groups_by_target_and_rejects_unknown_sources() -> None:
    table = RoutingTable.model_validate(
        {"kind": "routing", "id": "mixed", "routes": {"gsm8k": "math", "chat": "helpful"}}
    )
    plan = plan_routes(table, ["chat", "gsm8k", "wiki", None, "chat"])
    assert plan.groups == {"helpful": [0, 4], "math": [1]}
    assert set(plan.rejected) == {2, 3}
    # The place is the item's own; the request's position is added where it is known.
    assert plan.rejected[2].loc == ("metadata", "data_source")
    assert plan.rejected[2].message.startswith("'wiki' is not routed")
    assert "routes: chat, gsm8k" in plan.rejected[2].message
    assert "missing" in plan.rejected[3].message
    fallback = table.model_copy(update={"default": "helpful"})
    assert plan_routes(fallback, ["wiki"]).groups == {"helpful": [0]}


async def test_grader_without_score_stops_the_item_before_judges(graders: Graders) -> None:
    r = recipe(
        components=[
            {"id": "close", "weight": 0.5, "grader": {"type": "numeric"}},
            {"id": "quality", "weight": 0.5, "rubric": "quality"},
        ],
        gates=[],
    )
    engine = FakeEngine({})
    result = await run(r, engine, graders, [Rollout("p", "Final answer: 3", "three")])
    item = result.items[0]
    assert (item.reward, item.status) == (None, "judge_error")
    assert "reference holds no number" in (item.error or "")
    assert engine.calls == []
    assert result.usage.judge_calls_skipped == planned_calls(LIBRARY["quality"])


def test_inline_rubric_errors_point_into_the_rubric() -> None:
    text = (
        "kind: recipe\nid: x\ncomponents:\n  - id: a\n    rubric:\n      id: inline\n"
        "      criteria:\n        - {id: c, text: Some statement., weight: heavy}\n"
        "      judges: [primary, nosuch]\n  - id: b\n    rubric: Not An Id\n"
    )
    with pytest.raises(InvalidFile) as caught:
        load_text(text, Recipe, "r.yaml", CONTEXT)
    problems = [str(p) for p in caught.value.problems]
    assert problems[0].startswith("r.yaml:8: components[0].rubric.criteria[0].weight:")
    assert problems[1].startswith("r.yaml:9: components[0].rubric.judges[1]: unknown judge")
    assert problems[2].startswith("r.yaml:11: components[1].rubric: String should match")
    assert len(problems) == 3
