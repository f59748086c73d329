"""Recipes and routing tables share the rubrics' id space everywhere a rubric id is taken:
``GET /v1/rubrics`` lists them with their kind, ``GET /v1/rubrics/{id}`` shows them, and
``rewardsvc score`` and ``probe`` score with them in-process (fake judges)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool, fake_pool_doc, settings_for, write_library

from rewardsvc.cli import main
from rewardsvc.safety.attacks import attacks

RECIPE = """\
kind: recipe
id: tiny-checked
description: The exact answer gates the tiny rubric.
components:
  - id: answer
    weight: 0.5
    grader: {type: exact}
  - id: judged
    weight: 0.5
    rubric: tiny
gates:
  - {component: answer, threshold: 1.0, floor: 0.0}
"""

ROUTING = """\
kind: routing
id: tiny-routes
description: Questions with answers to the recipe, chat to the rubric.
routes: {qa: tiny-checked, chat: strict}
"""

ITEM = ["--prompt", "What is 2+2?", "--completion", "4", "--reference", "4"]


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    with FakeJudge() as primary, FakeJudge() as secondary:
        yield primary, secondary


@pytest.fixture
def library(tmp_path: Path) -> Path:
    folder = write_library(tmp_path / "rubrics")
    (folder / "recipes").mkdir()
    (folder / "recipes" / "tiny-checked.yaml").write_text(RECIPE)
    (folder / "recipes" / "tiny-routes.yaml").write_text(ROUTING)
    return folder


@pytest.fixture
def config(library: Path, fakes: tuple[FakeJudge, FakeJudge], tmp_path: Path) -> list[str]:
    pool = tmp_path / "pool.yaml"
    pool.write_text(yaml.safe_dump(fake_pool_doc(fakes[0].url, fakes[1].url)))
    return ["--judges", str(pool), "--rubrics", str(library)]


async def test_the_library_lists_and_shows_recipes_and_routing_tables(
    library: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    pool = fake_pool(fakes[0].url, fakes[1].url)
    async with app_client(settings_for(library), pool) as (http, _, _):
        listed = (await http.get("/v1/rubrics")).json()
        by_id = {r["id"]: r for r in listed["rubrics"]}
        assert [r["id"] for r in listed["rubrics"]] == sorted(by_id)
        assert {i: r["kind"] for i, r in by_id.items()} == {
            "strict": "rubric",
            "tiny": "rubric",
            "tiny-checked": "recipe",
            "tiny-routes": "routing",
        }
        recipe, table = by_id["tiny-checked"], by_id["tiny-routes"]
        assert recipe["file"] == "recipes/tiny-checked.yaml"
        assert recipe["components"] == ["answer", "judged"] and recipe["criteria"] == []
        assert recipe["judges"] == ["primary", "secondary"]
        assert table["components"] == ["tiny-checked", "strict"]
        assert by_id["tiny"]["components"] == [] and by_id["tiny"]["file"] == "tiny.yaml"

        for target_id, kind, text in [
            ("tiny-checked", "recipe", RECIPE),
            ("tiny-routes", "routing", ROUTING),
        ]:
            shown = await http.get(f"/v1/rubrics/{target_id}")
            assert shown.status_code == 200, shown.text
            detail = shown.json()
            assert detail["kind"] == kind and detail["yaml"] == text
            assert detail["rubric"]["kind"] == kind and detail["rubric"]["id"] == target_id
            # The version shown is the one a reward carries.
            item = {"id": "a", "prompt": "Q?", "completion": "4", "reference": "4"}
            item["metadata"] = {"data_source": "qa"}
            scored = await http.post("/v1/rewards", json={"rubric": target_id, "items": [item]})
            assert scored.json()["rubric"] == {
                "id": target_id,
                "version": detail["version"],
                "kind": kind,
            }
            assert by_id[target_id]["version"] == detail["version"]
        assert (await http.get("/v1/rubrics/tiny")).json()["kind"] == "rubric"
        missing = await http.get("/v1/rubrics/nope")
        assert missing.status_code == 404 and "tiny-checked" in missing.json()["message"]
        grouped = await http.post(
            "/v1/groups",
            json={
                "rubric": "tiny-checked",
                "groups": [{"prompt": "Q?", "completions": ["a", "b"]}],
            },
        )
        assert grouped.status_code == 404 and "is a recipe" in grouped.json()["message"]


def _json_out(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


def test_score_takes_a_recipe_id(config: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--rubric", "tiny-checked", *ITEM, *config, "--json"]) == 0
    response = _json_out(capsys)
    assert response["rubric"]["kind"] == "recipe"
    result = response["results"][0]
    assert result["status"] == "ok" and set(result["components"]) == {"answer", "judged"}
    assert result["components"]["answer"]["score"] == 1.0
    assert set(result["components"]["judged"]["judges"]) == {"primary", "secondary"}
    assert main(["score", "--rubric", "tiny-checked", *ITEM[:3], "5", *ITEM[4:], *config]) == 0
    text = capsys.readouterr().out
    assert text.startswith("recipe tiny-checked sha256:")
    assert "component judged (rubric, weight 0.5): null  skipped:" in text


def test_score_takes_a_routing_table_with_the_items_data_source(
    config: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["score", "--rubric", "tiny-routes", *ITEM, *config]
    assert main([*argv, "--data-source", "qa", "--json"]) == 0
    response = _json_out(capsys)
    assert response["rubric"]["kind"] == "routing"
    assert response["results"][0]["scored_by"]["id"] == "tiny-checked"
    # Without a source (and no default route) it cannot pick: one line says what to give.
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--data-source, one of chat, qa" in err[0]


def test_probe_attacks_a_recipe(config: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "--rubric", "tiny-checked", *ITEM, *config, "--json"])
    report = _json_out(capsys)
    assert code in (0, 1)
    assert report["original"]["status"] == "ok"
    assert report["original"]["components"]["answer"]["score"] == 1.0
    assert len(report["attacks"]) == len(attacks("4"))
    assert all(row["status"] in ("ok", "degraded") for row in report["attacks"])


def test_an_unknown_id_names_recipes_too(
    config: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["score", "--rubric", "nope", *ITEM, *config]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "rewardsvc: error: unknown rubric 'nope'; known: strict, tiny, tiny-checked, tiny-routes"
    )
