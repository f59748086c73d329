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

import dataclasses
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from rewardsvc_client._adapt import (
    LoopClients,
    Settings,
    annotate_state,
    failure_score_default,
    named,
    to_wire_text,
    with_reference,
)
from rewardsvc_client._retrying import drive, resending, results_or_none
from rewardsvc_client.art import regrouped, split_trajectory, trajectory_label
from rewardsvc_client.errors import no_reward
from rewardsvc_client.slime import mark, rm_url
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


def group_rewards(result: GroupResult | None, size: int) -> list[float | None]:
    """The ``size`` rewards of a group in order; all None when the result does not have one
    per completion (the request failed, or the service answered for another group size)."""
    if result is None or len(result.rewards) != size:
        return [None] * size
    return list(result.rewards)


def wire_group(
    index: int, prompt: Any, completions: list[Any], trainer: str, label: Any = None
) -> dict[str, Any]:
    """One group of POST /v1/groups: one prompt's completions (already converted) and the
    label as the reference when it has one."""
    group = {
        "id": str(index),
        "prompt": prompt,
        "completions": completions,
        "metadata": {"trainer": trainer},
    }
    return with_reference(group, label)


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
        self._asked = dataclasses.replace(settings, options=self.options)

    async def score(self, groups: list[dict[str, Any]]) -> list[GroupResult]:
        """One result per group, in order; raises when the request fails."""
        steps = resending(
            self._asked, groups, 0, judge_error_wait=self.judge_error_wait, groups=True
        )
        results: list[GroupResult] = await drive(self.clients.get(), steps)
        return results

    async def one(self, group: dict[str, Any], where: str) -> GroupResult | None:
        """The result of one group; None when the request failed (logged as ``rewardsvc
        <where>: ...``), except a configuration error, which raises."""
        steps = results_or_none(self._asked, [group], 0, self.judge_error_wait, where, groups=True)
        result: GroupResult | None
        (result,) = await drive(self.clients.get(), steps)
        return result

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
        groups = [
            wire_group(
                n,
                to_wire_text(prompts[span.start]),
                [to_wire_text(completions[i]) for i in span],
                trainer,
                references[span.start] if references is not None else None,
            )
            for n, span in enumerate(ranges)
        ]
        rewards: list[float | None] = [None] * len(prompts)
        statuses = ["request_failed"] * len(prompts)
        if not groups:
            return rewards, statuses
        results = await self.score(groups)
        for span, result in zip(ranges, results, strict=True):
            for i, value in zip(span, group_rewards(result, len(span)), strict=True):
                rewards[i] = value
                scored = result.status in ("ok", "degraded")
                statuses[i] = result.status if (value is not None) == scored else "judge_error"
        return rewards, statuses


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
    settings = Settings.resolve(
        url, rubric, api_key=api_key, timeout=timeout, options=options, run=run
    )
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

    reward.rewardsvc = scoring  # type: ignore[attr-defined]  # a function attribute: its scorer
    return named(reward, label)


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
    settings = Settings.resolve(url, rubric, api_key=api_key, options=options, run=run)
    scoring = GroupScoring(settings, method, judge_error_wait)
    fallback = failure_score_default(failure_score)

    async def reward(
        prompts: Sequence[Any],
        completions: Sequence[Any],
        answers: Sequence[Any] | None = None,
        states: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        rewards, statuses = await scoring.flat(prompts, completions, answers, None, "verifiers")
        for state, status, value in zip(states or [], statuses, rewards, strict=False):
            annotate_state(state, {"status": status, "reward": value})
        return [fallback if r is None else r for r in rewards]

    return named(reward, f"rewardsvc_{method}")


class SlimeGroupRM:
    """``await group_rm(args, samples)``: one prompt's samples judged as one group."""

    def __init__(self, scoring: GroupScoring, failure_score: float) -> None:
        self.scoring = scoring
        self.failure_score = failure_score

    async def group_rm(self, args: Any, samples: Sequence[Any], **kwargs: Any) -> list[float]:
        """slime group RM: one reward per sample; a sample without one is removed."""
        if not samples:
            return []
        group = wire_group(
            0,
            to_wire_text(getattr(samples[0], "prompt", "")),
            [to_wire_text(getattr(s, "response", "")) for s in samples],
            "slime",
            getattr(samples[0], "label", None),
        )
        result = await self.scoring.one(group, "slime group RM")
        status = "request_failed" if result is None else result.status
        out = []
        for sample, value in zip(samples, group_rewards(result, len(samples)), strict=True):
            mark(sample, {"status": status, "reward": value, "method": "group"}, value is not None)
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
    settings = Settings.resolve(url, rubric, api_key=api_key, options=options, run=run)
    return SlimeGroupRM(GroupScoring(settings, method, judge_error_wait), failure_score)


_slime: SlimeGroupRM | None = None


async def group_rm(args: Any, samples: Sequence[Any], **kwargs: Any) -> list[float]:
    """``--group-rm --custom-rm-path rewardsvc_client.groups.group_rm``: configured by
    $REWARDSVC_URL (else slime's ``--rm-url``), $REWARDSVC_RUBRIC, $REWARDSVC_RUN and
    $REWARDSVC_METHOD (listwise, the default, or pairwise)."""
    global _slime
    if _slime is None:
        _slime = make_group_rm(rm_url(args), method=os.environ.get(ENV_METHOD) or "listwise")
    return await _slime.group_rm(args, samples, **kwargs)


class ComparativeGroupScorer:
    """ART ``after_each``: a TrajectoryGroup's trajectories judged as one group."""

    def __init__(self, scoring: GroupScoring, reference_key: str = "reference") -> None:
        self.scoring = scoring
        self.reference_key = reference_key

    async def __call__(self, group: Any) -> Any:
        trajectories = list(group.trajectories)
        if not trajectories:
            return group
        split = [split_trajectory(t) for t in trajectories]
        label = trajectory_label(trajectories[0], self.reference_key)
        request = wire_group(0, split[0][0], [completion for _, completion in split], "art", label)
        result = await self.scoring.one(request, "ART group scorer")
        kept: list[Any] = []
        failed: list[BaseException] = []
        for trajectory, value in zip(
            trajectories, group_rewards(result, len(trajectories)), strict=True
        ):
            if value is None:
                failed.append(no_reward(result))
                continue
            trajectory.reward = value
            trajectory.metrics["rewardsvc_valid"] = 1.0
            if result is not None and result.position_consistency is not None:
                trajectory.metrics["rewardsvc_position_consistency"] = result.position_consistency
            kept.append(trajectory)
        return regrouped(group, kept, failed, "ART group scorer")


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
    settings = Settings.resolve(url, rubric, api_key=api_key, options=options, run=run)
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
