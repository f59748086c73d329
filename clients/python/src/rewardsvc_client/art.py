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
``trajectory.metadata[reference_key]`` when present, its own rubric
``trajectory.metadata[criteria_key]`` (default ``criteria``; ART's metadata values are
scalars, so the criteria go there as JSON text: ``json.dumps(row["rubrics"])``), read in
``criteria_format`` with ``criteria_mode``. ``rewardsvc_*`` numbers go into each
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
    logger,
    status_numbers,
    to_wire_text,
    wire_item,
)
from rewardsvc_client._retrying import drive, results_or_none
from rewardsvc_client.errors import RewardsvcNoReward, no_reward

RewardsvcScoreError = RewardsvcNoReward
"""The former name of the exception a trajectory without a reward carries (kept for users'
code): ``rewardsvc_client.errors.RewardsvcNoReward``."""


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


def trajectory_label(trajectory: Any, key: str) -> Any:
    """The trajectory's ``metadata[key]`` (its reference, its criteria), None when absent."""
    return (getattr(trajectory, "metadata", None) or {}).get(key)


def regrouped(group: Any, kept: list[Any], failed: list[BaseException], where: str) -> Any:
    """``group`` rebuilt with the ``kept`` trajectories and the ``failed`` ones as exceptions
    (ART trains only on trajectories); None, with a warning, when fewer than two are kept: such
    a group carries no relative signal."""
    if len(kept) < 2:
        logger.warning("rewardsvc %s: group dropped (fewer than 2 rewards)", where)
        return None
    scored = type(group)(
        kept + failed,
        metadata=dict(group.metadata),
        metrics=dict(group.metrics),
        logs=list(group.logs),
    )
    scored.exceptions = list(group.exceptions) + list(scored.exceptions)
    return scored


class GroupScorer:
    """``await scorer(group)``: the group with rewards set (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        reference_key: str = "reference",
        judge_error_wait: float = 120.0,
        criteria_key: str = "criteria",
    ) -> None:
        self.settings = settings
        self.reference_key = reference_key
        self.criteria_key = criteria_key
        self.judge_error_wait = judge_error_wait
        self.clients = LoopClients(settings)

    def _items(self, trajectories: Sequence[Any]) -> list[dict[str, Any]]:
        return [
            wire_item(
                i,
                *split_trajectory(trajectory),
                {"trainer": "art"},
                trajectory_label(trajectory, self.reference_key),
                trajectory_label(trajectory, self.criteria_key),
            )
            for i, trajectory in enumerate(trajectories)
        ]

    async def __call__(self, group: Any) -> Any:
        trajectories = list(group.trajectories)
        if not trajectories:
            return group
        items = self._items(trajectories)
        steps = results_or_none(self.settings, items, 2, self.judge_error_wait, "ART adapter")
        results = await drive(self.clients.get(), steps)
        kept: list[Any] = []
        failed: list[BaseException] = []
        for trajectory, result in zip(trajectories, results, strict=True):
            trajectory.metrics.update(status_numbers(result))
            if result is None or result.reward is None:
                failed.append(no_reward(result))
                continue
            trajectory.reward = result.reward
            kept.append(trajectory)
        if failed:
            logger.warning(
                "rewardsvc ART adapter: %d of %d trajectories have no reward; left out",
                len(failed),
                len(trajectories),
            )
        return regrouped(group, kept, failed, "ART adapter")


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
    criteria_key: str = "criteria",
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
) -> Callable[[Any], Awaitable[Any]]:
    """An ``after_each`` function for ``art.gather_trajectory_groups``; arguments left None
    come from REWARDSVC_URL, REWARDSVC_RUBRIC, REWARDSVC_API_KEY, REWARDSVC_RUN (and
    REWARDSVC_CRITERIA_FORMAT / _MODE). ``criteria_key``: see the module docstring."""
    settings = Settings.resolve(
        url, rubric, api_key=api_key, timeout=timeout, run=run, options=options,
        criteria_format=criteria_format, criteria_mode=criteria_mode,
    )  # fmt: skip
    return GroupScorer(
        settings,
        reference_key=reference_key,
        judge_error_wait=judge_error_wait,
        criteria_key=criteria_key,
    )


__all__ = ["GroupScorer", "RewardsvcScoreError", "make_group_scorer", "split_trajectory"]
