"""Each trainer's own, current package calls rewardsvc through its adapter, against a live
service scoring with the real CPU judges, and survives a judge outage.

Every trainer runs in its own cached venv (tests/trainers/venvs.py: the trainer's real
package, only what its reward path imports, torch pinned to CPU) in a subprocess. The
service reaches the judges through fault proxies: each trainer scores a first batch, then
the judges are unreachable for 20 s in the middle of a second batch. Its own code path must
end with the real rewards (the same numbers the service gives for those items) or with
masked/flagged samples: never unflagged zeros, never a crash.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from conftest import Service
from trainers import venvs
from trainers.harness import FaultProxy, outage, run_trainer

from rewardsvc_client import Client
from rewardsvc_client.slime import make_rm
from rewardsvc_client.trl import trl_reward_func

# Each test starts a trainer's venv python (imports take tens of seconds on a busy machine)
# and waits out a 20 s judge outage: minutes in all.
pytestmark = [pytest.mark.judges, pytest.mark.slow]

RUBRIC = "short-answer-correctness"
QUESTION = "What is 2 + 3?"


def service_reward(service: Service, completion: str, reference: str | None,
                   prompt: Any = QUESTION, rubric: str = RUBRIC) -> float | None:  # fmt: skip
    """The service's reward for one item straight through /v1/rewards (from its cache)."""
    item: dict[str, Any] = {"prompt": prompt, "completion": completion}
    if reference:
        item["reference"] = reference
    with Client(service.url) as client:
        return client.rewards(rubric, [item]).results[0].reward


def real(value: Any, expected: float | None, degraded: bool) -> bool:
    """A real reward: the service's own for the item, or, when fewer judges answered (a judge
    still recovering: status degraded, flagged as such), a reward in [0, 1]."""
    if degraded:
        return isinstance(value, float) and 0.0 <= value <= 1.0
    return value == expected


def test_verifiers_v1_plugin_scores_tasks_and_raises_instead_of_zero(
    proxied: tuple[Service, list[FaultProxy]], tmp_path: Path
) -> None:
    service, proxies = proxied
    got = run_trainer("verifiers", "verifiers_run.py", [service.url, RUBRIC], proxies, tmp_path)
    right, wrong, rejected = got["before"]
    asked = [{"role": "user", "content": QUESTION}]  # the task's prompt, as messages
    for case, completion in ((right, "5"), (wrong, "It is 7.")):
        expected = service_reward(service, completion, "5", asked)
        degraded = case["info"]["status"] == "degraded"
        assert real(case["rewards"]["rewardsvc_judge"], expected, degraded)
    # No answer: the rubric rejects the item, and verifiers errors the rollout (never 0).
    assert rejected["rewards"] is None and "rejected" in rejected["error"]
    # Through the outage: the real rewards after the judges came back, or, where they did
    # not come back within the judge's wait, an error for the rollout: never a 0.
    during = [("Five.", "5"), ("It is 9.", "5")]
    for case, (completion, answer) in zip(got["during"], during, strict=True):
        if case["error"] is not None:
            assert case["rewards"] is None and "judge_error" in case["error"]
            continue
        expected = service_reward(service, completion, answer, asked)
        degraded = case["info"]["status"] == "degraded"
        assert real(case["rewards"]["rewardsvc_judge"], expected, degraded)


# ------------------------------------------------------------------ veRL


def tokenizer_dir() -> Path:
    """The tokenizer of the SmolLM2 folder that deploy/cpu-judge converts."""
    return venvs.cache_dir() / "cpu-judge" / "models" / "smollm2-135m-instruct"


def close(a: list[float], b: list[float | None]) -> bool:
    """Equal rewards where veRL's legacy managers store them in float32 tensors."""
    return len(a) == len(b) and all(
        y is not None and abs(x - y) <= 1e-6 * max(1.0, abs(y)) for x, y in zip(a, b, strict=True)
    )


def test_verl_reward_managers_score_a_batch_through_the_adapter(
    proxied: tuple[Service, list[FaultProxy]], tmp_path: Path
) -> None:
    service, proxies = proxied
    got = run_trainer("verl", "verl_run.py", [service.url, str(tokenizer_dir())], proxies, tmp_path)
    responses = got["responses"]  # as the tokenizer round trip leaves them
    gsm8k, chat = "short-answer-correctness", "helpful-answer"  # the rubric per data_source
    expected = [
        service_reward(service, responses[0], "5", "What is 2 + 3?", gsm8k),
        service_reward(service, responses[1], "5", "What is 2 + 3?", gsm8k),
        service_reward(service, responses[2], "red, yellow or blue", "Name a primary color.", chat),
    ]
    for manager, out in got["before"].items():
        check_verl(out, expected, manager)
        # No reference: rejected, a flagged 0.0 (veRL cannot drop one sample of a batch).
        assert out["scores"][3] == 0.0, manager
        assert out["extra"]["rewardsvc_valid"][3] == 0.0, manager
        assert out["extra"]["rewardsvc_rejected"] == [0.0, 0.0, 0.0, 1.0], manager
    during = [
        service_reward(service, responses[4], "7", "What is 3 + 4?", gsm8k),
        service_reward(service, responses[5], "red, yellow or blue", "Name a primary color.", chat),
    ]
    for manager, out in got["during"].items():
        check_verl(out, during, manager)


def check_verl(out: dict[str, Any], expected: list[float | None], manager: str) -> None:
    """The first scores are real rewards: the service's own, or flagged degraded ones; a
    failure score only with rewardsvc_valid = 0."""
    extra = out["extra"]
    for i, want in enumerate(expected):
        if extra["rewardsvc_valid"][i] == 0.0:  # judges never came back: flagged
            assert out["scores"][i] == 0.0 and extra["rewardsvc_judge_error"][i] == 1.0, manager
        elif extra["rewardsvc_degraded"][i] == 1.0:
            assert 0.0 <= out["scores"][i] <= 1.0, manager
        else:
            assert close([out["scores"][i]], [want]), manager


# ------------------------------------------------------------------ OpenRLHF

CHAT_PROMPT = f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"


def test_openrlhf_remote_reward_client_against_the_route_and_the_python_hook(
    proxied: tuple[Service, list[FaultProxy]], tmp_path: Path
) -> None:
    service, proxies = proxied
    got = run_trainer("openrlhf", "openrlhf_run.py", [service.url, RUBRIC], proxies, tmp_path)
    expected = [
        service_reward(service, "5", "5", CHAT_PROMPT),
        service_reward(service, "It is 7.", "5", CHAT_PROMPT),
        service_reward(service, "5.", "5", CHAT_PROMPT),  # the prompt was cut from the left
    ]
    for path in ("http", "func"):
        before = got["before"][path]
        for reply, want in zip(before[:3], expected, strict=True):
            check_openrlhf(reply, want, path)
        # The same extra_logs keys from the route and from the python-file hook.
        assert {tuple(sorted(b["extra_logs"])) for b in before} == {
            tuple(sorted(got["before"]["func"][0]["extra_logs"]))
        }
        assert before[3]["rewards"] == [0.0]  # no label: rejected, flagged
        assert before[3]["extra_logs"]["rewardsvc_rejected"] == [1.0]
        assert before[3]["extra_logs"]["rewardsvc_valid"] == [0.0]
        # Through the outage: OpenRLHF's own 5 tries never ran out (the route held them).
        for reply, completion in zip(got["during"][path], ["Five", "6"], strict=True):
            check_openrlhf(reply, service_reward(service, completion, "5", CHAT_PROMPT), path)


def check_openrlhf(reply: dict[str, Any], want: float | None, path: str) -> None:
    """A reward OpenRLHF got: the service's own, a flagged degraded one, or a flagged 0.0."""
    assert reply.get("error") is None, path  # a reward came back: never None in OpenRLHF
    logs = reply["extra_logs"]
    if logs["rewardsvc_valid"] == [0.0]:
        assert reply["rewards"] == [0.0] and logs["rewardsvc_judge_error"] == [1.0], path
    else:
        assert real(reply["rewards"][0], want, logs["rewardsvc_degraded"] == [1.0]), path


# ------------------------------------------------------------------ ART


def test_art_trajectory_groups_scored_by_gather_after_each(
    proxied: tuple[Service, list[FaultProxy]], tmp_path: Path
) -> None:
    service, proxies = proxied
    got = run_trainer("art", "art_run.py", [service.url, RUBRIC], proxies, tmp_path)
    asked = [{"role": "user", "content": QUESTION}]
    for phase in ("before", "during"):
        (group,) = got[phase]
        assert group["exceptions"] == []
        assert group["valid"] == [1.0] * len(group["answers"])
        for answer, value, degraded in zip(
            group["answers"], group["rewards"], group["degraded"], strict=True
        ):
            completion = [{"role": "assistant", "content": answer}]
            assert real(value, service_reward(service, completion, "5", asked), degraded == 1.0)


# ------------------------------------------------------------------ slime and TRL, in process


# slime is not on PyPI. Its remote RM loop, as in THUDM/slime commit
# 0b420f1ef4161f02d2a00d47c1318eec955a4e2e, slime/rollout/rm_hub/__init__.py (remote_rm: a
# shared aiohttp session with a 120 s total timeout, 10 tries, backoff min(2**n, 30) + U(0,1),
# re-raise after the last), and its Sample fields (slime/utils/types.py at commit
# 0d234f3e3a83c81b7d37209994e0b994deacbb24: prompt, response, label, metadata, remove_sample).
async def slime_remote_rm(url: str, sample: Any, max_retries: int = 10) -> Any:
    payload = {"prompt": sample.prompt, "response": sample.response, "label": sample.label}
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for attempt in range(max_retries):
            try:
                async with session.post(url, json=payload) as resp:
                    resp.raise_for_status()
                    return await resp.json()
            except Exception:
                if attempt + 1 >= max_retries:
                    raise
                await asyncio.sleep(min(2**attempt, 30) + random.random())


def slime_sample(response: str, label: str | None = "5") -> SimpleNamespace:
    return SimpleNamespace(
        prompt=QUESTION, response=response, label=label, metadata={}, remove_sample=False
    )


async def test_slime_remote_rm_and_group_rm_through_an_outage(
    proxied: tuple[Service, list[FaultProxy]],
) -> None:
    service, proxies = proxied
    scorer = make_rm(service.url, RUBRIC, run="slime-test")
    args = SimpleNamespace(rm_url=f"{service.url}/slime/{RUBRIC}")
    group = [slime_sample("5"), slime_sample("It is 7."), slime_sample("5", None)]
    assert await scorer.group_rm(args, group) == [
        service_reward(service, "5", "5"), service_reward(service, "It is 7.", "5"), 0.0
    ]  # fmt: skip
    assert [s.remove_sample for s in group] == [False, False, True]  # rejected: left out
    remote = slime_sample("Five.")
    custom = [slime_sample("It is 11."), slime_sample("5!")]
    with outage(proxies):
        remote_reward, custom_rewards = await asyncio.gather(
            slime_remote_rm(f"{args.rm_url}?run=slime-test&format=dict", remote),
            scorer.group_rm(args, custom),
        )
    # The route held the request and the adapter re-sent: real rewards, nothing removed.
    assert remote_reward["valid"] is True
    expected = service_reward(service, "Five.", "5")
    assert real(remote_reward["reward"], expected, remote_reward["status"] == "degraded")
    for sample, value in zip(custom, custom_rewards, strict=True):
        assert not sample.remove_sample
        degraded = sample.metadata["rewardsvc"]["status"] == "degraded"
        assert real(value, service_reward(service, sample.response, "5"), degraded)


async def test_trl_reward_function_through_an_outage_masks_or_scores(
    proxied: tuple[Service, list[FaultProxy]],
) -> None:
    service, proxies = proxied
    reward = trl_reward_func(service.url, RUBRIC, reference_column="answer", run="trl-test")
    completions = ["5", "It is 12.", "5 (five)", "It is 13."]
    extra: dict[str, list[Any]] = {}

    def log_extra(column: str, values: list[Any]) -> None:
        extra.setdefault(column, []).extend(values)

    with outage(proxies):
        rewards = await reward(
            prompts=[QUESTION] * 4, completions=completions, answer=["5"] * 4,
            log_extra=log_extra, log_metric=lambda name, value: None,
        )  # fmt: skip
    statuses = extra[f"rewardsvc/{RUBRIC}/status"]
    for value, status, completion in zip(rewards, statuses, completions, strict=True):
        if value is None:  # masked: TRL leaves it out of the group baseline, never a 0
            assert status == "judge_error"
        else:
            assert real(value, service_reward(service, completion, "5"), status == "degraded")
    assert None in rewards  # the outage was met, and masked
