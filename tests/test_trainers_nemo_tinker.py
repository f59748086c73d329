"""NeMo-RL and Tinker cookbook adapters: their logic against a scripted /v1/rewards, then
each trainer's own code path (the cookbook's real package; NeMo-RL's reward path pinned to a
source commit, see tests/trainers/nemo_rl_run.py) against the live service through a 20 s
judge outage behind the fault proxy: real rewards, or flagged / dropped samples, never
unflagged zeros, never a crash."""

from __future__ import annotations

import pickle
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import Service
from test_client_adapters import FakeService

from rewardsvc_client import Client
from rewardsvc_client.nemo_rl import RewardsvcEnvironment, split_messages
from rewardsvc_client.tinker import (
    RewardsvcEnvGroupBuilder,
    RewardsvcNoReward,
    make_scorer,
    rubric_criteria,
    rubric_env_group_builder,
)


def verdict(item: dict[str, Any]) -> dict[str, Any]:
    """The last message's text decides: a number, 'fail' (judge_error), 'reject'."""
    completion = item["completion"]
    text = completion if isinstance(completion, str) else completion[-1]["content"]
    if text == "fail":
        return {"reward": None, "status": "judge_error", "error": "judges failed"}
    if text == "reject":
        return {"reward": None, "status": "rejected", "error": "reference: required"}
    value = float(text)
    return {"reward": value, "status": "ok", "objectives": {"judged": value, "exact": 1.0}}


@pytest.fixture
def fake() -> Iterator[FakeService]:
    service = FakeService()
    service.script = lambda body: [verdict(i) for i in body["items"]]
    yield service
    service.close()


def outage_then_ok(fake: FakeService, failures: int) -> dict[str, int]:
    calls = {"n": 0}

    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        calls["n"] += 1
        if calls["n"] <= failures:
            return [{"reward": None, "status": "judge_error"} for _ in body["items"]]
        return [verdict(i) for i in body["items"]]

    fake.script = script
    return calls


def log(answer: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "2+3?"}, {"role": "assistant", "content": answer}]


# ------------------------------------------------------------------ NeMo-RL, scripted


def test_nemo_rl_split_and_items_carry_reference_and_criteria(fake: FakeService) -> None:
    assert split_messages(log("5")) == (
        [{"role": "user", "content": "2+3?"}], [{"role": "assistant", "content": "5"}]
    )  # fmt: skip
    env = RewardsvcEnvironment({"url": fake.url, "rubric": "r", "run": "exp"})
    results = env.score(
        [log("0.5"), log("0.25")], [{"ground_truth": "5"}, {"criteria": ["Says 5."]}]
    )
    assert [r.reward for r in results if r] == [0.5, 0.25]
    first, second = fake.requests[0]["items"]
    assert first["reference"] == "5" and "criteria" not in first
    assert second["criteria"] == ["Says 5."] and "reference" not in second
    assert fake.requests[0]["run"] == "exp"
    assert pickle.loads(pickle.dumps(env.settings)) == env.settings


def test_nemo_rl_holds_a_judge_outage_then_flags_what_has_no_reward(fake: FakeService) -> None:
    torch = pytest.importorskip("torch")
    calls = outage_then_ok(fake, failures=2)
    env = RewardsvcEnvironment({"url": fake.url, "rubric": "r", "judge_error_wait": 30})
    out = env.step([log("0.75"), log("reject")], [{}, {}])
    assert calls["n"] == 3  # held through two judge_error answers
    assert out.rewards.tolist() == [0.75, 0.0] and out.terminateds.all()
    assert out.observations[1]["content"] == "rewardsvc: no reward (rejected)"
    assert out.metadata[1]["rewardsvc_valid"] == 0.0 and out.metadata[0]["rewardsvc_valid"] == 1.0
    assert isinstance(out.rewards, torch.Tensor)
    _, metrics = env.global_post_process_and_metrics(None)
    assert metrics["rewardsvc/rejected"] == 1.0


def test_nemo_rl_dict_rewards_keyed_by_objective(fake: FakeService) -> None:
    pytest.importorskip("torch")
    cfg = {"url": fake.url, "rubric": "r", "objectives": True, "scalar_key": "reward/total"}
    out = RewardsvcEnvironment(cfg).step([log("0.5"), log("0.25")], [{}, {}])
    assert {k: v.tolist() for k, v in out.rewards.items()} == {
        "reward/exact": [1.0, 1.0], "reward/judged": [0.5, 0.25], "reward/total": [0.5, 0.25]
    }  # fmt: skip


# ------------------------------------------------------------------ Tinker, scripted


@dataclass
class StepResult:
    """The fields of the cookbook's StepResult the adapter sets."""

    reward: float
    episode_done: bool
    next_observation: Any
    next_stop_condition: Any
    metrics: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, Any] = field(default_factory=dict)


class Renderer:
    """The renderer methods the adapter calls: the action is the reply text."""

    def get_stop_sequences(self) -> list[str]:
        return ["\n\nUser:"]

    def build_generation_prompt(self, convo: list[Any]) -> list[Any]:
        return list(convo)

    def parse_response(self, action: str) -> tuple[dict[str, str], bool]:
        return {"role": "assistant", "content": action}, True


@pytest.fixture
def cookbook_types(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("tinker_cookbook.rl.types")
    module.StepResult = StepResult  # type: ignore[attr-defined]
    for name in ("tinker_cookbook", "tinker_cookbook.rl"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "tinker_cookbook.rl.types", module)


async def test_tinker_step_reward_and_no_reward_raises(
    fake: FakeService, cookbook_types: None
) -> None:
    calls = outage_then_ok(fake, failures=1)
    scorer = make_scorer(fake.url, "r", judge_error_wait=30)
    builder = RewardsvcEnvGroupBuilder(Renderer(), [{"role": "user", "content": "2+3?"}],
                                       scorer, 2, reference="5")  # fmt: skip
    first, second = await builder.make_envs()
    result = await first.step("0.5")
    assert calls["n"] == 2 and result.reward == 0.5 and result.episode_done
    assert result.metrics["rewardsvc_valid"] == 1.0 and result.logs["rewardsvc_status"] == "ok"
    assert fake.requests[-1]["items"][0]["reference"] == "5"
    with pytest.raises(RewardsvcNoReward, match="rejected"):
        await second.step("reject")
    assert await builder.compute_group_rewards([object(), object()], [first, second]) == [
        (0.0, {}), (0.0, {})
    ]  # fmt: skip


async def test_tinker_rubric_datapoint_scored_as_a_group(
    fake: FakeService, cookbook_types: None
) -> None:
    rubric = types.SimpleNamespace(rubric_str="Says 5.", extraction_regex="x")
    datapoint = types.SimpleNamespace(convo=[{"role": "user", "content": "2+3?"}],
                                      rubric_items=[rubric])  # fmt: skip
    assert rubric_criteria([rubric, {"rubric_str": "b"}]) == [
        {"rubric_str": "Says 5."}, {"rubric_str": "b"}
    ]  # fmt: skip
    with pytest.raises(ValueError, match="tinker"):
        rubric_env_group_builder(Renderer(), datapoint, make_scorer(fake.url, "r"), 2)
    scorer = make_scorer(fake.url, "per-prompt", criteria_format="tinker")
    builder = rubric_env_group_builder(Renderer(), datapoint, scorer, 2, "group")
    envs = await builder.make_envs()
    assert [(await e.step(a)).reward for e, a in zip(envs, ["0.5", "0.25"], strict=True)] == [
        0.0, 0.0
    ]  # fmt: skip
    assert fake.requests == []  # group mode: nothing scored per step
    rewards = await builder.compute_group_rewards([object()] * 2, envs)
    assert [r for r, _ in rewards] == [0.5, 0.25]
    (request,) = fake.requests
    assert request["options"]["criteria_format"] == "tinker"
    assert [i["criteria"] for i in request["items"]] == [[{"rubric_str": "Says 5."}]] * 2
    envs[1].reply = {"role": "assistant", "content": "fail"}
    scorer.judge_error_wait = 0
    with pytest.raises(RewardsvcNoReward, match="judge_error"):
        await builder.compute_group_rewards([object()] * 2, envs)


# ------------------------------------------------------------------ live, in trainer venvs


RUBRIC = "short-answer-correctness"


def reward_of(service: Service, rubric: str, item: dict[str, Any], **options: Any) -> Any:
    """The service's own result for an item the adapter sent (from its cache)."""
    item = {k: v for k, v in item.items() if k != "id"}
    with Client(service.url) as client:
        return client.rewards(rubric, [item], options or None).results[0]


def matches(value: float, result: Any, seen: dict[str, Any]) -> bool:
    """The service's reward (to float32 precision: NeMo-RL keeps rewards in float32
    tensors), or, when the adapter saw it degraded (``seen``: its per-sample numbers; a
    judge still recovering, so fewer judges), one in [0, 1]: the service's answer now is
    the healthy one, cached."""
    if seen["rewardsvc_degraded"] == 1.0 or result.status == "degraded":
        return 0.0 <= value <= 1.0
    return result.reward is not None and abs(value - result.reward) <= 1e-6


@pytest.mark.judges
@pytest.mark.slow
def test_tinker_cookbook_group_rollouts_through_an_outage(proxied: Any, tmp_path: Path) -> None:
    from test_trainer_packages import tokenizer_dir
    from trainers.harness import run_trainer

    service, proxies = proxied
    args = [service.url, RUBRIC, str(tokenizer_dir())]
    got = run_trainer("tinker-cookbook", "tinker_run.py", args, proxies, tmp_path)
    for phase in ("before", "during"):
        step, grouped = got[phase]["step"], got[phase]["rubric"]
        assert step["errors"] == [] and grouped["errors"] == [], phase
        # Trajectories come back in the order they finished: pair each with its item.
        sent = {i["completion"][0]["content"]: i for i in step["sent"]}
        assert len(sent) == len(step["step_rewards"])
        for value, reply, seen in zip(
            step["step_rewards"], step["replies"], step["metrics"], strict=True
        ):
            item = sent[reply.removesuffix("\n\nUser:").strip()]
            assert matches(value, reward_of(service, RUBRIC, item), seen), phase
        assert step["final_rewards"] == [0.0] * len(step["sent"])
        for value, item, seen in zip(
            grouped["final_rewards"], grouped["sent"], grouped["metrics"], strict=True
        ):
            assert item["criteria"] == [{"rubric_str": t} for t in got["rubric_items"]]
            result = reward_of(service, "per-prompt", item, criteria_format="tinker")
            assert matches(value, result, seen), phase
        assert all(m["rewardsvc_valid"] == 1.0 for m in step["metrics"] + grouped["metrics"])


@pytest.mark.judges
@pytest.mark.slow
def test_nemo_rl_reward_path_through_an_outage(proxied: Any, tmp_path: Path) -> None:
    from trainers.harness import run_trainer

    service, proxies = proxied
    got = run_trainer("nemo-rl", "nemo_rl_run.py", [service.url, RUBRIC], proxies, tmp_path)

    def item(answer: str, reference: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "prompt": [{"role": "user", "content": "What is 2 + 3?"}],
            "completion": [{"role": "assistant", "content": answer}],
        }
        return {**out, "reference": reference} if reference else out

    before = got["before"]["scalar"]
    for value, answer, seen in zip(
        before["total_reward"][:2], ["5", "It is 7."], before["metadata"], strict=False
    ):
        assert matches(value, reward_of(service, RUBRIC, item(answer, "5")), seen)
    # No ground truth: rejected, a stand-in 0.0 flagged in the observation and metadata.
    assert before["total_reward"][2] == 0.0
    assert before["observations"][2] == "rewardsvc: no reward (rejected)"
    assert before["metadata"][2]["rewardsvc_valid"] == 0.0
    named = got["before"]["dict"]
    assert named["gdpo_components"] == ["reward/rewardsvc"]
    assert named["total_reward"] == before["total_reward"]
    # Through the outage: held, then the real rewards; never an unflagged 0.
    during = got["during"]["scalar"]
    for value, answer, note, meta in zip(
        during["total_reward"], ["Five.", "It is 9."], during["observations"],
        during["metadata"], strict=True,
    ):  # fmt: skip
        if meta["rewardsvc_valid"] == 0.0:
            assert value == 0.0 and note == "rewardsvc: no reward (judge_error)"
        else:
            assert matches(value, reward_of(service, RUBRIC, item(answer, "5")), meta)
    assert got["metrics"]["rewardsvc/rejected"] == 1.0
