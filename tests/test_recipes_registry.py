"""Recipes and routing tables in the library and in ``rewardsvc validate``; grader criteria
inside rubrics."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from rewardsvc.cli import main
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.registry import Registry, load_pool

ROOT = Path(__file__).resolve().parent.parent
POOL_FILE = ROOT / "deploy" / "cpu-judge" / "judges.yaml"
POOL = load_pool(POOL_FILE)

RECIPE = """\
kind: recipe
id: graded
components:
  - id: helpful
    rubric: helpful-answer
  - id: short
    weight: 0.5
    grader: {type: length, max_words: 50}
"""

ROUTING = """\
kind: routing
id: table
routes:
  chat: graded
  plain: helpful-answer
"""


@pytest.fixture
def library(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "rubrics" / "helpful-answer.yaml", tmp_path)
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "graded.yaml").write_text(RECIPE)
    (tmp_path / "recipes" / "table.yaml").write_text(ROUTING)
    return tmp_path


def test_shipped_library_serves_the_starter_recipes_and_routing() -> None:
    registry = Registry(ROOT / "rubrics", POOL)
    assert registry.errors() == {}
    assert {"math-verified", "json-extraction", "helpful-harmless"} <= {
        e.recipe.id for e in registry.recipe_entries() if hasattr(e, "recipe")
    }
    harmless = registry.recipe("helpful-harmless")
    assert set(harmless.rubrics) == {"helpful", "harmless"}
    assert harmless.rubrics["harmless"].kind == "constitution"
    assert registry.routing("mixed-tasks").table.routes["gsm8k"] == "math-verified"


def test_recipe_version_follows_the_rubrics_it_names(library: Path) -> None:
    registry = Registry(library, POOL)
    recipe_before = registry.recipe("graded").version
    table_before = registry.routing("table").version
    rubric = library / "helpful-answer.yaml"
    rubric.write_text(rubric.read_text().replace("min_judges: 1", "min_judges: 2"))
    assert registry.reload()
    assert registry.errors() == {}
    assert registry.recipe("graded").version != recipe_before
    assert registry.routing("table").version != table_before


def test_refused_recipe_edit_names_file_and_line_and_keeps_last_good(library: Path) -> None:
    registry = Registry(library, POOL)
    served = registry.recipe("graded")
    path = library / "recipes" / "graded.yaml"
    path.write_text(RECIPE.replace("rubric: helpful-answer", "rubric: helpful-anwser"))
    registry.reload()
    [problem] = registry.errors()[str(path)]
    assert (problem.line, problem.path) == (5, "components[0].rubric")
    assert "helpful-anwser" in problem.message
    assert registry.recipe("graded") is served
    path.write_text(RECIPE.replace("max_words: 50", "max_words: 0"))
    registry.reload()
    [problem] = registry.errors()[str(path)]
    assert problem.line == 8 and "max_words" in problem.path
    assert registry.recipe("graded") is served


def test_routing_targets_must_be_served_and_ids_unique(library: Path) -> None:
    table = library / "recipes" / "table.yaml"
    table.write_text(ROUTING.replace("plain: helpful-answer", "plain: nothing-here"))
    clash = library / "recipes" / "helpful-answer.yaml"
    clash.write_text(RECIPE.replace("id: graded", "id: helpful-answer"))
    registry = Registry(library, POOL)
    [problem] = registry.errors()[str(table)]
    assert (problem.line, problem.path) == (5, "routes.plain")
    assert "nothing-here" in problem.message
    [problem] = registry.errors()[str(clash)]
    assert "already defined" in problem.message
    with pytest.raises(KeyError):
        registry.routing("table")
    assert registry.get("helpful-answer").rubric.kind == "rubric"


def test_wrong_kind_and_file_name_are_refused(library: Path) -> None:
    other = library / "recipes" / "other.yaml"
    other.write_text(RECIPE)
    odd = library / "recipes" / "odd.yaml"
    odd.write_text("kind: pipeline\nid: odd\n")
    registry = Registry(library, POOL)
    assert "must match the file name" in registry.errors()[str(other)][0].message
    assert registry.errors()[str(odd)][0].path == "kind"


def test_validate_command_checks_recipes_routing_and_their_references(
    library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--judges", str(POOL_FILE), str(library)]) == 0
    table = library / "recipes" / "table.yaml"
    table.write_text(ROUTING.replace("chat: graded", "chat: gradde"))
    assert main(["validate", "--judges", str(POOL_FILE), str(table)]) == 1
    out = capsys.readouterr().out
    assert f"{table}:4: routes.chat: no rubric or recipe 'gradde' is served" in out


def test_schema_command_prints_the_routing_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--routing"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert set(schema["required"]) == {"kind", "id", "routes"}
    shipped = json.loads((ROOT / "rubrics" / "schema" / "routing.schema.json").read_text())
    assert shipped == schema


def rubric(*criteria: dict[str, object], **extra: object) -> Rubric:
    return Rubric.model_validate(
        {"id": "r", "criteria": list(criteria), "judges": ["primary"], **extra}
    )


def test_a_criterion_may_be_a_grader_instead_of_judge_text() -> None:
    graded = rubric(
        {"id": "judged", "text": "The answer is polite."},
        {"id": "exact", "grader": {"type": "exact"}, "category": "essential"},
        requires_reference=True,
    )
    assert graded.criteria[1].grader is not None and graded.criteria[1].text == ""


@pytest.mark.parametrize(
    ("criterion", "extra", "message"),
    [
        ({"id": "c"}, {}, "text: at least 3 characters (or give a grader)"),
        (
            {"id": "c", "grader": {"type": "regex", "pattern": "a"}, "scale": "likert"},
            {},
            "a grader criterion has no judge scale",
        ),
        ({"id": "c", "grader": {"type": "exact"}}, {}, "set requires_reference: true"),
        (
            {"id": "c", "grader": {"type": "regex", "pattern": "a"}},
            {"combine": "implicit"},
            "criteria with a grader need explicit or worst",
        ),
        ({"id": "c", "grader": {"type": "regex", "pattern": "(a"}}, {}, "RE2"),
    ],
)
def test_grader_criteria_are_checked(
    criterion: dict[str, object], extra: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        rubric({"id": "judged", "text": "The answer is polite."}, criterion, **extra)
    assert message in str(caught.value)
