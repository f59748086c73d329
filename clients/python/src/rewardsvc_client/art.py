"""ART (OpenPipe's Agent Reinforcement Trainer) adapter: score trajectory groups with rewardsvc.

ART trains on ``art.TrajectoryGroup`` objects (the rollouts of one prompt); its
``gather_trajectory_groups(..., after_each=f)`` awaits ``f(group)`` for every finished group and
trains on what it returns (a group, or None to drop the group). ``make_group_scorer`` builds
such an ``f`` that scores a group in one request and sets each ``trajectory.reward``::

    from rewardsvc_client.art import make_group_scorer
    score = make_group_scorer("http://HOST:8000", "helpful-answer", run=model.name)
    groups = await art.gather_trajectory_groups(groups, after_each=score)

Each trajectory's messages up to its first assistant message are the prompt; the rest (the
agent's replies, tool calls and results as text) is the completion. The reference is
``trajectory.metadata[reference_key]`` when present. ``rewardsvc_*`` numbers go into each
trajectory's ``metrics``.

Failures. A trajectory whose reward cannot be produced (after ``judge_error_wait`` seconds of
re-sending) is moved out of ``trajectories`` into the group's ``exceptions`` (an exception
saying why): ART trains only on ``trajectories``, so it is skipped, never scored 0. A group left
with fewer than two trajectories carries no relative signal and is dropped (None), with a
warning in the log.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from rewardsvc_client._adapt import (
    LoopClients,
    Settings,
    is_configuration_error,
    logger,
    rewards_with_retries,
    status_numbers,
    to_reference,
    to_wire_text,
)
from rewardsvc_client.client import RewardServiceError
from rewardsvc_client.types import RewardResult


class RewardsvcScoreError(RuntimeError):
    """rewardsvc produced no reward for a trajectory."""


def _messages(trajectory: Any) -> list[Any]:
    messages = getattr(trajectory, "messages", None)
    if callable(messages):
        return list(messages())
    return list(getattr(trajectory, "messages_and_choices", []) or [])


def _role(message: Any) -> Any:
    if isinstance(message, Mapping):
        return message.get("role")
    return getattr(message, "role", None)


def split_trajectory(trajectory: Any) -> tuple[Any, Any]:
    """(prompt, completion) of a trajectory: before and from its first assistant message."""
    messages = _messages(trajectory)
    first = next((i for i, m in enumerate(messages) if _role(m) == "assistant"), len(messages))
    return to_wire_text(messages[:first]), to_wire_text(messages[first:])


class GroupScorer:
    """``await scorer(group)``: the group with rewards set (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        reference_key: str = "reference",
        judge_error_wait: float = 120.0,
    ) -> None:
        self.settings = settings
        self.reference_key = reference_key
        self.judge_error_wait = judge_error_wait
        self.clients = LoopClients(settings)

    def _items(self, trajectories: Sequence[Any]) -> list[dict[str, Any]]:
        items = []
        for i, trajectory in enumerate(trajectories):
            prompt, completion = split_trajectory(trajectory)
            item: dict[str, Any] = {
                "id": str(i),
                "prompt": prompt,
                "completion": completion,
                "metadata": {"trainer": "art"},
            }
            metadata = getattr(trajectory, "metadata", None) or {}
            reference = to_reference(metadata.get(self.reference_key))
            if reference is not None:
                item["reference"] = reference
            items.append(item)
        return items

    async def __call__(self, group: Any) -> Any:
        trajectories = list(group.trajectories)
        if not trajectories:
            return group
        results: list[RewardResult | None]
        try:
            results = list(
                await rewards_with_retries(
                    self.clients.get(),
                    self.settings,
                    self._items(trajectories),
                    2,
                    judge_error_wait=self.judge_error_wait,
                )
            )
        except RewardServiceError as exc:
            if is_configuration_error(exc):
                raise
            logger.error("rewardsvc ART adapter: %s", exc)
            results = [None] * len(trajectories)
        kept: list[Any] = []
        failed: list[BaseException] = []
        for trajectory, result in zip(trajectories, results, strict=True):
            trajectory.metrics.update(status_numbers(result))
            if result is None or result.reward is None:
                why = "request failed" if result is None else f"status {result.status}"
                failed.append(RewardsvcScoreError(f"rewardsvc gave no reward ({why})"))
                continue
            trajectory.reward = result.reward
            kept.append(trajectory)
        if failed:
            logger.warning(
                "rewardsvc ART adapter: %d of %d trajectories have no reward; left out",
                len(failed),
                len(trajectories),
            )
        if len(kept) < 2:
            logger.warning("rewardsvc ART adapter: group dropped (fewer than 2 rewards)")
            return None
        scored = type(group)(
            kept + failed,
            metadata=dict(group.metadata),
            metrics=dict(group.metrics),
            logs=list(group.logs),
        )
        scored.exceptions = list(group.exceptions) + list(scored.exceptions)
        return scored


def make_group_scorer(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    run: str | None = None,
    reference_key: str = "reference",
    judge_error_wait: float = 120.0,
    timeout: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> Callable[[Any], Awaitable[Any]]:
    """An ``after_each`` function for ``art.gather_trajectory_groups``; arguments left None
    come from REWARDSVC_URL, REWARDSVC_RUBRIC, REWARDSVC_API_KEY, REWARDSVC_RUN."""
    settings = Settings.resolve(
        url, rubric, api_key=api_key, timeout=timeout, run=run, options=options
    )
    return GroupScorer(settings, reference_key=reference_key, judge_error_wait=judge_error_wait)


__all__ = ["GroupScorer", "RewardsvcScoreError", "make_group_scorer", "split_trajectory"]
