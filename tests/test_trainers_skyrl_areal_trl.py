"""SkyRL, AReaL and TRL's AsyncGRPOTrainer call rewardsvc through their adapters, each in its
own cached venv with the trainer's real package, against a live service scoring with the real
CPU judges behind fault proxies, through a 20 s judge outage (tests/trainers/harness.py). Each
trainer's own code path must end with the service's rewards or with masked/flagged samples:
never unflagged zeros, never a crash.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import Service
from test_trainer_packages import QUESTION, RUBRIC, real, service_reward
from trainers.harness import FaultProxy, run_trainer

pytestmark = [pytest.mark.judges, pytest.mark.slow]

ASKED = [{"role": "user", "content": QUESTION}]


def assistant(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def test_skyrl_env_episode_and_turn_rewards_through_an_outage(
    proxied: tuple[Service, list[FaultProxy]], tmp_path: Path
) -> None:
    service, proxies = proxied
    got = run_trainer("skyrl", "skyrl_run.py", [service.url, RUBRIC], proxies, tmp_path)
    right, wrong, turns = got["before"]
    for episode in (right, wrong):
        (step,) = episode["steps"]
        info = step["metadata"]["rewardsvc"]
        assert step["done"] and info["valid"] and episode["metrics"]["rewardsvc_valid"] == 1.0
        want = service_reward(service, assistant(episode["actions"][0]), "5", ASKED)
        assert real(step["reward"], want, info["status"] == "degraded")
    # Turn level: each turn's reply scored with the conversation before it as the prompt.
    first, second = turns["steps"]
    assert not first["done"] and second["done"]
    assert first["observations"] == [{"role": "user", "content": "Check it again."}]
    prompts = [ASKED, [*ASKED, *assistant("It is 6."), *first["observations"]]]
    for step, prompt, action in zip(turns["steps"], prompts, ["It is 6.", "5"], strict=True):
        info = step["metadata"]["rewardsvc"]
        want = service_reward(service, assistant(action), "5", prompt)
        assert info["valid"] and real(step["reward"], want, info["status"] == "degraded")
    # Through the outage: SkyRL only takes numbers; the env held the step until the judges
    # came back (120 s wait), so the rewards are the real ones; a stand-in only flagged.
    for episode in got["during"]:
        (step,) = episode["steps"]
        info = step["metadata"]["rewardsvc"]
        if not info["valid"]:
            assert step["reward"] == 0.0 and episode["metrics"]["rewardsvc_valid"] == 0.0
            continue
        want = service_reward(service, assistant(episode["actions"][0]), "5", ASKED)
        assert real(step["reward"], want, info["status"] == "degraded")


AREAL_PROMPT = "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n"


def test_areal_async_reward_wrapper_within_its_timeout_through_an_outage(
    proxied: tuple[Service, list[FaultProxy]], tmp_path: Path
) -> None:
    service, proxies = proxied
    got = run_trainer("areal", "areal_run.py", [service.url, RUBRIC], proxies, tmp_path)
    assert (got["timeout"], got["retries"]) == (15, 3)  # AReaL's defaults, as documented
    right, wrong, rejected = got["before"]
    for case, completion in ((right, "5"), (wrong, "It is 7.")):
        want = service_reward(service, completion, "5", AREAL_PROMPT)
        assert case["reward"] == want
    # No reference: rejected by the rubric; the function raises, AReaL retries and re-raises
    # (its workflow executor rejects the rollout): never the wrapper's 0.
    assert "RewardsvcNoReward" in rejected["error"] and "reward" not in rejected
    log = Path(service.env["REWARDSVC_REWARD_LOG"]).read_text().splitlines()
    degraded = {
        line["reward"]
        for line in map(json.loads, log)
        if line.get("run") == "areal-test" and line.get("status") == "degraded"
    }
    for case in got["during"]:
        if "error" in case:
            assert "RewardsvcNoReward" in case["error"]
        else:
            # Never the wrapper's own 0 (an int, after a timed-out last attempt): the service's
            # reward, or, with a judge still recovering, one the service logged as degraded
            # (0.0 when the one judge left puts the answer under the rubric's gate).
            assert case["type"] == "float"
            want = service_reward(service, case["completion"], "5", AREAL_PROMPT)
            assert case["reward"] == want or case["reward"] in degraded
        # Every attempt answered within AReaL's timeout: 4 attempts of at most ~12.5 s.
        assert case["seconds"] < 4 * 15


def test_trl_async_grpo_reward_process_scores_and_masks_through_an_outage(
    proxied: tuple[Service, list[FaultProxy]], tmp_path: Path
) -> None:
    service, proxies = proxied
    got = run_trainer("trl-async", "trl_async_run.py", [service.url, RUBRIC], proxies, tmp_path)
    func, env = (f"rewards/{name}" for name in got["names"])
    assert got["exitcode"] == 0
    for sample in got["before"]:
        want = service_reward(service, assistant(sample["answer"]), "5", ASKED)
        env_want = service_reward(service, sample["answer"], "5", ASKED)
        assert sample["metrics"][func] == want and sample["metrics"][env] == env_want
        assert math.isclose(sample["metrics"]["reward"], want + env_want)
    masked = 0
    for sample in got["during"]:
        m = sample["metrics"]
        for key, completion in ((func, assistant(sample["answer"])), (env, sample["answer"])):
            if m[key] is not None:  # None: NaN in TRL, masked
                want = service_reward(service, completion, "5", ASKED)
                assert real(m[key], want, True)
            else:
                masked += 1
        if m[func] is None and m[env] is None:  # no reward at all: out of the baseline
            assert m["reward"] is None and sample["advantage"] == 0.0
    assert masked > 0  # the outage was met, and masked, not scored 0
