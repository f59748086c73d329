"""The client adapters' objectives: TRL's one reward function per objective (one request per
batch, None where missing, picklable, async), veRL's GDPO keys and NeMo-RL's dict rewards (an
objective without a value, and an outage, are flagged stand-ins)."""

from __future__ import annotations

import asyncio
import inspect
import pickle
from collections.abc import Iterator
from typing import Any

import pytest
from test_client_adapters import FakeService

from rewardsvc_client import verl as verl_adapter
from rewardsvc_client.nemo_rl import RewardsvcEnvironment
from rewardsvc_client.trl import TRLObjective, trl_objective_funcs


def objectives_of(item: dict[str, Any]) -> dict[str, Any]:
    """Completion "c,e" -> objectives correct=c, explanation=e ("-" for None); "fail": a
    judge_error with no values."""
    text = item["completion"]
    if text == "fail":
        return {"reward": None, "status": "judge_error", "objectives": {"correct": None,
                "explanation": None}}  # fmt: skip
    c, e = (None if v == "-" else float(v) for v in text.split(","))
    reward = None if c is None or e is None else (c + e) / 2
    return {"reward": reward, "status": "ok", "objectives": {"correct": c, "explanation": e}}


@pytest.fixture
def fake() -> Iterator[FakeService]:
    service = FakeService()
    service.script = lambda body: [objectives_of(i) for i in body["items"]]
    yield service
    service.close()


async def test_each_objective_is_a_reward_function_sharing_one_request(fake: FakeService) -> None:
    correct, explanation = trl_objective_funcs(fake.url, "math", ["correct", "explanation"])
    assert (correct.__name__, explanation.__name__) == (
        "rewardsvc/math/correct",
        "rewardsvc/math/explanation",
    )
    prompts, completions = ["p", "p", "q"], ["1,0.4", "0,-", "fail"]
    # TRL gathers its async reward functions concurrently: one request for both.
    got = await asyncio.gather(correct(prompts, completions), explanation(prompts, completions))
    assert got == [[1.0, 0.0, None], [0.4, None, None]]
    assert len(fake.requests) == 1
    # Called one after the other on the same batch: still that one request.
    assert await correct(prompts, completions) == [1.0, 0.0, None]
    assert len(fake.requests) == 1
    # The next batch is a new request.
    assert await explanation(["p"], ["1,0.9"]) == [0.9]
    assert len(fake.requests) == 2
    assert correct.shared.requests == 2


async def test_objective_functions_log_missing_values_through_trls_hook(fake: FakeService) -> None:
    (correct,) = trl_objective_funcs(fake.url, "math", ["correct"], name="svc")
    logged: dict[str, float] = {}
    await correct(["p", "p"], ["-,1", "1,1"], log_metric=logged.__setitem__)
    assert logged["svc/correct/missing"] == 0.5
    assert logged["svc/ok"] == 1.0  # the shared request's status metrics, once, under name


async def test_objective_functions_pickle_together_and_stay_async(fake: FakeService) -> None:
    funcs = trl_objective_funcs(fake.url, "math", ["correct", "explanation"])
    await funcs[0](["p"], ["1,1"])
    clones: list[TRLObjective] = pickle.loads(pickle.dumps(funcs))
    assert clones[0].shared is clones[1].shared  # still one request per batch
    for clone in clones:
        assert asyncio.iscoroutinefunction(clone) and inspect.iscoroutinefunction(clone)
    got = await asyncio.gather(clones[0](["p"], ["0,0.5"]), clones[1](["p"], ["0,0.5"]))
    assert got == [[0.0], [0.5]]
    assert len(fake.requests) == 2


async def test_a_failed_request_masks_every_objective(fake: FakeService) -> None:
    fake.script = lambda body: (500, {"error": {"message": "down"}})
    funcs = trl_objective_funcs(fake.url, "math", ["correct", "explanation"], on_error="none",
                                retries=0)  # fmt: skip
    got = await asyncio.gather(*(f(["p", "p"], ["1,1", "1,1"]) for f in funcs))
    assert got == [[None, None], [None, None]]
    assert len(fake.requests) == 1


def test_objective_names_are_given_once() -> None:
    with pytest.raises(ValueError, match="once"):
        trl_objective_funcs("http://x", "math", ["a", "a"])
    with pytest.raises(ValueError, match="once"):
        trl_objective_funcs("http://x", "math", [])


def test_verl_returns_the_objectives_as_gdpo_keys(fake: FakeService) -> None:
    out = verl_adapter.compute_score_batch(
        ["d"] * 3,
        ["1,0.25", "0,-", "fail"],
        ["5"] * 3,
        url=fake.url,
        rubric="math",
        objectives=["correct", "explanation"],
        failure_score=-1.0,
        judge_error_retries=0,
        judge_error_wait=0,
    )
    assert [(o["correct"], o["explanation"], o["rewardsvc_objectives_valid"]) for o in out] == [
        (1.0, 0.25, 1.0),
        (0.0, -1.0, 0.0),  # no value: failure_score, flagged
        (-1.0, -1.0, 0.0),
    ]
    # The same keys for every sample: veRL stacks each key into one float array.
    assert len({tuple(sorted(o)) for o in out}) == 1
    plain = verl_adapter.compute_score_batch(["d"], ["1,1"], ["5"], url=fake.url, rubric="math")
    assert "correct" not in plain[0] and "rewardsvc_objectives_valid" not in plain[0]


def test_verl_objectives_from_a_command_line_string_and_reserved_keys(fake: FakeService) -> None:
    out = verl_adapter.compute_score(
        "d", "0,0.5", "5", url=fake.url, rubric="math", objectives="correct, explanation"
    )
    assert (out["correct"], out["explanation"]) == (0.0, 0.5)
    with pytest.raises(ValueError, match="adapter's own"):
        verl_adapter.compute_score("d", "1,1", "5", url=fake.url, rubric="m", objectives=["score"])


# ------------------------------------------------------------------ NeMo-RL


def _log(answer: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "2+3?"}, {"role": "assistant", "content": answer}]


def _degraded(item: dict[str, Any]) -> dict[str, Any]:
    """The reward exists (one judge answered) but the other judge's objective has no value."""
    return {"reward": 0.8, "status": "degraded", "error": "judge 'secondary' failed",
            "objectives": {"overall": 0.8, "second_opinion": None}}  # fmt: skip


@pytest.mark.parametrize(
    "objectives", [True, ["overall", "second_opinion"], "overall,second_opinion"]
)
def test_nemo_rl_flags_an_objective_without_a_value(fake: FakeService, objectives: Any) -> None:
    pytest.importorskip("torch")
    fake.script = lambda body: [_degraded(i) for i in body["items"]]
    cfg = {"url": fake.url, "rubric": "r", "objectives": objectives, "failure_score": -1.0}
    out = RewardsvcEnvironment(cfg).step([_log("5"), _log("6")], [{}, {}])
    assert {k: v.tolist() for k, v in out.rewards.items()} == {
        "reward/overall": pytest.approx([0.8, 0.8]), "reward/second_opinion": [-1.0, -1.0]
    }  # fmt: skip
    for meta, observation in zip(out.metadata, out.observations, strict=True):
        # The reward is real (valid); its second_opinion column is a stand-in, flagged.
        assert (meta["rewardsvc_valid"], meta["rewardsvc_objectives_valid"]) == (1.0, 0.0)
        assert observation["content"].endswith("no value for objectives second_opinion")


def test_nemo_rl_objectives_through_an_outage_are_flagged_failure_rewards(
    fake: FakeService,
) -> None:
    pytest.importorskip("torch")
    ok = {"reward": 0.5, "status": "ok", "objectives": {"correct": 1.0, "explanation": 0.0}}
    fake.script = lambda body: [ok for _ in body["items"]]
    cfg = {"url": fake.url, "rubric": "r", "judge_error_wait": 0, "failure_score": -1.0}
    learned = RewardsvcEnvironment({**cfg, "objectives": True})
    learned.step([_log("5")], [{}])
    listed = RewardsvcEnvironment({**cfg, "objectives": ["correct", "explanation"]})
    unknown = RewardsvcEnvironment({**cfg, "objectives": True})
    fake.script = lambda body: (500, {"error": {"message": "down"}})
    # Names listed, or seen at an earlier step: the same columns, every value flagged.
    for env in (learned, listed):
        out = env.step([_log("5"), _log("6")], [{}, {}])
        assert {k: v.tolist() for k, v in out.rewards.items()} == {
            "reward/correct": [-1.0, -1.0], "reward/explanation": [-1.0, -1.0]
        }  # fmt: skip
        assert all(m["rewardsvc_valid"] == 0.0 for m in out.metadata)
        assert all(m["rewardsvc_objectives_valid"] == 0.0 for m in out.metadata)
    # True with no name seen yet: the flagged scalar stand-in, not an exception.
    out = unknown.step([_log("5"), _log("6")], [{}, {}])
    assert out.rewards.tolist() == [-1.0, -1.0]
    assert all(m["rewardsvc_valid"] == 0.0 for m in out.metadata)
    assert out.observations[0]["content"] == "rewardsvc: no reward (request_failed)"


def test_nemo_rl_objectives_true_without_any_declared_is_a_configuration_error(
    fake: FakeService,
) -> None:
    pytest.importorskip("torch")
    fake.script = lambda body: [{"reward": 0.5, "status": "ok"} for _ in body["items"]]
    env = RewardsvcEnvironment({"url": fake.url, "rubric": "r", "objectives": True})
    with pytest.raises(ValueError, match="declares no objectives"):
        env.step([_log("5")], [{}])
