"""Per-prompt rubrics through every adapter, against a scripted /v1/rewards (no judges): a
dataset's rubric field reaches the item's ``criteria`` and the format and mode reach
``options``; labels, JSON text and numpy arrays are read; route URLs carry the options.
The same rows through the trainers' real packages and the real service are in
test_client_criteria_trainers.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from test_client_adapters import FakeService
from test_client_trainers import Trajectory, TrajectoryGroup

from rewardsvc_client import verl as verl_adapter
from rewardsvc_client.art import make_group_scorer
from rewardsvc_client.criteria import criteria_value, split_label
from rewardsvc_client.openrlhf import make_reward_func, route_url, rubric_label
from rewardsvc_client.slime import make_rm
from rewardsvc_client.slime import route_url as slime_route_url
from rewardsvc_client.trl import trl_reward_func
from rewardsvc_client.verifiers import verifiers_group_reward_func, verifiers_reward_func

DATA = Path(__file__).resolve().parent / "data" / "rubric_datasets"
HB = [json.loads(line) for line in (DATA / "healthbench.jsonl").read_text().splitlines()]
RAR = [json.loads(line) for line in (DATA / "rar.jsonl").read_text().splitlines()]
HB_OPTIONS = {"criteria_format": "healthbench"}


@pytest.fixture
def fake() -> Iterator[FakeService]:
    service = FakeService()
    yield service
    service.close()


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("URL", "RUBRIC", "API_KEY", "RUN", "CRITERIA_FORMAT", "CRITERIA_MODE"):
        monkeypatch.delenv(f"REWARDSVC_{name}", raising=False)


def sent(fake: FakeService) -> list[Any]:
    """The criteria of every item sent (None where an item had none)."""
    return [item.get("criteria") for item in fake.items()]


def test_trl_sends_the_rubric_column_and_the_options(fake: FakeService) -> None:
    reward = trl_reward_func(
        fake.url, "per-prompt", reference_column=None, criteria_column="rubrics",
        criteria_format="healthbench", criteria_mode="extend",
    )  # fmt: skip
    rubrics = [HB[0]["rubrics"], HB[0]["rubrics"], HB[1]["rubrics"]]
    asyncio.run(reward(["a", "a", "b"], ["0.1", "0.2", "0.3"], rubrics=rubrics))
    assert sent(fake) == rubrics
    assert fake.requests[0]["options"] == {"criteria_format": "healthbench",
                                           "criteria_mode": "extend"}  # fmt: skip
    assert "reference" not in fake.items()[0]


def test_trl_without_the_column_sends_no_criteria(fake: FakeService) -> None:
    reward = trl_reward_func(fake.url, "r", criteria_column="rubrics")
    assert asyncio.run(reward(["a"], ["0.5"], reference=["x"])) == [0.5]
    assert sent(fake) == [None] and "options" not in fake.requests[0]


def test_verl_reads_extra_info_and_a_rubric_label_ground_truth(fake: FakeService) -> None:
    rubric = RAR[0]["rubric"]
    infos = [
        {"question": "q", "rubrics": np.array(rubric, dtype=object)},  # as veRL keeps rows
        {"question": "q"},
    ]
    out = verl_adapter.compute_score_batch(
        ["d", "d"], ["0.5", "0.25"], ["ref", rubric_label(rubric, "ref")], infos,
        url=fake.url, rubric="per-prompt", criteria_key="rubrics", criteria_format="rar",
        judge_error_wait=0,
    )  # fmt: skip
    assert [o["score"] for o in out] == [0.5, 0.25]
    assert sent(fake) == [rubric, rubric]
    assert [i["reference"] for i in fake.items()] == ["ref", "ref"]
    assert fake.requests[0]["options"] == {"criteria_format": "rar"}


def test_openrlhf_hook_reads_the_label_and_route_url_carries_the_options(
    fake: FakeService,
) -> None:
    hook = make_reward_func(fake.url, "per-prompt", criteria_format="rar", judge_error_wait=0)
    label = rubric_label(RAR[1]["rubric"], RAR[1]["reference_answer"])
    out = hook(["Q: x A: 0.5"], ["Q: x A: "], [label])
    assert out["rewards"] == [0.5]
    assert sent(fake) == [RAR[1]["rubric"]]
    assert fake.items()[0]["reference"] == RAR[1]["reference_answer"]
    assert fake.requests[0]["options"] == {"criteria_format": "rar"}
    assert route_url("http://h:8000/", "per-prompt", run="r1", criteria_format="rar") == (
        "http://h:8000/openrlhf/per-prompt?criteria_format=rar&run=r1"
    )
    assert slime_route_url("http://h", "a/b", criteria_mode="extend", format="dict") == (
        "http://h/slime/a%2Fb?criteria_mode=extend&format=dict"
    )


async def test_slime_reads_a_label_object_or_a_metadata_key(fake: FakeService) -> None:
    scorer = make_rm(fake.url, "per-prompt", criteria_format="healthbench", judge_error_wait=0)
    args = SimpleNamespace(rm_url=None)
    criteria = HB[1]["rubrics"]
    labelled = SimpleNamespace(prompt="p", response="0.5", metadata={}, remove_sample=False,
                               label={"criteria": criteria, "reference": "r"})  # fmt: skip
    in_metadata = SimpleNamespace(prompt="p", response="0.25", label="r", remove_sample=False,
                                  metadata={"criteria": json.dumps(criteria)})  # fmt: skip
    assert await scorer.group_rm(args, [labelled, in_metadata]) == [0.5, 0.25]
    assert sent(fake) == [criteria, criteria]
    assert [i["reference"] for i in fake.items()] == ["r", "r"]
    assert fake.requests[0]["options"] == HB_OPTIONS


async def test_verifiers_reads_info(fake: FakeService) -> None:
    one = verifiers_reward_func(fake.url, "per-prompt", criteria_format="healthbench",
                                judge_error_wait=0)  # fmt: skip
    group = verifiers_group_reward_func(fake.url, "per-prompt", criteria_key="rubrics",
                                        judge_error_wait=0)  # fmt: skip
    criteria = HB[0]["rubrics"]
    assert await one(prompt="p", completion="0.5", answer="", info={"criteria": criteria}) == 0.5
    rewards = await group(prompts=["p", "p"], completions=["0.1", "0.2"], answers=["", ""],
                          infos=[{"rubrics": criteria}, {}])  # fmt: skip
    assert rewards == [0.1, 0.2]
    assert sent(fake) == [criteria, criteria, None]
    assert fake.requests[0]["options"] == HB_OPTIONS and "options" not in fake.requests[1]


async def test_art_reads_json_text_in_trajectory_metadata(fake: FakeService) -> None:
    fake.script = lambda body: [
        {"reward": float(i["completion"][-1]["content"]), "status": "ok"} for i in body["items"]
    ]
    score = make_group_scorer(fake.url, "per-prompt", criteria_format="healthbench")
    trajectories = [Trajectory("0.5"), Trajectory("0.25")]
    for trajectory in trajectories:
        trajectory.metadata["criteria"] = json.dumps(HB[2]["rubrics"])  # ART takes scalars
    scored = await score(TrajectoryGroup(trajectories))
    assert [t.reward for t in scored.trajectories] == [0.5, 0.25]
    assert sent(fake) == [HB[2]["rubrics"]] * 2


def test_format_and_mode_come_from_the_environment(
    fake: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REWARDSVC_CRITERIA_FORMAT", "strings")
    monkeypatch.setenv("REWARDSVC_CRITERIA_MODE", "extend")
    hook = make_reward_func(fake.url, "per-prompt", judge_error_wait=0)
    hook(["0.5"], [""], [rubric_label(["Is short."])])
    assert fake.requests[0]["options"] == {"criteria_format": "strings", "criteria_mode": "extend"}
    with pytest.raises(ValueError, match="criteria_mode"):
        make_reward_func(fake.url, "per-prompt", criteria_mode="append")


def test_labels_and_values_are_read_as_the_service_reads_them() -> None:
    assert split_label("5") == ("5", None)
    assert split_label("{not json") == ("{not json", None)
    assert split_label('{"answer": 5}') == ('{"answer": 5}', None)  # a JSON reference
    assert split_label(rubric_label(["a"])) == (None, ["a"])
    assert criteria_value("") is None and criteria_value("  ") is None
    assert criteria_value('[{"criterion": "x", "points": 1}]') == [{"criterion": "x", "points": 1}]
    assert criteria_value("[not json") == "[not json"  # the service names what is wrong
    assert criteria_value(np.array(["a", "b"])) == ["a", "b"]
