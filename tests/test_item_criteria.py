"""Items that carry their own criteria (a dataset's rubric column) through ``/v1/rewards``,
against scripted fake judges: replace and extend, one rubric per distinct criteria, per-item
validation naming the field, versions, the cache, and calibration kept per template. The
same rows on the real CPU judges are in test_item_criteria_judges.py."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fakejudge import FakeJudge
from fastapi import FastAPI
from test_api_support import app_client, fake_pool, settings_for, write_library
from test_engine import StubJudge, items_of, sample_value
from test_engine import rubric as engine_rubric

from rewardsvc.application.targets import score_batch
from rewardsvc.core.criteria_formats import CriteriaFormatError, read_criteria
from rewardsvc.core.item_rubric import derive
from rewardsvc.core.observe import NullObserver
from rewardsvc.core.results import BatchResult
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.registry import Registry
from rewardsvc.scoring.engine import Engine
from rewardsvc.server.trainer_text import label_fields

CRITERIA_A = [
    {"text": "The answer names Paris.", "category": "essential"},
    {"text": "The answer is one sentence.", "weight": 1},
]
CRITERIA_B = [{"id": "units", "text": "The answer gives the unit (metres)."}]


def row(item_id: str, criteria: list[Any] | None, prompt: str = "Capital of France?") -> Any:
    item: dict[str, Any] = {"id": item_id, "prompt": prompt, "completion": "Paris."}
    if criteria is not None:
        item["criteria"] = criteria
    return item


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    with FakeJudge() as primary, FakeJudge() as secondary:
        yield primary, secondary


@pytest_asyncio.fixture(loop_scope="function")
async def client(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> AsyncIterator[tuple[httpx.AsyncClient, FastAPI, Registry]]:
    for fake in fakes:
        fake.script.requests = 0
        fake.script.bodies.clear()
    pool = fake_pool(fakes[0].url, fakes[1].url)
    async with app_client(settings_for(write_library(tmp_path / "rubrics")), pool) as running:
        yield running


def judged_criteria(result: dict[str, Any]) -> set[str]:
    return set(result["judges"]["primary"]["criteria"])


def asked(fake: FakeJudge) -> str:
    """Everything the fake judge was sent, as one text."""
    return "\n".join(str(body) for body in fake.script.bodies)


async def test_item_criteria_replace_the_batch_rubrics_by_default(
    client: Any, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    http, _, registry = client
    items = [row("a", CRITERIA_A), row("b", CRITERIA_B), row("c", None)]
    reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": items})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    a, b, c = body["results"]
    assert [r["status"] for r in body["results"]] == ["ok", "ok", "ok"]
    # Ids left out are c1, c2, ...; the template's criteria are gone for a and b.
    assert judged_criteria(a) == {"c1", "c2"}
    assert judged_criteria(b) == {"units"}
    assert judged_criteria(c) == {"correct", "polite"}
    # The response names the batch rubric; each item names the rubric it was scored with.
    template = registry.get("tiny").version
    assert body["rubric"]["version"] == template
    assert c["version"] is None
    assert a["version"] and b["version"] and len({a["version"], b["version"], template}) == 3
    assert "The answer names Paris." in asked(fakes[0])
    # 2 + 1 + 2 criteria, each asked of both judges.
    assert body["usage"]["judge_calls"] == 10


async def test_item_criteria_extend_the_batch_rubrics(client: Any) -> None:
    http, _, _ = client
    request = {
        "rubric": "tiny",
        "items": [row("a", CRITERIA_B)],
        "options": {"criteria_mode": "extend"},
    }
    reply = await http.post("/v1/rewards", json=request)
    assert reply.status_code == 200, reply.text
    assert judged_criteria(reply.json()["results"][0]) == {"correct", "polite", "units"}


async def test_items_sharing_criteria_make_one_rubric_and_distinct_ones_do_not(
    client: Any,
) -> None:
    http, _, _ = client
    items = [row("a1", CRITERIA_A), row("a2", copy.deepcopy(CRITERIA_A)), row("b", CRITERIA_B)]
    body = (await http.post("/v1/rewards", json={"rubric": "tiny", "items": items})).json()
    versions = [r["version"] for r in body["results"]]
    assert versions[0] == versions[1] != versions[2]


async def test_a_malformed_item_rubric_rejects_only_its_item(client: Any) -> None:
    http, _, _ = client
    bad_weight = [{"id": "x", "text": "Says hello.", "category": "pitfall", "weight": 2}]
    duplicate = [{"id": "x", "text": "One thing."}, {"id": "x", "text": "Another thing."}]
    items = [
        row("good", CRITERIA_B),
        row("weight", bad_weight),
        row("dup", duplicate),
        row("empty", []),
        row("type", ["not an object"]),
        row("clash", [{"id": "correct", "text": "Clashes with the template."}]),
    ]
    request = {"rubric": "tiny", "items": items, "options": {"criteria_mode": "extend"}}
    reply = await http.post("/v1/rewards", json=request)
    assert reply.status_code == 200, reply.text
    results = {r["id"]: r for r in reply.json()["results"]}
    assert results["good"]["status"] == "ok"
    errors = {k: r["error"] for k, r in results.items() if k != "good"}
    assert all(results[k]["status"] == "rejected" and results[k]["reward"] is None for k in errors)
    assert errors["weight"].startswith("items[1].criteria[0].weight: ")
    assert "pitfall" in errors["weight"]
    assert errors["dup"].startswith("items[2].criteria[1].id: duplicate criterion id 'x'")
    assert errors["empty"] == "items[3].criteria: at least one criterion is needed"
    assert errors["type"].startswith("items[4].criteria[0]: ")
    assert errors["clash"].startswith("items[5].criteria[0].id: duplicate criterion id")


async def test_item_criteria_over_the_criteria_limit_reject_their_item(
    tmp_path: Path, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    pool = fake_pool(fakes[0].url, fakes[1].url)
    settings = settings_for(write_library(tmp_path / "rubrics"), max_criteria=3)
    many = [{"text": f"Criterion number {n}."} for n in range(4)]
    async with app_client(settings, pool) as (http, _, _):
        items = [row("many", many), row("few", CRITERIA_B)]
        body = (await http.post("/v1/rewards", json={"rubric": "tiny", "items": items})).json()
    many_result, few_result = body["results"]
    assert many_result["status"] == "rejected"
    assert many_result["error"] == (
        "items[0].criteria: the item's rubric has 4 criteria, more than max_criteria=3"
    )
    assert few_result["status"] == "ok"


async def test_item_criteria_need_a_rubric_target(client: Any) -> None:
    http, _, _ = client
    recipe = {"kind": "recipe", "id": "r", "components": [{"id": "t", "rubric": "tiny"}]}
    reply = await http.post("/v1/rewards", json={"rubric": recipe, "items": [row("a", CRITERIA_B)]})
    assert reply.status_code == 200, reply.text
    result = reply.json()["results"][0]
    assert result["status"] == "rejected"
    assert result["error"].startswith("items[0].criteria: item criteria need a rubric")


async def test_an_item_rubric_error_names_the_request_position_in_a_split_batch(
    client: Any,
) -> None:
    http, _, _ = client
    strict = {
        "id": "needs-ref",
        "requires_reference": True,
        "criteria": [{"id": "ok", "text": "Matches the reference."}],
        "judges": ["primary"],
    }
    items = [row("a", CRITERIA_A), row("b", CRITERIA_B), row("c", CRITERIA_A)]
    body = (await http.post("/v1/rewards", json={"rubric": strict, "items": items})).json()
    # Each part is scored apart, yet every error names the item's place in the request.
    assert [r["error"] for r in body["results"]] == [
        f"items[{n}].reference: rubric 'needs-ref' requires a reference" for n in range(3)
    ]


async def test_item_rubric_verdicts_are_cached_under_their_own_version(
    client: Any, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    http, _, _ = client
    request = {"rubric": "tiny", "items": [row("a", CRITERIA_B)]}
    first = (await http.post("/v1/rewards", json=request)).json()
    sent = fakes[0].script.requests
    again = (await http.post("/v1/rewards", json=request)).json()
    assert fakes[0].script.requests == sent
    assert again["results"][0]["cached"] is True
    assert again["results"][0]["reward"] == first["results"][0]["reward"]
    # Other criteria text under the same id is another rubric: not served from the cache.
    other = [{"id": "units", "text": "The answer gives the unit (feet)."}]
    third = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [row("a", other)]})
    assert third.json()["results"][0]["cached"] is False
    assert fakes[0].script.requests > sent


def test_derive_keeps_the_template_settings_and_locates_problems() -> None:
    template = Rubric.model_validate(
        {
            "id": "t",
            "instructions": "Judge a medical answer.",
            "criteria": [{"id": "safe", "text": "The answer is safe.", "category": "essential"}],
            "judges": ["primary", "secondary"],
            "min_judges": 2,
            "transforms": {"discretize": 4},
        }
    )
    own = read_criteria("rewardsvc", [{"text": "Mentions a doctor."}])
    derived = derive(template, own, "replace")
    assert [c.id for c in derived.criteria] == ["c1"]
    assert derived.instructions == template.instructions
    assert derived.min_judges == 2 and derived.transforms == template.transforms
    assert derived.version() != template.version()
    assert derive(template, own, "replace").version() == derived.version()
    extended = derive(template, own, "extend")
    assert [c.id for c in extended.criteria] == ["safe", "c1"]
    # A rubric-level rule broken by the item's criteria: said of the item's criteria.
    with pytest.raises(CriteriaFormatError) as caught:
        derive(template, [{"id": "safe", "text": "Again."}], "extend")
    assert [p.path for p in caught.value.problems] == ["[0].id"]
    with pytest.raises(CriteriaFormatError) as caught:
        derive(
            template, [{"id": "bad", "text": "Harmful advice.", "category": "pitfall"}], "replace"
        )
    assert "normalizer is zero" in str(caught.value)


async def test_items_criteria_in_a_datasets_format(
    client: Any, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    http, _, _ = client
    healthbench = [
        {"criterion": "Advises fluids and rest.", "points": 5, "tags": ["axis:completeness"]},
        {"criterion": "Recommends aspirin for a child.", "points": -8},
    ]
    request = {
        "rubric": "tiny",
        "items": [row("hb", healthbench), row("bad", [{"criterion": "Zero.", "points": 0}])],
        "options": {"criteria_format": "healthbench"},
    }
    reply = await http.post("/v1/rewards", json=request)
    assert reply.status_code == 200, reply.text
    good, bad = reply.json()["results"]
    assert good["status"] == "ok" and judged_criteria(good) == {"c1", "c2"}
    assert "Recommends aspirin for a child." in asked(fakes[0])
    assert bad["status"] == "rejected"
    assert bad["error"].startswith("items[1].criteria[0].points: ")


async def test_item_rubrics_share_their_templates_calibration_window_and_monitor() -> None:
    table = {f"sample-{n}": 0.3 + 0.05 * n for n in range(8)}
    judges = {
        "primary": StubJudge("primary", sample_value(table)),
        "secondary": StubJudge("secondary", sample_value(table, -0.25)),
    }
    template = engine_rubric(
        criteria=[{"id": "good", "text": "The answer is good."}],
        aggregation={"rule": "min", "calibration": "zscore"},
    )
    items = items_of([f"sample-{n} answer" for n in range(8)])
    for n, item in enumerate(items):
        item["criteria"] = [{"id": f"own{n % 4}", "text": f"Criterion of prompt {n % 4}."}]
    seen: list[tuple[str, str]] = []

    class Watch(NullObserver):
        def batch(self, rubric_id: str, result: BatchResult) -> None:
            seen.append((rubric_id, result.version))

    engine = Engine(judges, observer=Watch())
    response = await score_batch(engine, template, items)
    assert [r.status for r in response.results] == ["ok"] * 8
    # Four item rubrics, four parts, one window per judge (the template's), one batch.
    assert len({r.version for r in response.results}) == 4
    assert {key for key, _ in engine.windows._windows} == {template.version()}
    assert seen == [(template.id, template.version())]
    # Calibrated against the whole batch, not a part of two: the harsh judge's offset is gone.
    for r in response.results:
        assert r.judges["primary"].score == pytest.approx(r.judges["secondary"].score)


async def test_groups_and_pairs_carry_their_own_criteria(
    client: Any, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    http, _, registry = client
    completions = ["Paris.", "It is Paris, the capital."]
    groups = [
        {
            "id": "own",
            "prompt": "Capital of France?",
            "completions": completions,
            "criteria": CRITERIA_A,
        },
        {"id": "batch", "prompt": "Capital of France?", "completions": completions},
        {
            "id": "bad",
            "prompt": "Capital of France?",
            "completions": completions,
            "criteria": [
                {"text": "A pitfall without its sign.", "category": "pitfall", "weight": 1}
            ],
        },
    ]
    reply = await http.post("/v1/groups", json={"rubric": "tiny", "groups": groups})
    assert reply.status_code == 200, reply.text
    own, batch, bad = reply.json()["results"]
    assert own["status"] == "ok" and batch["status"] == "ok"
    assert set(own["judges"]["primary"]["criteria"]) == {"c1", "c2"}
    assert set(batch["judges"]["primary"]["criteria"]) == {"correct", "polite"}
    assert own["version"] not in (None, registry.get("tiny").version) and batch["version"] is None
    assert bad["status"] == "rejected" and bad["error"].startswith("groups[2].criteria[0].weight: ")
    assert "The answer names Paris." in asked(fakes[0])

    pairs = [
        {
            "id": "p",
            "prompt": "Capital of France?",
            "a": "Paris.",
            "b": "Lyon.",
            "criteria": CRITERIA_B,
        }
    ]
    request = {"rubric": "tiny", "pairs": pairs, "options": {"criteria_mode": "extend"}}
    reply = await http.post("/v1/preferences", json=request)
    assert reply.status_code == 200, reply.text
    (pair,) = reply.json()["results"]
    assert pair["status"] == "ok" and pair["version"]
    assert set(pair["judges"]["primary"]["criteria"]) == {"correct", "polite", "units"}


async def test_trainer_routes_read_a_samples_own_rubric(
    client: Any, fakes: tuple[FakeJudge, FakeJudge]
) -> None:
    http, _, _ = client
    label = json.dumps({"criteria": CRITERIA_B, "reference": "Paris"})
    body = {
        "query": ["Capital of France? Paris."],
        "prompts": ["Capital of France?"],
        "labels": [label],
    }
    reply = await http.post("/openrlhf/tiny", json=body)
    assert reply.status_code == 200, reply.text
    assert reply.json()["extra_logs"]["rewardsvc_valid"] == [1.0]
    assert "The answer gives the unit (metres)." in asked(fakes[0])

    fakes[0].script.bodies.clear()
    sample = {
        "prompt": "Capital of France?",
        "response": "Paris.",
        "label": {"criteria": CRITERIA_A},
    }
    reply = await http.post("/slime/tiny?format=dict", json=sample)
    assert reply.status_code == 200, reply.text
    assert reply.json()["valid"] is True
    assert "The answer names Paris." in asked(fakes[0])
    # A label's bad criterion is slime's field at fault.
    sample["label"] = {"criteria": [{"text": "No sign.", "category": "pitfall", "weight": 1}]}
    reply = await http.post("/slime/tiny", json=sample)
    assert reply.status_code == 422, reply.text
    assert reply.json()["field"] == "label.criteria"
    assert reply.json()["message"].startswith("label.criteria[0].weight: ")

    fakes[0].script.bodies.clear()
    verify = {
        "responses_create_params": {"input": "Capital of France?"},
        "response": {"output": [{"type": "message", "role": "assistant", "content": "Paris."}]},
        "rubric_items": CRITERIA_B,
    }
    reply = await http.post("/nemo-gym/tiny/verify?criteria_field=rubric_items", json=verify)
    assert reply.status_code == 200, reply.text
    assert reply.json()["mask_sample"] is False
    assert "The answer gives the unit (metres)." in asked(fakes[0])


def test_a_label_is_a_reference_unless_it_carries_criteria() -> None:
    assert label_fields("Paris") == {"reference": "Paris"}
    assert label_fields("{not json") == {"reference": "{not json"}
    assert label_fields('{"answer": 4}') == {"reference": '{"answer": 4}'}
    assert label_fields({"criteria": [], "reference": "4"}) == {"reference": "4", "criteria": []}
    assert label_fields('{"criteria": ["x"]}') == {"reference": None, "criteria": ["x"]}
