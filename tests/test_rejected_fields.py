"""A rejected item names its field as data: ``RewardResult.problems`` (places within the
item), from which ``error`` is written at the item's position in the request and every
trainer route names its own field, by table, never by reading the error's text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool, settings_for, write_library
from test_compat_holds import NEEDS_REFERENCE
from test_recipes_served import RECIPE, ROUTING

from rewardsvc.core.pool import JudgePool
from rewardsvc.ors.sessions import tool_outcome
from rewardsvc.protocol.ors import ToolError
from rewardsvc.protocol.rejections import ROLL_FIELDS, their_field
from rewardsvc.protocol.rewards import (
    RewardOptions,
    RewardResponse,
    RewardResult,
    RubricRef,
    Usage,
)
from rewardsvc.server.compat import _rejected, score_holding


@pytest.fixture
def pool(fake: FakeJudge) -> JudgePool:
    return fake_pool(fake.url, fake.url)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    folder = write_library(tmp_path / "rubrics")
    (folder / "graded.yaml").write_text(NEEDS_REFERENCE)
    (folder / "recipes").mkdir()
    (folder / "recipes" / "tiny-checked.yaml").write_text(RECIPE)
    (folder / "recipes" / "tiny-routes.yaml").write_text(ROUTING)
    return folder


def rejected(error: str, *problems: tuple[list[str | int], str]) -> RewardResult:
    """A rejected result with ``error`` and its ``problems`` (place within the item, why)."""
    found = [{"loc": loc, "message": message} for loc, message in problems]
    return RewardResult.model_validate(
        {"id": "0", "reward": None, "status": "rejected", "error": error, "problems": found}
    )


async def test_slime_422_for_a_recipe_whose_grader_needs_a_reference_names_label(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    async with app_client(settings_for(library), pool) as (http, _, _):
        reply = await http.post("/slime/tiny-checked", json={"prompt": "2+2?", "response": "4"})
        assert reply.status_code == 422, reply.text
        body = reply.json()
        assert body["field"] == "label", body
        assert body["message"] == "label: component 'answer' needs a reference"
        # The same sample with its label is scored.
        sample = {"prompt": "2+2?", "response": "4", "label": "4"}
        assert (await http.post("/slime/tiny-checked", json=sample)).status_code == 200
    assert fake.script.requests > 0


async def test_a_rejected_item_of_a_routed_batch_names_its_position_in_the_request(
    library: Path, pool: JudgePool
) -> None:
    def item(source: str | None, completion: str = "4", **more: Any) -> dict[str, Any]:
        metadata = {"data_source": source} if source is not None else {}
        return {"prompt": "2+2?", "completion": completion, "metadata": metadata, **more}

    items = [
        item("qa", reference="4"),  # the recipe's part: position 0 there
        item("chat"),  # the rubric's part (strict): position 0 there
        item("chat", "x" * 300),  # position 1 of the rubric's part
        item("qa"),  # position 1 of the recipe's part, without the reference it needs
        item(None),  # routed nowhere
    ]
    settings = settings_for(library, max_text_chars=200)
    async with app_client(settings, pool) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": "tiny-routes", "items": items})
        assert reply.status_code == 200, reply.text
        results = reply.json()["results"]
    assert [r["status"] for r in results[:2]] == ["ok", "ok"]
    assert all(r["status"] == "rejected" for r in results[2:]), results
    too_long, no_reference, unrouted = results[2:]
    assert too_long["error"].startswith("items[2].completion: 300 characters"), too_long
    assert too_long["problems"][0]["loc"] == ["completion"]
    assert no_reference["error"] == "items[3].reference: component 'answer' needs a reference"
    assert no_reference["problems"] == [
        {"loc": ["reference"], "message": "component 'answer' needs a reference"}
    ]
    assert unrouted["error"].startswith("items[4].metadata.data_source: missing by 'tiny-routes'")
    assert unrouted["problems"][0]["loc"] == ["metadata", "data_source"]
    assert [r["problems"] for r in results[:2]] == [None, None]


async def test_each_rejection_kind_names_slimes_field(library: Path, pool: JudgePool) -> None:
    bad_criteria = {"criteria": [{"text": "No sign.", "category": "pitfall", "weight": 1}]}
    cases = [
        ("tiny", {"response": "x" * 300}, "response", "response: 300 characters"),
        ("tiny", {"prompt": "p" * 300, "response": "4"}, "prompt", "prompt: 300 characters"),
        ("graded", {"response": "4"}, "label", "label: rubric 'graded' requires a reference"),
        ("tiny-checked", {"response": "4"}, "label", "label: component 'answer' needs a reference"),
        ("tiny", {"response": "4", "label": bad_criteria}, "label.criteria", "label.criteria[0]"),
    ]
    settings = settings_for(library, max_text_chars=200)
    async with app_client(settings, pool) as (http, _, _):
        for rubric, sample, field, message in cases:
            reply = await http.post(f"/slime/{rubric}", json=sample)
            assert reply.status_code == 422, (rubric, sample, reply.text)
            assert reply.json()["field"] == field, (rubric, reply.json())
            assert reply.json()["message"].startswith(message), (rubric, reply.json())


@pytest.mark.parametrize(
    ("loc", "field", "message"),
    [
        (["completion"], "response", "response: too long"),
        (["reference"], "label", "label: too long"),
        (["prompt", 1, "content"], "prompt", "prompt[1].content: too long"),
        (["criteria", 2, "text"], "label.criteria", "label.criteria[2].text: too long"),
    ],
)
def test_slime_maps_the_location_not_the_text(
    loc: list[str | int], field: str, message: str
) -> None:
    # The error's text names some other place: only the location is read.
    refusal = _rejected(rejected("items[0].metadata: unrelated", (loc, "too long")))
    assert (refusal.field, refusal.message) == (field, message)


def test_a_message_starting_with_a_fields_name_is_not_mis_mapped() -> None:
    # A field slime does not send, whose name starts with one it does: not slime's label.
    result = rejected(
        "items[0].reference_answer: extra inputs are not permitted",
        (["reference_answer"], "extra inputs are not permitted"),
    )
    refusal = _rejected(result)
    assert refusal.field == "response"
    assert refusal.message == "items[0].reference_answer: extra inputs are not permitted"
    # Nor a problem of the item as a whole whose message starts with a field's name.
    whole = rejected("items[0]: reference and prompt disagree", ([], "reference and prompt"))
    assert _rejected(whole).field == "response"


def test_roll_and_ors_name_their_own_fields() -> None:
    result = rejected("items[0].reference: required", (["reference"], "required"))
    assert their_field(result, ROLL_FIELDS, "response") == (
        "reward_info.ground_truth",
        "reward_info.ground_truth: required",
    )
    answer = rejected("items[0].completion: too long", (["completion"], "too long"))
    response = RewardResponse(
        rubric=RubricRef(id="r", version="v"), results=[answer], usage=Usage()
    )
    outcome = tool_outcome(response)
    assert isinstance(outcome, ToolError)
    assert outcome.error == "rejected: answer: too long"


async def test_nemo_gym_failure_reason_names_its_reference_field(
    library: Path, pool: JudgePool
) -> None:
    verify = {
        "responses_create_params": {"input": "2+2?"},
        "response": {"output": [{"type": "message", "role": "assistant", "content": "4"}]},
    }
    async with app_client(settings_for(library), pool) as (http, _, _):
        reply = await http.post("/nemo-gym/graded/verify?reference_field=answer", json=verify)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["mask_sample"] is True and body["failure_kind"] == "verifier_error"
    assert body["failure_reason"] == "answer: rubric 'graded' requires a reference"


async def test_a_trainer_hold_names_the_position_of_a_sample_rejected_when_scored_again() -> None:
    # The hold scores again only the samples whose judges failed, as a batch of their own:
    # one rejected then (too long for the judges' context) is named at its own position.
    class Scorer:
        def __init__(self) -> None:
            self.batches: list[int] = []

        async def score_rubric(self, rubric: str, batch: list[Any], *_: Any, **__: Any) -> Any:
            self.batches.append(len(batch))
            if len(self.batches) == 1:
                scored = RewardResult(id="0", reward=0.5, status="ok")
                failed = RewardResult(id="1", reward=None, status="judge_error")
                results = [scored, failed]
            else:
                too_long = ([], "too long for the judges' context")
                results = [rejected("items[0]: too long for the judges' context", too_long)]
            return RewardResponse(
                rubric=RubricRef(id=rubric, version="v"), results=results, usage=Usage()
            )

        async def pause(self, seconds: float) -> bool:
            return True

    scorer = Scorer()
    items: list[dict[str, Any]] = [{"completion": "4"}, {"completion": "x" * 50}]
    results = await score_holding(
        scorer,  # a stand-in for the Service: score_rubric and pause
        "tiny",
        items,
        "query",
        None,
        5.0,
        RewardOptions(),
    )
    assert scorer.batches == [2, 1]
    assert results[1].status == "rejected"
    assert results[1].error == "items[1]: too long for the judges' context"
