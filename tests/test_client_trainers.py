"""The trainer adapters' new paths against a scripted /v1/rewards (no judges): veRL's sync,
batch and per-data_source forms, slime's custom and group RM functions, ART's group scorer,
TRL's coroutine check and missing-reward fill, runs, and re-sending through an outage."""

from __future__ import annotations

import asyncio
import inspect
import pickle
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from test_client_adapters import FakeService, by_completion

from rewardsvc_client import Client
from rewardsvc_client import verl as verl_adapter
from rewardsvc_client.art import make_group_scorer
from rewardsvc_client.slime import make_rm
from rewardsvc_client.trl import TRLReward, trl_reward_func


@pytest.fixture
def fake() -> Iterator[FakeService]:
    service = FakeService()
    yield service
    service.close()


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("URL", "RUBRIC", "API_KEY", "TIMEOUT", "FAILURE_SCORE", "RUN"):
        monkeypatch.delenv(f"REWARDSVC_{name}", raising=False)


def judge_error_then_ok(fake: FakeService, failures: int) -> dict[str, int]:
    """Every item is judge_error for the first ``failures`` requests (an outage), then scored."""
    calls = {"n": 0}

    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        calls["n"] += 1
        if calls["n"] <= failures:
            return [{"reward": None, "status": "judge_error"} for _ in body["items"]]
        return [by_completion(i) for i in body["items"]]

    fake.script = script
    return calls


# ------------------------------------------------------------------ veRL


def test_verl_sync_batch_and_async_give_the_same_dicts(fake: FakeService) -> None:
    kwargs = {"url": fake.url, "rubric": "r", "judge_error_wait": 0}
    sync = verl_adapter.compute_score("d", "0.25", "g", {"question": "q"}, **kwargs)
    assert not inspect.iscoroutinefunction(verl_adapter.compute_score)  # remote manager
    assert inspect.iscoroutinefunction(verl_adapter.compute_score_async)
    async_ = asyncio.run(verl_adapter.compute_score_async("d", "0.25", "g", {"question": "q"},
                                                          **kwargs))  # fmt: skip
    batch = verl_adapter.compute_score_batch(
        data_sources=["d", "d", "d"],
        solution_strs=["0.25", "fail", "reject"],
        ground_truths=["g", "g", "g"],
        extra_infos=[{"question": "q"}] * 3,
        **kwargs,
    )
    assert sync == async_ == batch[0]
    assert [b["score"] for b in batch] == [0.25, 0.0, 0.0]
    assert [b["rewardsvc_valid"] for b in batch] == [1.0, 0.0, 0.0]
    assert batch[1]["rewardsvc_judge_error"] == 1.0 and batch[2]["rewardsvc_rejected"] == 1.0
    assert len({tuple(b) for b in batch}) == 1  # the same keys for every sample
    assert len(fake.requests[2]["items"]) == 3  # the batch is one request


def test_verl_rubric_per_data_source_and_run(fake: FakeService) -> None:
    batch = verl_adapter.compute_score_batch(
        ["math", "chat", "other"], ["0.1", "0.2", "0.3"], ["1", "2", "3"], None,
        url=fake.url, rubrics={"math": "math-rubric", "default": "chat-rubric"}, run="exp-1",
    )  # fmt: skip
    assert [b["score"] for b in batch] == [0.1, 0.2, 0.3]
    by_rubric = {r["rubric"]: [i["completion"] for i in r["items"]] for r in fake.requests}
    assert by_rubric == {"math-rubric": ["0.1"], "chat-rubric": ["0.2", "0.3"]}
    assert {r["run"] for r in fake.requests} == {"exp-1"}
    with pytest.raises(ValueError, match="no rubric for data_source"):
        verl_adapter.compute_score("x", "0.1", "1", url=fake.url, rubrics={"math": "m"})


def test_verl_uses_the_reward_router_address_when_no_url_is_set(fake: FakeService) -> None:
    address = fake.url.removeprefix("http://")  # veRL hands "host:port"
    out = verl_adapter.compute_score(
        "d", "0.5", "g", {"question": "q"}, rubric="r",
        reward_router_address=address, reward_model_tokenizer=object(),
    )  # fmt: skip
    assert out["score"] == 0.5 and fake.requests


def test_verl_waits_out_a_judge_outage(fake: FakeService) -> None:
    calls = judge_error_then_ok(fake, failures=3)
    out = verl_adapter.compute_score(
        "d", "0.75", "g", {"question": "q"}, url=fake.url, rubric="r", judge_error_retries=0,
        judge_error_wait=30,
    )  # fmt: skip
    assert out["score"] == 0.75 and out["rewardsvc_valid"] == 1.0
    assert calls["n"] == 4


# ------------------------------------------------------------------ slime


def slime_sample(response: str, label: str | None = "5") -> SimpleNamespace:
    """The fields of slime's Sample that a reward function reads and writes."""
    return SimpleNamespace(
        prompt=[{"role": "user", "content": "2+3?"}], response=response, label=label,
        metadata={}, remove_sample=False,
    )  # fmt: skip


async def test_slime_rm_and_group_rm_mark_failures_removed(fake: FakeService) -> None:
    scorer = make_rm(fake.url, "r", judge_error_wait=0, run="slime-run")
    args = SimpleNamespace(rm_url=None)
    one = slime_sample("0.5")
    assert await scorer.rm(args, one) == 0.5 and not one.remove_sample
    group = [slime_sample("0.25"), slime_sample("fail"), slime_sample("reject", None)]
    rewards = await scorer.group_rm(args, group)
    assert rewards == [0.25, 0.0, 0.0]
    assert [s.remove_sample for s in group] == [False, True, True]
    assert [s.metadata["rewardsvc"]["status"] for s in group] == ["ok", "judge_error", "rejected"]
    group_request = fake.requests[1]
    assert len(group_request["items"]) == 3 and group_request["run"] == "slime-run"
    assert group_request["items"][0]["reference"] == "5"


async def test_slime_module_functions_read_rm_url(
    fake: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rewardsvc_client.slime as slime_adapter

    monkeypatch.setenv("REWARDSVC_RUBRIC", "r")
    monkeypatch.setattr(slime_adapter, "_default", None)
    args = SimpleNamespace(rm_url=fake.url)
    assert await slime_adapter.rm(args, slime_sample("0.5")) == 0.5
    assert await slime_adapter.group_rm(args, [slime_sample("0.1"), slime_sample("0.2")]) == [
        0.1,
        0.2,
    ]


# ------------------------------------------------------------------ ART


class Trajectory:
    """The fields of art.Trajectory the scorer reads and writes."""

    def __init__(self, answer: str, reference: str | None = None) -> None:
        self.messages_and_choices = [
            {"role": "user", "content": "2+3?"},
            {"role": "assistant", "content": answer},
        ]
        self.reward = 0.0
        self.metrics: dict[str, float] = {}
        self.metadata = {"reference": reference} if reference else {}

    def messages(self) -> list[dict[str, str]]:
        return self.messages_and_choices


class TrajectoryGroup:
    """art.TrajectoryGroup's constructor shape: exceptions among the trajectories move out."""

    def __init__(self, trajectories: list[Any], *, metadata: Any = None, metrics: Any = None,
                 logs: Any = None) -> None:  # fmt: skip
        self.trajectories = [t for t in trajectories if not isinstance(t, BaseException)]
        self.exceptions = [t for t in trajectories if isinstance(t, BaseException)]
        self.metadata, self.metrics, self.logs = metadata or {}, metrics or {}, logs or []


async def test_art_group_scorer_leaves_failed_trajectories_out(fake: FakeService) -> None:
    def last_message(item: dict[str, Any]) -> dict[str, Any]:
        return by_completion({"completion": item["completion"][-1]["content"]})

    fake.script = lambda body: [last_message(i) for i in body["items"]]
    score = make_group_scorer(fake.url, "r", judge_error_wait=0)
    group = TrajectoryGroup([Trajectory("0.5", "5"), Trajectory("fail"), Trajectory("0.25")])
    scored = await score(group)
    assert [t.reward for t in scored.trajectories] == [0.5, 0.25]
    assert len(scored.exceptions) == 1 and "judge_error" in str(scored.exceptions[0])
    sent = fake.requests[0]["items"]
    assert sent[0]["prompt"] == [{"role": "user", "content": "2+3?"}]
    assert sent[0]["completion"] == [{"role": "assistant", "content": "0.5"}]
    assert sent[0]["reference"] == "5" and "reference" not in sent[1]
    # Fewer than two rewards left: no relative signal, the group is dropped.
    assert await score(TrajectoryGroup([Trajectory("0.5"), Trajectory("fail")])) is None


# ------------------------------------------------------------------ TRL


def test_trl_reward_object_is_a_coroutine_function_and_pickles(fake: FakeService) -> None:
    reward = trl_reward_func(fake.url, "r")
    impl: TRLReward = reward.rewardsvc  # type: ignore[attr-defined]
    for candidate in (impl, pickle.loads(pickle.dumps(impl))):
        assert inspect.iscoroutinefunction(candidate)
        assert asyncio.iscoroutinefunction(candidate)
        assert list(inspect.signature(candidate).parameters) == ["prompts", "completions", "kwargs"]


def test_trl_missing_fill_keeps_the_scale(fake: FakeService) -> None:
    prompts = ["a", "a", "b", "b"]
    completions = ["0.2", "fail", "fail", "fail"]
    masked = trl_reward_func(fake.url, "r")
    assert asyncio.run(masked(prompts, completions)) == [0.2, None, None, None]
    metrics: dict[str, float] = {}
    group_mean = trl_reward_func(fake.url, "r", missing="group_mean", run="trl-run")
    out = asyncio.run(
        group_mean(prompts, completions, log_metric=lambda k, v: metrics.__setitem__(k, v))
    )
    assert out == [0.2, 0.2, None, None]  # prompt b: nothing scored, nothing to fill from
    assert metrics["rewardsvc/r/filled"] == 0.75
    assert fake.requests[-1]["run"] == "trl-run"
    constant = trl_reward_func(fake.url, "r", missing=0.0)
    assert asyncio.run(constant(prompts, completions)) == [0.2, 0.0, 0.0, 0.0]


# ------------------------------------------------------------------ runs


def test_run_is_sent_and_dropped_for_a_service_without_runs(fake: FakeService) -> None:
    def script(body: dict[str, Any]) -> Any:
        if "run" in body:
            return (422, {"error": "invalid_request", "message": "unknown", "field": "run"})
        return [by_completion(i) for i in body["items"]]

    fake.script = script
    with Client(fake.url) as client:
        assert client.rewards("r", [{"prompt": "p", "completion": "0.5"}], run="x").rewards == [0.5]
    assert [("run" in r) for r in fake.requests] == [True, False]
