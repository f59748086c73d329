"""Group adapters: each prompt's completions judged together (POST /v1/groups).

Trainers of the GRPO family use a reward only relative to the other completions of the same
prompt, and judges compare more reliably than they score in isolation. These adapters send
one prompt's completions as one group (``method="listwise"``: the judge sees the whole group
in several shuffled orders; ``"pairwise"``: a tournament of pairs, each asked in both orders)
and hand the rewards back in the trainer's order:

- TRL: ``trl_group_reward_func`` (TRL passes a prompt's ``num_generations`` completions in
  a row); None where a completion has no reward (TRL masks it).
- verifiers (classic API): ``verifiers_comparative_reward_func``; ``failure_score`` where a
  completion has no reward, with the verdict in ``state["rewardsvc"]``.
- slime: ``make_group_rm(..., method=...)`` / module-level ``group_rm``
  (``--group-rm --custom-rm-path rewardsvc_client.groups.group_rm``); a sample without a
  reward is marked ``remove_sample``.
- ART: ``make_comparative_group_scorer``, an ``after_each`` for ``gather_trajectory_groups``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from rewardsvc_client._adapt import (
    LoopClients,
    Settings,
    failure_score_default,
    is_configuration_error,
    logger,
    saturation_wait,
    to_reference,
    to_wire_text,
)
from rewardsvc_client.client import RewardServiceError
from rewardsvc_client.types import GroupResult

ENV_METHOD = "REWARDSVC_METHOD"
METHODS = ("listwise", "pairwise")


def consecutive_groups(prompts: Sequence[Any], size: int | None = None) -> list[range]:
    """Index ranges of the groups in a flat batch: runs of ``size`` when given (TRL's
    ``num_generations``), else runs of equal consecutive prompts."""
    if size is not None:
        if size < 1 or len(prompts) % size:
            raise ValueError(f"{len(prompts)} completions do not split into groups of {size}")
        return [range(i, i + size) for i in range(0, len(prompts), size)]
    ranges: list[range] = []
    start = 0
    for i in range(1, len(prompts) + 1):
        if i == len(prompts) or repr(prompts[i]) != repr(prompts[start]):
            ranges.append(range(start, i))
            start = i
    return ranges


def _options(settings: Settings, method: str) -> dict[str, Any]:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    return {**(settings.options or {}), "method": method}


class GroupScoring:
    """Sends groups to /v1/groups; waits out a saturated service and re-sends groups that
    came back ``judge_error`` for up to ``judge_error_wait`` seconds (judges often recover)."""

    def __init__(self, settings: Settings, method: str, judge_error_wait: float = 0.0) -> None:
        self.settings = settings
        self.options = _options(settings, method)
        self.method = method
        self.judge_error_wait = judge_error_wait
        self.clients = LoopClients(settings)

    async def _send(self, groups: list[dict[str, Any]]) -> list[GroupResult]:
        deadline = time.monotonic() + self.settings.timeout
        attempt = 0
        while True:
            try:
                response = await self.clients.get().groups(
                    self.settings.rubric, groups, self.options, run=self.settings.run
                )
                return response.results
            except RewardServiceError as exc:
                wait = saturation_wait(exc, attempt)
                if wait is None or time.monotonic() + wait > deadline:
                    raise
                await asyncio.sleep(wait)
                attempt += 1

    async def score(self, groups: list[dict[str, Any]]) -> list[GroupResult]:
        """One result per group, in order."""
        results = await self._send(groups)
        deadline = time.monotonic() + self.judge_error_wait
        pause = 1.0
        while time.monotonic() < deadline:
            failed = [i for i, r in enumerate(results) if r.status == "judge_error"]
            if not failed:
                break
            await asyncio.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 10.0)
            try:
                retry = await self._send([groups[i] for i in failed])
            except RewardServiceError as exc:
                if is_configuration_error(exc):
                    raise
                logger.warning("rewardsvc: re-sending judge_error groups failed: %s", exc)
                break
            for index, result in zip(failed, retry, strict=True):
                results[index] = result
        return results

    async def flat(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        references: Sequence[Any] | None,
        size: int | None,
        trainer: str,
    ) -> tuple[list[float | None], list[str]]:
        """Rewards and statuses of a flat batch, grouped by prompt and flattened back."""
        ranges = consecutive_groups(prompts, size)
        groups = []
        for n, span in enumerate(ranges):
            group: dict[str, Any] = {
                "id": str(n),
                "prompt": to_wire_text(prompts[span.start]),
                "completions": [to_wire_text(completions[i]) for i in span],
                "metadata": {"trainer": trainer},
            }
            reference = to_reference(references[span.start]) if references is not None else None
            if reference is not None:
                group["reference"] = reference
            groups.append(group)
        rewards: list[float | None] = [None] * len(prompts)
        statuses = ["request_failed"] * len(prompts)
        if not groups:
            return rewards, statuses
        results = await self.score(groups)
        for span, result in zip(ranges, results, strict=True):
            values = result.rewards if len(result.rewards) == len(span) else [None] * len(span)
            for i, value in zip(span, values, strict=True):
                rewards[i] = value
                scored = result.status in ("ok", "degraded")
                statuses[i] = result.status if (value is not None) == scored else "judge_error"
        return rewards, statuses


def _settings(url: str | None, rubric: str | None, **kwargs: Any) -> Settings:
    return Settings.resolve(url, rubric, **kwargs)


def trl_group_reward_func(
    url: str | None,
    rubric: str | None,
    reference_column: str | None = "reference",
    api_key: str | None = None,
    *,
    method: str = "listwise",
    num_generations: int | None = None,
    name: str | None = None,
    options: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    run: str | None = None,
) -> Callable[..., Awaitable[list[float | None]]]:
    """A TRL reward function judging each prompt's completions as one group.

    TRL passes the ``num_generations`` completions of a prompt in a row; they are sent as one
    group (by ``num_generations`` when given, else by runs of equal prompts) and the rewards
    come back flattened in TRL's order, None where a completion has no reward (TRL masks it).
    Completions with tool calls are sent whole. Other arguments as ``trl_reward_func``.
    """
    settings = _settings(url, rubric, api_key=api_key, timeout=timeout, options=options, run=run)
    scoring = GroupScoring(settings, method)
    label = name or f"rewardsvc-{method}/{settings.rubric}"

    async def reward(
        prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        references = kwargs.get(reference_column) if reference_column else None
        rewards, statuses = await scoring.flat(
            prompts, completions, references, num_generations, "trl"
        )
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and statuses:
            for status in ("ok", "degraded", "judge_error", "rejected"):
                log_metric(f"{label}/{status}", statuses.count(status) / len(statuses))
        return rewards

    reward.__name__ = label
    reward.__qualname__ = label
    reward.rewardsvc = scoring  # type: ignore[attr-defined]
    return reward


def _annotate_state(state: Any, status: str, reward: float | None) -> None:
    # A state that refuses new keys loses only this annotation, never the reward.
    with contextlib.suppress(TypeError, AttributeError, KeyError):
        state["rewardsvc"] = {"status": status, "reward": reward}


def verifiers_comparative_reward_func(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    method: str = "listwise",
    failure_score: float | None = None,
    judge_error_wait: float = 120.0,
    options: Mapping[str, Any] | None = None,
    run: str | None = None,
) -> Callable[..., Awaitable[list[float]]]:
    """A verifiers (classic API) group reward function: ``async def f(prompts, completions,
    answers, states, **kwargs) -> list[float]``; each prompt's consecutive rollouts are one
    group. A completion without a reward gets ``failure_score`` (default
    $REWARDSVC_FAILURE_SCORE or 0.0) and its state records the status."""
    settings = _settings(url, rubric, api_key=api_key, options=options, run=run)
    scoring = GroupScoring(settings, method, judge_error_wait)
    fallback = failure_score_default() if failure_score is None else failure_score

    async def reward(
        prompts: Sequence[Any],
        completions: Sequence[Any],
        answers: Sequence[Any] | None = None,
        states: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        rewards, statuses = await scoring.flat(prompts, completions, answers, None, "verifiers")
        for state, status, value in zip(states or [], statuses, rewards, strict=False):
            _annotate_state(state, status, value)
        return [fallback if r is None else r for r in rewards]

    reward.__name__ = f"rewardsvc_{method}"
    return reward


class SlimeGroupRM:
    """``await group_rm(args, samples)``: one prompt's samples judged as one group."""

    def __init__(self, scoring: GroupScoring, failure_score: float) -> None:
        self.scoring = scoring
        self.failure_score = failure_score

    async def group_rm(self, args: Any, samples: Sequence[Any], **kwargs: Any) -> list[float]:
        """slime group RM: one reward per sample; a sample without one is removed."""
        if not samples:
            return []
        group: dict[str, Any] = {
            "id": "0",
            "prompt": to_wire_text(getattr(samples[0], "prompt", "")),
            "completions": [to_wire_text(getattr(s, "response", "")) for s in samples],
            "metadata": {"trainer": "slime"},
        }
        reference = to_reference(getattr(samples[0], "label", None))
        if reference is not None:
            group["reference"] = reference
        try:
            result: GroupResult | None = (await self.scoring.score([group]))[0]
        except RewardServiceError as exc:
            if is_configuration_error(exc):
                raise
            logger.error("rewardsvc slime group RM: %s", exc)
            result = None
        rewards = result.rewards if result and len(result.rewards) == len(samples) else None
        out = []
        for i, sample in enumerate(samples):
            value = rewards[i] if rewards else None
            status = "request_failed" if result is None else result.status
            metadata = getattr(sample, "metadata", None)
            if isinstance(metadata, dict):
                metadata["rewardsvc"] = {"status": status, "reward": value, "method": "group"}
            if value is None:
                sample.remove_sample = True
            out.append(self.failure_score if value is None else float(value))
        return out


def make_group_rm(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    method: str = "listwise",
    failure_score: float = 0.0,
    judge_error_wait: float = 100.0,
    options: Mapping[str, Any] | None = None,
    run: str | None = None,
) -> SlimeGroupRM:
    """A slime group RM (export its ``group_rm`` from your module) for ``--group-rm``."""
    settings = _settings(url, rubric, api_key=api_key, options=options, run=run)
    return SlimeGroupRM(GroupScoring(settings, method, judge_error_wait), failure_score)


_slime: SlimeGroupRM | None = None


async def group_rm(args: Any, samples: Sequence[Any], **kwargs: Any) -> list[float]:
    """``--group-rm --custom-rm-path rewardsvc_client.groups.group_rm``: configured by
    $REWARDSVC_URL (else slime's ``--rm-url``), $REWARDSVC_RUBRIC, $REWARDSVC_RUN and
    $REWARDSVC_METHOD (listwise, the default, or pairwise)."""
    global _slime
    if _slime is None:
        url = os.environ.get("REWARDSVC_URL") or getattr(args, "rm_url", None)
        _slime = make_group_rm(url, method=os.environ.get(ENV_METHOD) or "listwise")
    return await _slime.group_rm(args, samples, **kwargs)


class ComparativeGroupScorer:
    """ART ``after_each``: a TrajectoryGroup's trajectories judged as one group."""

    def __init__(self, scoring: GroupScoring, reference_key: str = "reference") -> None:
        self.scoring = scoring
        self.reference_key = reference_key

    async def __call__(self, group: Any) -> Any:
        from rewardsvc_client.art import RewardsvcScoreError, split_trajectory

        trajectories = list(group.trajectories)
        if not trajectories:
            return group
        split = [split_trajectory(t) for t in trajectories]
        request: dict[str, Any] = {
            "id": "0",
            "prompt": split[0][0],
            "completions": [completion for _, completion in split],
            "metadata": {"trainer": "art"},
        }
        metadata = getattr(trajectories[0], "metadata", None) or {}
        reference = to_reference(metadata.get(self.reference_key))
        if reference is not None:
            request["reference"] = reference
        try:
            result: GroupResult | None = (await self.scoring.score([request]))[0]
        except RewardServiceError as exc:
            if is_configuration_error(exc):
                raise
            logger.error("rewardsvc ART group scorer: %s", exc)
            result = None
        rewards = result.rewards if result and len(result.rewards) == len(trajectories) else None
        kept: list[Any] = []
        failed: list[BaseException] = []
        for i, trajectory in enumerate(trajectories):
            value = rewards[i] if rewards else None
            if value is None:
                why = "request failed" if result is None else f"status {result.status}"
                failed.append(RewardsvcScoreError(f"rewardsvc gave no reward ({why})"))
                continue
            trajectory.reward = value
            trajectory.metrics["rewardsvc_valid"] = 1.0
            if result is not None and result.position_consistency is not None:
                trajectory.metrics["rewardsvc_position_consistency"] = result.position_consistency
            kept.append(trajectory)
        if len(kept) < 2:
            logger.warning("rewardsvc ART group scorer: group dropped (fewer than 2 rewards)")
            return None
        scored = type(group)(
            kept + failed,
            metadata=dict(group.metadata),
            metrics=dict(group.metrics),
            logs=list(group.logs),
        )
        scored.exceptions = list(group.exceptions) + list(scored.exceptions)
        return scored


def make_comparative_group_scorer(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    method: str = "listwise",
    run: str | None = None,
    reference_key: str = "reference",
    judge_error_wait: float = 120.0,
    options: Mapping[str, Any] | None = None,
) -> ComparativeGroupScorer:
    """An ``after_each`` for ``art.gather_trajectory_groups`` judging each group as a whole
    (as ART's RULER does, but in shuffled orders or a both-orders tournament)."""
    settings = _settings(url, rubric, api_key=api_key, options=options, run=run)
    return ComparativeGroupScorer(GroupScoring(settings, method, judge_error_wait), reference_key)


__all__ = [
    "ComparativeGroupScorer",
    "GroupScoring",
    "SlimeGroupRM",
    "consecutive_groups",
    "group_rm",
    "make_comparative_group_scorer",
    "make_group_rm",
    "trl_group_reward_func",
    "verifiers_comparative_reward_func",
]
