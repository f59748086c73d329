"""Tinker cookbook adapter: environments and group builders whose reward is rewardsvc's.

The cookbook (``tinker-cookbook``) trains on episodes of ``Env`` objects: ``await
env.step(action)`` returns a ``StepResult(reward, episode_done, next_observation, ...)``, and
an ``EnvGroupBuilder`` makes the envs of one prompt and may add a final reward per trajectory
in ``await compute_group_rewards(trajectory_group, env_group)``. This module gives both:

* ``RewardsvcEnv``: a single-turn env (a conversation, its reference, its own rubric). With
  ``reward_at="step"`` (the default) ``step`` scores the policy's reply and returns the
  reward in its ``StepResult``; with ``reward_at="group"`` it returns 0.0 and keeps the reply
  for the group builder.
* ``RewardsvcEnvGroupBuilder``: makes ``group_size`` such envs; with ``reward_at="group"`` its
  ``compute_group_rewards`` scores the whole group in one request.
* ``rubric_env_group_builder``: the cookbook's rubric recipe, a ``RubricBasedDatapoint(convo,
  rubric_items=[...])``, as a group builder whose rubric items are rewardsvc's per-item
  criteria (``criteria_format="tinker"``: each ``rubric_str`` an equally weighted criterion,
  as the recipe's mean of per-item grades).

The classes are the cookbook's interfaces by shape (the client does not import the cookbook;
``StepResult`` is imported from it when a step returns).

Failures. The cookbook says "no reward" by an exception: a trajectory whose ``step`` raises
is a failed rollout (``MinViableGroup`` drops it and keeps the group while enough remain,
``RetryOnFailure`` samples it again), and a ``compute_group_rewards`` that raises skips the
group (with those strategies; ``catches_group_errors``). So a reply that gets no reward after
``judge_error_wait`` seconds of re-sending (a judge outage shorter than that gives real
rewards) raises ``RewardsvcNoReward``; never a 0.0. Use ``MinViableGroup`` or
``RetryOnFailure``: the default ``FailFast`` ends the run on any rollout error. Keep
``judge_error_wait`` below the strategy's ``per_rollout_timeout`` and the termination policy's
``grader_timeout_seconds`` when they are set. ``rewardsvc_*`` numbers go into each step's
``metrics`` (the cookbook averages them in its training logs); status and flags into ``logs``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rewardsvc_client._adapt import LoopClients, Settings, status_numbers, to_wire_text, wire_item
from rewardsvc_client._retrying import drive, results_or_none
from rewardsvc_client.errors import RewardsvcNoReward, no_reward
from rewardsvc_client.types import RewardResult

RewardAt = Literal["step", "group"]


def rubric_criteria(rubric_items: Sequence[Any]) -> list[dict[str, Any]]:
    """The recipe's ``rubric_items`` (``Rubric`` objects or their dicts) as the item's
    criteria in format ``tinker``."""
    out = []
    for rubric in rubric_items:
        if isinstance(rubric, Mapping):
            out.append(dict(rubric))
        else:
            out.append({"rubric_str": rubric.rubric_str})
    return out


def _logs(result: RewardResult | None) -> dict[str, Any]:
    if result is None:
        return {"rewardsvc_status": "request_failed"}
    return {"rewardsvc_status": result.status, "rewardsvc_flags": ",".join(result.flags)}


@dataclass
class Scorer:
    """Scores replies for envs and group builders; picklable (its clients are per loop)."""

    settings: Settings
    judge_error_wait: float = 120.0
    judge_error_retries: int = 2
    clients: LoopClients = field(init=False)

    def __post_init__(self) -> None:
        self.clients = LoopClients(self.settings)

    async def score(self, items: list[dict[str, Any]]) -> list[RewardResult | None]:
        """The results of ``items``, judge_error ones re-sent for ``judge_error_wait`` s."""
        steps = results_or_none(
            self.settings, items, self.judge_error_retries, self.judge_error_wait,
            "Tinker adapter",
        )  # fmt: skip
        return list(await drive(self.clients.get(), steps))


class RewardsvcEnv:
    """A single-turn cookbook ``Env``: the policy answers ``convo``, rewardsvc scores it."""

    def __init__(
        self,
        renderer: Any,
        convo: list[Any],
        scorer: Scorer,
        reference: Any = None,
        criteria: Any = None,
        reward_at: RewardAt = "step",
    ) -> None:
        self.renderer = renderer
        self.convo = list(convo)
        self.scorer = scorer
        self.reference = reference
        self.criteria = criteria
        self.reward_at = reward_at
        self.reply: Any = None
        """The policy's reply message, once ``step`` parsed it."""

    @property
    def stop_condition(self) -> Any:
        """The renderer's stop sequences."""
        return self.renderer.get_stop_sequences()

    async def initial_observation(self) -> tuple[Any, Any]:
        """The generation prompt of the conversation and the stop condition."""
        return self.renderer.build_generation_prompt(self.convo), self.stop_condition

    def item(self, index: int | str = 0) -> dict[str, Any]:
        """This env's reply as one item of POST /v1/rewards."""
        return wire_item(
            index, to_wire_text(self.convo), to_wire_text([self.reply]),
            {"trainer": "tinker-cookbook"}, self.reference, self.criteria,
        )  # fmt: skip

    async def step(self, action: Any, *, extra: Any = None) -> Any:
        """Parse the reply; its reward (``reward_at="step"``) or 0.0 until the group
        builder scores it. Raises ``RewardsvcNoReward`` when it has none."""
        from tinker_cookbook.rl.types import StepResult  # type: ignore[import-not-found]

        self.reply, _ = self.renderer.parse_response(action)
        metrics: dict[str, float] = {}
        logs: dict[str, Any] = {}
        reward = 0.0
        if self.reward_at == "step":
            (result,) = await self.scorer.score([self.item()])
            if result is None or result.reward is None:
                raise no_reward(result)
            reward, metrics, logs = result.reward, status_numbers(result), _logs(result)
        return StepResult(
            reward=reward,
            episode_done=True,
            next_observation=self.renderer.build_generation_prompt([*self.convo, self.reply]),
            next_stop_condition=self.stop_condition,
            metrics=metrics,
            logs=logs,
        )


@dataclass(frozen=True)
class RewardsvcEnvGroupBuilder:
    """A cookbook ``EnvGroupBuilder``: ``group_size`` envs on one conversation; with
    ``reward_at="group"`` the group is scored in one request by ``compute_group_rewards``."""

    renderer: Any
    convo: list[Any]
    scorer: Scorer
    group_size: int
    reference: Any = None
    criteria: Any = None
    reward_at: RewardAt = "step"
    tags: tuple[str, ...] = ("rewardsvc",)

    async def make_envs(self) -> Sequence[RewardsvcEnv]:
        """Fresh envs (the cookbook makes new ones to retry a failed rollout)."""
        return [
            RewardsvcEnv(
                self.renderer,
                self.convo,
                self.scorer,
                self.reference,
                self.criteria,
                self.reward_at,
            )
            for _ in range(self.group_size)
        ]

    async def compute_group_rewards(
        self, trajectory_group: Sequence[Any], env_group: Sequence[Any]
    ) -> list[tuple[float, dict[str, float]]]:
        """``(reward, metrics)`` per trajectory: 0.0 added to the step rewards when they
        carry it, else the group's rewards; raises ``RewardsvcNoReward`` (the cookbook skips
        the group) when a reply has none."""
        if self.reward_at == "step":
            return [(0.0, {}) for _ in trajectory_group]
        items = [env.item(i) for i, env in enumerate(env_group)]
        results = await self.scorer.score(items)
        missing = [r for r in results if r is None or r.reward is None]
        if missing:
            raise no_reward(missing[0])
        return [(float(r.reward), status_numbers(r)) for r in results if r and r.reward is not None]

    async def cleanup(self) -> None:
        """Nothing to release (the clients are shared per event loop)."""

    def logging_tags(self) -> list[str]:
        """Tags the cookbook aggregates metrics by."""
        return list(self.tags)


def make_scorer(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    run: str | None = None,
    judge_error_wait: float = 120.0,
    timeout: float | None = None,
    options: Mapping[str, Any] | None = None,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
) -> Scorer:
    """A ``Scorer`` for the envs; arguments left None come from REWARDSVC_URL,
    REWARDSVC_RUBRIC, REWARDSVC_API_KEY, REWARDSVC_RUN (and REWARDSVC_CRITERIA_FORMAT /
    _MODE)."""
    settings = Settings.resolve(
        url, rubric, api_key=api_key, timeout=timeout, run=run, options=options,
        criteria_format=criteria_format, criteria_mode=criteria_mode,
    )  # fmt: skip
    return Scorer(settings, judge_error_wait=judge_error_wait)


def rubric_env_group_builder(
    renderer: Any,
    datapoint: Any,
    scorer: Scorer,
    group_size: int,
    reward_at: RewardAt = "step",
) -> RewardsvcEnvGroupBuilder:
    """A group builder for a rubric recipe ``RubricBasedDatapoint``: its ``convo`` is the
    prompt, its ``rubric_items`` the item's criteria. The scorer's settings must read them in
    format ``tinker`` (``make_scorer(..., criteria_format="tinker")``)."""
    fmt = (scorer.settings.options or {}).get("criteria_format")
    if fmt != "tinker":
        raise ValueError(f"rubric datapoints need criteria_format='tinker', not {fmt!r}")
    return RewardsvcEnvGroupBuilder(
        renderer, list(datapoint.convo), scorer, group_size,
        criteria=rubric_criteria(datapoint.rubric_items), reward_at=reward_at,
    )  # fmt: skip


__all__ = [
    "RewardsvcEnv",
    "RewardsvcEnvGroupBuilder",
    "RewardsvcNoReward",
    "Scorer",
    "make_scorer",
    "rubric_criteria",
    "rubric_env_group_builder",
]
