"""Named objectives: declaration and validation, the pure values, the wire field, and the
service answering them (with the real CPU judges)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from rewardsvc.application.wire import recipe_result, reward_result
from rewardsvc.core.item_rubric import derive
from rewardsvc.core.objectives import (
    RecipeObjective,
    RubricObjective,
    group_score,
    recipe_objective,
    rubric_objective,
    rubric_objectives,
)
from rewardsvc.core.recipe import ComponentOutcome, Recipe, RecipeItemReward
from rewardsvc.core.results import CriterionOutcome, ItemReward, JudgeOutcome
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.yamlfile import InvalidFile, load_file, load_text
from rewardsvc.protocol.rewards import RewardResult

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "rubrics" / "recipes" / "math-objectives.yaml"
CONTEXT = {"judge_names": frozenset({"primary", "secondary"})}

RUBRIC_YAML = """\
id: obj
criteria:
  - {id: right, text: The answer is right., weight: 2}
  - {id: clear, text: The reply is clear., weight: 1}
  - {id: rude, text: The reply is rude., category: pitfall, weight: -1}
judges: [primary, {name: secondary, weight: 3}]
objectives:
  quality: {criteria: [clear, rude]}
  correct: {criteria: [right]}
  second: {judges: [secondary]}
"""


def rubric(text: str = RUBRIC_YAML) -> Rubric:
    return load_text(text, Rubric, "obj.yaml", CONTEXT)


def outcome(score: float | None, **criteria: float | None) -> JudgeOutcome:
    return JudgeOutcome(score, criteria={c: CriterionOutcome(s) for c, s in criteria.items()})


# ------------------------------------------------------------------ values


def test_a_criterion_group_combines_like_the_rubric_over_its_own_weights() -> None:
    r = rubric()
    crit = outcome(0.5, right=1.0, clear=0.8, rude=0.3).criteria
    # explicit: (1 * 0.8 - 1 * 0.3) / 1 (the group's positive weights only)
    assert group_score(r, ["clear", "rude"], crit) == pytest.approx(0.5)
    assert group_score(r, ["right"], crit) == 1.0
    # clipped to [0, 1]: the pitfall outweighs
    assert group_score(r, ["clear", "rude"], outcome(0.0, clear=0.1, rude=0.9).criteria) == 0.0
    worst = r.model_copy(update={"combine": "worst"})
    assert group_score(worst, ["clear", "rude"], crit) == pytest.approx(0.7)  # 1 - 0.3


def test_a_failed_criterion_gives_no_value_never_zero() -> None:
    r = rubric()
    failed = outcome(None, right=None, clear=0.8, rude=0.1)
    assert group_score(r, ["right"], failed.criteria) is None
    assert group_score(r, ["right"], outcome(None, clear=0.8).criteria) is None
    # The other judge scored it: its value alone, not a mean with a 0.
    fine = outcome(0.9, right=0.6, clear=0.8, rude=0.1)
    correct = r.objectives["correct"]  # type: ignore[index]
    assert rubric_objective(r, correct, {"primary": failed, "secondary": fine}) == 0.6
    assert rubric_objective(r, correct, {"primary": failed}) is None


def test_a_judge_objective_is_the_weighted_mean_of_its_judges_scores() -> None:
    r = rubric()
    judges = {"primary": outcome(0.2), "secondary": outcome(0.6)}
    both = RubricObjective(judges=["primary", "secondary"])
    assert rubric_objective(r, both, judges) == pytest.approx((0.2 + 3 * 0.6) / 4)
    assert rubric_objective(r, RubricObjective(judges=["secondary"]), judges) == 0.6
    assert rubric_objective(r, both, {"primary": outcome(None), "secondary": outcome(0.6)}) == 0.6
    # A judge the request left out (options.judges) is not there: None, not 0.
    assert (
        rubric_objective(r, RubricObjective(judges=["secondary"]), {"primary": outcome(1)}) is None
    )


def test_every_declared_objective_is_set_and_a_rejected_item_has_all_none() -> None:
    r = rubric()
    item = ItemReward("i", 0.5, "ok", judges={"primary": outcome(0.4, right=1, clear=1, rude=0)})
    assert rubric_objectives(r, item).objectives == {"quality": 1.0, "correct": 1.0, "second": None}
    rejected = rubric_objectives(r, ItemReward("j", None, "rejected"))
    assert rejected.objectives == {"quality": None, "correct": None, "second": None}
    plain = Rubric.model_validate(
        {"id": "p", "criteria": [{"id": "a", "text": "aaa"}], "judges": ["x"]}
    )
    assert rubric_objectives(plain, ItemReward("k", 1.0, "ok")).objectives is None


def test_items_with_their_own_criteria_keep_the_judge_objectives_only() -> None:
    r = rubric()
    own = derive(r, [{"id": "new", "text": "A new criterion."}], "replace")
    assert own.objectives == {"second": RubricObjective(judges=["secondary"])}
    kept = derive(r, [{"id": "new", "text": "A new criterion."}], "extend")
    assert kept.objectives == r.objectives
    item = ItemReward("i", 0.5, "ok", judges={"secondary": outcome(0.7, new=0.7)})
    values = rubric_objectives(own, item, r.objectives).objectives
    assert values == {"quality": None, "correct": None, "second": 0.7}


def recipe() -> Recipe:
    return load_file(EXAMPLE, Recipe, CONTEXT)


def test_a_recipe_objective_is_its_components_weighted_mean() -> None:
    r = Recipe.model_validate(
        {
            "kind": "recipe",
            "id": "r",
            "components": [
                {"id": "a", "weight": 1, "grader": {"type": "exact"}},
                {"id": "b", "weight": 3, "grader": {"type": "exact"}},
                {"id": "z", "weight": 0, "grader": {"type": "exact"}},
            ],
            "objectives": {"ab": {"components": ["a", "b"]}, "z": {"components": ["z"]}},
        }
    )
    parts = {
        "a": ComponentOutcome("grader", 1, 1.0),
        "b": ComponentOutcome("grader", 3, 0.0),
        "z": ComponentOutcome("grader", 0, 0.4),
    }
    assert recipe_objective(r, RecipeObjective(components=["a", "b"]), parts) == 0.25
    assert recipe_objective(r, RecipeObjective(components=["z"]), parts) == 0.4
    skipped = {**parts, "b": ComponentOutcome("grader", 3, None, skipped="gate 'a' failed")}
    assert recipe_objective(r, RecipeObjective(components=["a", "b"]), skipped) is None


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("objectives", "line", "message"),
    [
        ("  q:\n    criteria: [clear, nope]\n", 9, "objectives.q.criteria[1]: no criterion 'nope'"),
        ("  q:\n    judges: [tertiary]\n", 9, "objectives.q.judges[0]: judge 'tertiary' does not"),
        ("  q:\n    criteria: [rude]\n", 9, "objectives.q.criteria: no criterion of the group"),
        ("  q: {}\n", 8, "objectives.q: give criteria, judges, or both"),
        ("  q:\n    criteria: [clear, clear]\n", 9, "objectives.q.criteria: 'clear' is listed"),
        ("  q:\n    criteria: [clear]\n    weights: 2\n", 10, "objectives.q.weights: unknown key"),
        ("  Bad-Name:\n    judges: [primary]\n", 8, "objectives.Bad-Name"),
        ("  judge2:\n    judges: [nobody]\n", 9, "objectives.judge2.judges[0]: judge 'nobody'"),
    ],
)
def test_bad_rubric_objectives_are_refused_at_their_line(
    objectives: str, line: int, message: str
) -> None:
    head = RUBRIC_YAML.split("objectives:")[0]
    with pytest.raises(InvalidFile) as caught:
        rubric(head + "objectives:\n" + objectives)
    text = str(caught.value)
    assert f"obj.yaml:{line}: " in text, text
    assert message in text, text


def test_objectives_need_criterion_scores_and_episode_criteria() -> None:
    implicit = RUBRIC_YAML.replace("judges: [primary,", "combine: implicit\njudges: [primary,")
    with pytest.raises(InvalidFile, match="combine: implicit gives no criterion scores"):
        rubric(implicit)
    step = RUBRIC_YAML.replace("weight: 1}", "weight: 1, scope: step}")
    with pytest.raises(InvalidFile, match="'clear' is scored per step"):
        rubric(step)


def test_bad_recipe_objectives_are_refused_at_their_line() -> None:
    text = EXAMPLE.read_text().replace("components: [explanation]}", "components: [explain]}")
    with pytest.raises(InvalidFile) as caught:
        load_text(text, Recipe, "r.yaml", CONTEXT)
    line = text.splitlines().index("  explanation: {components: [explain]}") + 1
    assert f"r.yaml:{line}: objectives.explanation.components[0]: no component" in str(caught.value)


def test_objectives_do_not_change_the_version() -> None:
    r = rubric()
    assert r.version() == r.model_copy(update={"objectives": None}).version()
    rec = recipe()
    assert rec.version() == rec.model_copy(update={"objectives": None}).version()


def test_the_example_recipe_declares_a_sparse_and_a_dense_objective() -> None:
    rec = recipe()
    assert rec.objectives == {
        "correct": RecipeObjective(components=["answer"]),
        "explanation": RecipeObjective(components=["explanation"]),
    }
    assert rec.component("answer").grader is not None
    assert rec.component("explanation").rubric is not None


def test_the_schemas_carry_objectives() -> None:
    import json

    rub = json.loads((ROOT / "rubrics/schema/rubric.schema.json").read_text())
    rec = json.loads((ROOT / "rubrics/schema/recipe.schema.json").read_text())
    assert "objectives" in rub["properties"] and "objectives" in rec["properties"]
    assert Rubric.model_json_schema() == rub
    assert Recipe.model_json_schema() == rec


# ------------------------------------------------------------------ wire


def test_the_wire_result_carries_the_objectives_and_null_when_none() -> None:
    item = ItemReward("i", 0.5, "ok", objectives={"a": 0.25, "b": None})
    out = reward_result(item)
    assert out.objectives == {"a": 0.25, "b": None}
    assert out.model_dump(mode="json")["objectives"] == {"a": 0.25, "b": None}
    assert reward_result(ItemReward("j", 0.5, "ok")).model_dump(mode="json")["objectives"] is None
    rec = recipe_result(RecipeItemReward("k", 0.5, "ok", objectives={"correct": 1.0}))
    assert rec.objectives == {"correct": 1.0}
    field = RewardResult.model_json_schema()["properties"]["objectives"]
    assert "null when its parts could not be scored" in field["description"]


def test_the_client_reads_the_wire_objectives() -> None:
    from rewardsvc_client.types import RewardResult as ClientResult

    wire = reward_result(ItemReward("i", 0.5, "ok", objectives={"a": 0.25, "b": None}))
    parsed = ClientResult.from_json(wire.model_dump(mode="json"))
    assert parsed.objectives == {"a": 0.25, "b": None}


# ------------------------------------------------------------------ the service


def _post(service: Any, rubric: Any, items: list[dict[str, Any]]) -> dict[str, Any]:
    reply = httpx.post(
        f"{service.url}/v1/rewards", json={"rubric": rubric, "items": items}, timeout=600
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


@pytest.mark.judges
def test_the_service_returns_the_recipes_objectives(service: Any) -> None:
    items = [
        {"id": "0", "prompt": "What is 2 + 3?", "completion": "2 + 3 = 5, so \\boxed{5}.",
         "reference": "5"},
        {"id": "1", "prompt": "What is 2 + 3?", "completion": "It is 6.", "reference": "5"},
    ]  # fmt: skip
    body = _post(service, "math-objectives", items)
    for result in body["results"]:
        comps = result["components"]
        assert result["objectives"] == {
            "correct": comps["answer"]["score"],
            "explanation": comps["explanation"]["score"],
        }
    assert [r["objectives"]["correct"] for r in body["results"]] == [1.0, 0.0]
    assert 0.0 <= body["results"][0]["objectives"]["explanation"] <= 1.0


@pytest.mark.judges
def test_the_service_returns_an_inline_rubrics_objectives(service: Any) -> None:
    from ruamel.yaml import YAML

    doc = YAML(typ="safe").load(RUBRIC_YAML)
    items = [{"id": "0", "prompt": "Capital of France?", "completion": "Paris."}]
    result = _post(service, doc, items)["results"][0]
    judges = result["judges"]
    crit = {j: {c: v["score"] for c, v in judges[j]["criteria"].items()} for j in judges}
    weight = {"primary": 1, "secondary": 3}  # the rubric's judge weights

    def mean(of: Any) -> float:
        return sum(weight[j] * of(c) for j, c in crit.items()) / 4

    expected = {
        "quality": mean(lambda c: max(0.0, min(1.0, c["clear"] - c["rude"]))),
        "correct": mean(lambda c: c["right"]),
        "second": judges["secondary"]["score"],
    }
    assert result["objectives"].keys() == expected.keys()
    for name, value in expected.items():
        assert result["objectives"][name] == pytest.approx(value, abs=1e-9), name
    # null when the rubric declares none
    plain = _post(service, "helpful-answer", items)["results"][0]
    assert plain["objectives"] is None
