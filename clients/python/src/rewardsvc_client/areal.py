"""AReaL adapter: a picklable ``reward_fn`` backed by rewardsvc.

AReaL's workflows (areal/workflow/rlvr.py, areal 1.0.4) call
``reward_fn(prompt, completions, prompt_ids, completion_ids, **data)`` through
``AsyncRewardWrapper`` (areal/api/reward_api.py): the function and its arguments are pickled
to a ``ProcessPoolExecutor``, each attempt gets ``timeout_seconds`` (15 s); a timed-out
attempt is retried, and after the last one (``max_retries`` = 3) the wrapper returns **0**,
an unflagged zero. An exception is retried the same way and, after the last attempt,
re-raised: the workflow's ``arun_episode`` fails and AReaL's ``WorkflowExecutor`` rejects that
rollout (counted in ``rollout/rejected``, logged), so it is never trained on.

So ``RewardFn`` answers **within** the timeout and never lets it expire: each attempt holds
(re-sending judge_error items) for at most ``budget`` seconds (default 12, below AReaL's 15),
then returns the service's reward or raises ``RewardsvcNoReward`` (an answer without a
reward) or ``DeadlineExceededError`` (no answer within the budget). AReaL retries that (each
retry holds ``budget`` again: about a minute in all with the default 4 attempts, enough for a
judge outage of tens of seconds) and, when the judges stay down, rejects the rollout. A
timed-out attempt would instead keep a pool worker busy with its abandoned call while the
retry queues behind it. ``on_failure="nan"`` returns NaN instead (for custom workflows that
filter with ``should_accept_fn``; see ``reward_is_real``).

    from rewardsvc_client.areal import make_reward_fn
    reward_fn = make_reward_fn("http://HOST:8000", "short-answer-correctness",
                               reference_key="answer")
    workflow = RLVRWorkflow(reward_fn=reward_fn, gconfig=..., tokenizer=...)

The prompt is the decoded prompt text (AReaL applies the chat template first); the dataset
field ``reference_key`` (``answer`` in AReaL's GSM8K recipes) is the reference.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from typing import Any

from rewardsvc_client._adapt import (
    Settings,
    is_configuration_error,
    logger,
    to_wire_text,
    wire_item,
)
from rewardsvc_client.errors import DeadlineExceededError, RewardServiceError, RewardsvcNoReward
from rewardsvc_client.types import RewardResult

AREAL_TIMEOUT = 15.0
"""Seconds; ``AsyncRewardWrapper``'s default ``timeout_seconds`` (areal 1.0.4)."""


def reward_is_real(trajectory: Mapping[str, Any]) -> bool:
    """A ``should_accept_fn`` for AReaL's ``rollout_batch``/``prepare_batch``: reject a
    trajectory whose ``rewards`` hold NaN (``on_failure="nan"``)."""
    rewards: Any = trajectory.get("rewards")
    values = rewards.flatten().tolist() if hasattr(rewards, "flatten") else [rewards]
    return not any(isinstance(v, float) and math.isnan(v) for v in values)


class RewardFn:
    """The picklable reward function (see the module docstring); holds only settings."""

    def __init__(
        self,
        settings: Settings,
        reference_key: str | None = "answer",
        budget: float = 12.0,
        on_failure: str = "raise",
        criteria_key: str | None = None,
    ) -> None:
        if on_failure not in ("raise", "nan"):
            raise ValueError("on_failure must be 'raise' or 'nan'")
        if not 0 < budget < AREAL_TIMEOUT:
            logger.warning("rewardsvc AReaL: budget %.1f s is not below AReaL's 15 s", budget)
        self.settings = settings
        self.reference_key = reference_key
        self.criteria_key = criteria_key
        self.budget = budget
        self.on_failure = on_failure

    def _ask(self, item: dict[str, Any], deadline: float) -> RewardResult:
        """The item's result, re-sent while it is judge_error and the budget lasts; raises
        ``DeadlineExceededError`` when no request got through in time."""
        result: RewardResult | None = None
        failure: RewardServiceError | None = None
        while (left := deadline - time.monotonic()) > 0.5:
            # One request may take at most what is left of the budget: never AReaL's timeout.
            settings = dataclasses.replace(self.settings, timeout=left, retries=0)
            try:
                with settings.client() as client:
                    response = client.rewards(
                        settings.rubric, [item], settings.options, run=settings.run
                    )
                result = response.results[0]
            except RewardServiceError as exc:
                if is_configuration_error(exc):
                    raise
                failure = exc
                logger.info("rewardsvc AReaL: %s; again while the budget lasts", exc)
            if result is not None and result.status != "judge_error":
                return result
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic() - 0.5)))
        if result is None:
            raise DeadlineExceededError(
                f"rewardsvc gave no answer within {self.budget:.0f} s ({failure})"
            ) from failure
        return result

    def __call__(
        self,
        prompt: Any,
        completions: Any,
        prompt_ids: Any = None,
        completion_ids: Any = None,
        **data: Any,
    ) -> float:
        """The service's reward for one completion; raises ``RewardsvcNoReward`` (the answer
        has none) or ``DeadlineExceededError`` (no answer within ``budget`` seconds), or
        returns NaN for either with ``on_failure="nan"``."""
        deadline = time.monotonic() + self.budget
        item = wire_item(
            0,
            to_wire_text(prompt),
            to_wire_text(completions),
            {"trainer": "areal"},
            data.get(self.reference_key) if self.reference_key else None,
            data.get(self.criteria_key) if self.criteria_key else None,
        )
        try:
            result = self._ask(item, deadline)
            if result.reward is not None:
                return float(result.reward)
            raise RewardsvcNoReward(
                f"rewardsvc gave no reward within {self.budget:.0f} s (status {result.status})",
                status=result.status,
            )
        except (RewardsvcNoReward, DeadlineExceededError) as exc:
            if self.on_failure != "nan":
                raise
            logger.warning("rewardsvc AReaL: %s; NaN", exc)
            return math.nan


def make_reward_fn(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    reference_key: str | None = "answer",
    budget: float = 12.0,
    on_failure: str = "raise",
    run: str | None = None,
    options: Mapping[str, Any] | None = None,
    criteria_key: str | None = None,
    criteria_format: str | None = None,
) -> RewardFn:
    """An AReaL ``reward_fn``; arguments left None come from REWARDSVC_URL, REWARDSVC_RUBRIC,
    REWARDSVC_API_KEY, REWARDSVC_RUN. ``budget``: seconds per attempt, below AReaL's 15 s
    timeout. ``on_failure``: "raise" (AReaL retries, then rejects the rollout) or "nan"."""
    settings = Settings.resolve(
        url, rubric, api_key=api_key, run=run, options=options, criteria_format=criteria_format
    )
    return RewardFn(settings, reference_key, budget, on_failure, criteria_key)


__all__ = ["RewardFn", "RewardsvcNoReward", "make_reward_fn", "reward_is_real"]
