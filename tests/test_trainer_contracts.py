"""Each trainer adapter, called exactly the way its trainer calls it, against a real
``rewardsvc serve`` scoring with the real CPU judges.

The call shapes are copied from the trainers' current sources:
* TRL 1.16 ``GRPOTrainer._calculate_rewards`` (trl/trainer/grpo_trainer.py),
* veRL 0.9 ``verl/trainer/ppo/reward.py`` (loading) and (its real package runs in
  test_trainer_packages.py)
  ``verl/experimental/reward_loop/reward_manager/naive.py`` (call, result handling),
* OpenRLHF 0.11 ``openrlhf/utils/agent.py`` ``SingleTurnAgentExecutor`` and
  ``trainer/ppo_utils/samples_generator.py`` (what it reads back),
* verifiers 0.3 ``verifiers/legacy/rubrics/rubric.py`` (parameter-name injection).
Each test then checks the shape the trainer reads, and that the numbers are the ones the
service returned (its reward log, or the same items through /v1/rewards).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import inspect
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Service
from rewardlog import reward_lines

import rewardsvc_client.openrlhf
from rewardsvc_client import Client
from rewardsvc_client.trl import trl_reward_func
from rewardsvc_client.verifiers import verifiers_group_reward_func, verifiers_reward_func

pytestmark = pytest.mark.judges

RUBRIC = "short-answer-correctness"  # 3 criteria, both judges, requires a reference
QUESTION = "What is 2 + 3?"
# (completion, reference): right, wrong, a "master key" reply, and no reference (rejected).
SAMPLES: list[tuple[str, str | None]] = [("5", "5"), ("It is 7.", "5"), (":", "5"), ("5", None)]


def reward_log(service: Service) -> list[dict[str, Any]]:
    """The reward lines of the service's reward log so far (its event lines left out: the
    session's service also logs monitor alerts)."""
    return reward_lines(Path(service.env["REWARDSVC_REWARD_LOG"]))


def service_rewards(service: Service, items: list[dict[str, Any]]) -> list[float | None]:
    """The same items straight through POST /v1/rewards (verdicts come from the cache)."""
    with Client(service.url) as client:
        return client.rewards(RUBRIC, items).rewards


def assert_reward(value: Any) -> None:
    assert isinstance(value, float) and 0.0 <= value <= 1.0, value


# ------------------------------------------------------------------ TRL


@pytest.fixture(scope="module")
def trl_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """TRL runs async reward functions on an event loop in a daemon thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)


def is_async_callable(func: Any) -> bool:  # trl.trainer.utils.is_async_callable
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(func.__call__)


def get_callable_name(func: Any) -> str:  # trl.trainer.utils.get_callable_name
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", type(func).__name__)


class TrainerState:
    global_step = 3


def test_trl_grpo_contract(service: Service, trl_loop: asyncio.AbstractEventLoop) -> None:
    reward_func = trl_reward_func(service.url, RUBRIC, reference_column="answer")
    assert is_async_callable(reward_func)
    name = get_callable_name(reward_func)
    assert name == f"rewardsvc/{RUBRIC}"

    # A conversational dataset: prompt column + "answer" column; completions are messages.
    inputs = [
        {
            "prompt": [{"role": "user", "content": QUESTION}],
            "answer": reference,
            "completion": [{"role": "assistant", "content": completion}],
            "completion_ids": [1, 2],
        }
        for completion, reference in SAMPLES
    ]
    prompts = [x["prompt"] for x in inputs]
    completions = [x["completion"] for x in inputs]
    completion_ids_list = [x["completion_ids"] for x in inputs]

    # --- from GRPOTrainer._calculate_rewards
    keys = [key for key in inputs[0] if key not in ["prompt", "completion", "completion_ids"]]
    reward_kwargs: dict[str, Any] = {key: [example[key] for example in inputs] for key in keys}
    reward_kwargs["trainer_state"] = TrainerState()
    extra_logs: dict[str, list[Any]] = {}
    metrics: dict[str, list[float]] = {}
    reward_kwargs["log_extra"] = lambda column, values: extra_logs.setdefault(column, []).extend(
        values
    )
    reward_kwargs["log_metric"] = lambda n, value: metrics.setdefault(n, []).append(value)

    async def _invoke_async(func: Any) -> list[float]:
        output = await func(
            prompts=prompts, completions=completions, completion_ids=completion_ids_list,
            **reward_kwargs,
        )  # fmt: skip
        output = [r if r is not None else math.nan for r in output]
        assert len(output) == len(prompts)
        return output

    future = asyncio.run_coroutine_threadsafe(_invoke_async(reward_func), trl_loop)
    rewards = future.result(timeout=300)
    # ---

    for value in rewards[:3]:
        assert_reward(value)
    assert math.isnan(rewards[3])  # no reference: rejected -> None -> NaN, TRL masks it
    # degraded: a judge too slow on a busy machine; the reward is still the service's
    statuses = extra_logs[f"{name}/status"]
    assert set(statuses[:3]) <= {"ok", "degraded"} and statuses[3] == "rejected"
    # flags pass through as the service reports them for the same items
    same = [
        {"prompt": p, "completion": c, "reference": x["answer"]}
        for p, c, x in zip(prompts, completions, inputs, strict=True)
    ]
    with Client(service.url) as client:
        direct = client.rewards(RUBRIC, same[:3]).results
    assert extra_logs[f"{name}/flags"][:3] == [",".join(r.flags) for r in direct]
    assert all(len(values) == len(prompts) for values in extra_logs.values())
    ok_or_degraded = metrics[f"{name}/ok"][0] + metrics[f"{name}/degraded"][0]
    assert ok_or_degraded == 0.75 and metrics[f"{name}/rejected"] == [0.25]
    assert 0.0 <= metrics[f"{name}/uncertainty"][0] <= 1.0

    # The numbers TRL got are those the service logged for this call.
    run = reward_func.rewardsvc.run_id  # type: ignore[attr-defined]
    mine: list[dict[str, Any]] = []
    deadline = time.monotonic() + 10
    while len(mine) < len(SAMPLES) and time.monotonic() < deadline:
        lines = reward_log(service)
        mine = [r for r in lines if r["metadata"].get("run") == run]
        time.sleep(0.1)
    mine.sort(key=lambda r: int(r["id"]))
    assert [r["metadata"]["step"] for r in mine] == [3] * 4
    logged = [math.nan if r["reward"] is None else r["reward"] for r in mine]
    assert logged[:3] == rewards[:3] and math.isnan(logged[3])


# ------------------------------------------------------------------ veRL


async def _call_with_kwargs_async(raw_fn: Any, extra_kwargs: dict, *args: Any, **kwargs: Any):
    """verl.trainer.ppo.reward._call_with_kwargs_async: reward_kwargs take precedence."""
    merged_kwargs = {**kwargs, **extra_kwargs}
    return await raw_fn(*args, **merged_kwargs)


async def test_verl_reward_loop_contract(service: Service) -> None:
    # reward.custom_reward_function.path=pkg://rewardsvc_client.verl, name=compute_score_async
    module_path = "pkg://rewardsvc_client.verl"
    module = importlib.import_module(module_path[len("pkg://") :].replace("/", "."))
    raw_fn = module.compute_score_async
    reward_kwargs = {"url": service.url, "rubric": RUBRIC}
    assert inspect.iscoroutinefunction(raw_fn)
    compute_score = functools.partial(_call_with_kwargs_async, raw_fn, reward_kwargs)
    assert inspect.iscoroutinefunction(compute_score)  # NaiveRewardManager.is_async_reward_score

    async def run_single(index: int, solution: str, ground_truth: str | None) -> dict[str, Any]:
        extra_info: dict[str, Any] = {"question": QUESTION, "index": index, "split": "train"}
        extra_info["num_turns"] = None
        extra_info["rollout_reward_scores"] = {}
        result = await compute_score(
            data_source="openai/gsm8k",
            solution_str=solution,
            ground_truth=ground_truth,
            extra_info=extra_info,
        )
        reward_extra_info = {}
        if isinstance(result, dict):
            score = result["score"]
            for key, value in result.items():
                reward_extra_info[key] = value
        else:
            score = result
            reward_extra_info["acc"] = score
        return {"reward_score": score, "reward_extra_info": reward_extra_info}

    # RewardLoopWorker.compute_score_batch: one task per sample
    outputs = await asyncio.gather(
        *(run_single(i, c, r) for i, (c, r) in enumerate(SAMPLES))
    )  # fmt: skip

    # RewardLoopManager.compute_rm_score: scores, then one array per extra key
    scores = [item["reward_score"] for item in outputs]
    infos = [output.get("reward_extra_info", {}) for output in outputs]
    keys = list(infos[0].keys())
    columns = {key: [info[key] for info in infos] for key in keys}  # KeyError if keys differ
    assert all(isinstance(v, float) for values in columns.values() for v in values)
    assert columns["rewardsvc_valid"] == [1.0, 1.0, 1.0, 0.0]
    assert columns["rewardsvc_rejected"] == [0.0, 0.0, 0.0, 1.0]

    for score in scores[:3]:
        assert_reward(score)
    assert scores[3] == 0.0  # no reward: failure_score, never NaN (it would poison the group)
    # compute_grpo_outcome_advantage on one group of 4: finite
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1))
    assert all(math.isfinite((s - mean) / (std + 1e-6)) for s in scores)

    expected = service_rewards(
        service,
        [{"prompt": QUESTION, "completion": c, "reference": r} for c, r in SAMPLES[:3]],
    )
    assert scores[:3] == expected


# ------------------------------------------------------------------ OpenRLHF

CHAT_PROMPT = f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"


def openrlhf_samples() -> list[tuple[str, str, str]]:
    """(query, prompt, label) as SingleTurnAgentExecutor builds them: the query is the
    chat-templated prompt plus the response, decoded with special tokens."""
    return [
        (CHAT_PROMPT + completion + "<|im_end|>", CHAT_PROMPT, reference or "")
        for completion, reference in SAMPLES[:3]
    ]


async def test_openrlhf_python_file_contract(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --reward.remote_url /path/to/rewardsvc_client/openrlhf.py, configured by environment
    monkeypatch.setenv("REWARDSVC_URL", service.url)
    monkeypatch.setenv("REWARDSVC_RUBRIC", RUBRIC)
    path = rewardsvc_client.openrlhf.__file__
    assert path.endswith(".py")
    spec = importlib.util.spec_from_file_location("reward_func", path)
    assert spec is not None and spec.loader is not None
    reward_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reward_module)
    reward_func = reward_module.reward_func

    async def execute(query: str, prompt: str, label: str) -> dict[str, Any]:
        # _fetch_rewards_via_func: one thread-offloaded call per chunk of one sample
        rewards_info_list = await asyncio.gather(
            asyncio.to_thread(reward_func, [query], [prompt], [label])
        )
        rewards_info = rewards_info_list[0] if rewards_info_list else None
        assert rewards_info
        score_value = rewards_info.get("scores")
        if score_value is None:
            score_value = rewards_info.get("rewards")
        return {
            "reward": rewards_info.get("rewards"),
            "scores": score_value,
            "extra_logs": rewards_info.get("extra_logs") or {},
        }

    outputs = await asyncio.gather(*(execute(*s) for s in openrlhf_samples()))
    key_sets = {tuple(sorted(o["extra_logs"])) for o in outputs}
    assert len(key_sets) == 1  # the same extra_logs keys every time
    for output in outputs:
        # _process_response_into_experience: torch.tensor([reward_val]) etc.
        assert isinstance(output["reward"], list) and len(output["reward"]) == 1
        assert_reward(output["reward"][0])
        assert output["scores"] == output["reward"]
        for values in output["extra_logs"].values():
            assert len(values) == 1 and isinstance(values[0], float)
        assert output["extra_logs"]["rewardsvc_valid"] == [1.0]

    expected = service_rewards(
        service,
        [{"prompt": CHAT_PROMPT, "completion": c, "reference": r} for c, r in SAMPLES[:3]],
    )
    assert [o["reward"][0] for o in outputs] == expected


async def test_openrlhf_remote_url_contract(service: Service) -> None:
    # --reward.remote_url http://HOST:PORT/openrlhf/<rubric>: _fetch_rewards_via_http
    url = f"{service.url}/openrlhf/{RUBRIC}"
    async with httpx.AsyncClient(timeout=180) as http:
        replies = []
        for query, prompt, label in openrlhf_samples():
            payload = {"query": [query], "prompts": [prompt], "labels": [label]}
            response = await http.post(url, json=payload)
            response.raise_for_status()
            replies.append(response.json())
    keys = {tuple(sorted(r["extra_logs"])) for r in replies}
    assert len(keys) == 1
    for reply in replies:
        assert len(reply["rewards"]) == 1
        assert_reward(reply["rewards"][0])
        assert all(len(v) == 1 for v in reply["extra_logs"].values())
    expected = service_rewards(
        service,
        [{"prompt": CHAT_PROMPT, "completion": c, "reference": r} for c, r in SAMPLES[:3]],
    )
    assert [r["rewards"][0] for r in replies] == expected


# ------------------------------------------------------------------ verifiers

GROUP_INDICATORS = {"states", "prompts", "completions", "answers", "tasks", "infos"}


def is_group_func(func: Any) -> bool:  # Rubric._is_group_func
    sig = inspect.signature(func)
    returns = sig.return_annotation
    returns_list = returns is list or getattr(returns, "__origin__", None) is list
    return bool(set(sig.parameters) & GROUP_INDICATORS) or returns_list


async def maybe_await(func: Any, *args: Any, **kwargs: Any) -> Any:
    result = func(*args, **kwargs)
    if inspect.isawaitable(result):
        return await result
    return result


async def call_with_named_args(func: Any, merged: dict[str, Any]) -> Any:
    """Rubric._call_individual_reward_func / _call_group_reward_func argument selection."""
    sig = inspect.signature(func)
    if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        return await maybe_await(func, **merged)
    allowed = {k: v for k, v in merged.items() if k in sig.parameters}
    return await maybe_await(func, **allowed)


async def test_verifiers_rubric_contract(service: Service) -> None:
    single = verifiers_reward_func(service.url, RUBRIC)
    group = verifiers_group_reward_func(service.url, RUBRIC)
    assert not is_group_func(single) and is_group_func(group)

    states = [
        {
            "prompt": [{"role": "user", "content": QUESTION}],
            "completion": [{"role": "assistant", "content": completion}],
            "answer": reference or "",
            "info": {},
            "task": "default",
            "trajectory": [],
        }
        for completion, reference in SAMPLES
    ]
    parser = object()

    def score_objects(state: dict[str, Any]) -> dict[str, Any]:
        return {
            "prompt": state["prompt"],
            "completion": state["completion"],
            "answer": state.get("answer", ""),
            "state": state,
            "info": state.get("info", {}),
            "parser": parser,
            "task": state.get("task"),
        }

    singles = [float(await call_with_named_args(single, score_objects(s))) for s in states]
    group_objects = {
        "prompts": [s["prompt"] for s in states],
        "completions": [s["completion"] for s in states],
        "answers": [s.get("answer", "") for s in states],
        "states": states,
        "tasks": [s.get("task") for s in states],
        "infos": [s.get("info", {}) for s in states],
        "parser": parser,
    }
    grouped = await call_with_named_args(group, group_objects)
    assert isinstance(grouped, list) and len(grouped) == len(states)
    weight = 1.0
    aggregated = [score * weight for score in grouped]  # score_group's sum: must be numbers

    for value in aggregated[:3]:
        assert_reward(value)
    assert aggregated[3] == 0.0 and singles[3] == 0.0  # "" answer -> no reference -> rejected
    assert singles == grouped
    statuses = [s["rewardsvc"]["status"] for s in states]
    assert set(statuses[:3]) <= {"ok", "degraded"} and statuses[3] == "rejected"
    expected = service_rewards(
        service,
        [
            {"prompt": s["prompt"], "completion": s["completion"], "reference": s["answer"]}
            for s in states[:3]
        ],
    )
    assert grouped[:3] == expected
