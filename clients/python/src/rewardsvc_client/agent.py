"""OpenRLHF agent helper: per-turn rewards of a multi-turn rollout from rewardsvc.

OpenRLHF's agent API (``--agent_func_path``, an ``AgentInstanceBase`` subclass) calls
``await step(states)`` after every action, with ``observation_text`` (the text so far),
``action_text`` (the policy's latest turn) and ``label``, and reads back a dict with the keys
``rewards``, ``scores``, ``environment_feedback``, ``done``, ``sampling_params`` and
``extra_logs``. ``AgentRewarder.step`` keeps the trajectory as chat messages, posts the
trajectory so far to POST /v1/rewards and returns that dict: the turn's reward is the last
step's process reward when the rubric has ``scope: step`` criteria, else the trajectory's
reward. A turn without a reward gets ``failure_score`` and ``rewardsvc_valid = 0`` in
``extra_logs`` (numbers only, as OpenRLHF logs them)::

    from rewardsvc_client.agent import AgentRewarder

    class AgentInstance(AgentInstanceBase):
        async def __init__(self, *args, **kwargs):
            self.rewarder = AgentRewarder("http://HOST:8000", "agent-process", max_turns=3)

        async def reset(self, states, **kwargs):
            return {"observation": states["observation"]}

        async def step(self, states, **kwargs):
            return await self.rewarder.step(states)

``environment`` (optional) gives each turn's feedback: ``environment(action_text, label)``
returns ``(feedback_text, done)``, sync or async; its feedback goes into the trajectory as a
user message. ``rewards`` and ``scores`` are 1-element torch tensors when torch is
importable (as OpenRLHF builds them), else floats.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from rewardsvc_client._adapt import LoopClients, Settings, logger, status_numbers, wire_item
from rewardsvc_client._retrying import drive, results_or_none
from rewardsvc_client.types import RewardResult

Environment = Callable[[str, Any], Any]


def turn_reward(result: RewardResult | None) -> float | None:
    """The latest turn's reward: its step reward when the result has steps, else the
    trajectory's reward; None when there is none."""
    if result is None:
        return None
    if result.steps:
        last = max(result.steps, key=lambda s: int(s.get("index", 0)))
        value = last.get("reward")
        return None if value is None else float(value)
    return result.reward


def _number(value: float) -> Any:
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return value
    return torch.tensor([value])


class AgentRewarder:
    """Per-instance trajectory and the ``step`` OpenRLHF's agent instance delegates to."""

    def __init__(
        self,
        settings: Settings,
        *,
        environment: Environment | None = None,
        max_turns: int = 1,
        failure_score: float = 0.0,
        judge_error_wait: float = 150.0,
    ) -> None:
        if max_turns < 1:
            raise ValueError("max_turns must be >= 1")
        self.settings = settings
        self.environment = environment
        self.max_turns = max_turns
        self.failure_score = failure_score
        self.judge_error_wait = judge_error_wait
        self.clients = LoopClients(settings)
        self.prompt: str | None = None
        self.messages: list[dict[str, Any]] = []

    @property
    def turns(self) -> int:
        """Assistant turns recorded so far."""
        return sum(m["role"] == "assistant" for m in self.messages)

    async def _feedback(self, action: str, label: Any) -> tuple[str, bool]:
        if self.environment is None:
            return "", self.turns >= self.max_turns
        answer = self.environment(action, label)
        if inspect.isawaitable(answer):
            answer = await answer
        feedback, done = answer
        return str(feedback or ""), bool(done) or self.turns >= self.max_turns

    async def _score(self, label: Any) -> RewardResult | None:
        metadata = {"trainer": "openrlhf-agent", "turn": self.turns - 1}
        item = wire_item(0, self.prompt or "", list(self.messages), metadata, label)
        steps = results_or_none(self.settings, [item], 2, self.judge_error_wait, "OpenRLHF agent")
        result: RewardResult | None
        (result,) = await drive(self.clients.get(), steps)
        return result

    async def step(self, states: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Record the action, score the trajectory so far and return OpenRLHF's step dict."""
        if self.prompt is None:
            self.prompt = str(states.get("observation_text", ""))
        action = str(states.get("action_text", ""))
        label = states.get("label")
        self.messages.append({"role": "assistant", "content": action})
        result = await self._score(label)
        feedback, done = await self._feedback(action, label)
        if feedback and not done:
            self.messages.append({"role": "user", "content": feedback})
        reward = turn_reward(result)
        value = self.failure_score if reward is None else reward
        if reward is None:
            logger.warning("rewardsvc OpenRLHF agent: turn without a reward; %s", value)
        extra = status_numbers(result)
        # The turn's reward may be a step's that no judge scored while the trajectory has
        # one: the stand-in must not be logged as valid.
        extra["rewardsvc_valid"] = float(reward is not None)
        extra["rewardsvc_turn"] = float(self.turns - 1)
        if result is not None and result.reward is not None:
            extra["rewardsvc_trajectory_reward"] = float(result.reward)
        return {
            "rewards": _number(value),
            "scores": _number(value),
            "environment_feedback": feedback,
            "done": done,
            "sampling_params": states.get("sampling_params"),
            "extra_logs": extra,
        }


def make_agent_rewarder(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    environment: Environment | None = None,
    max_turns: int = 1,
    failure_score: float = 0.0,
    run: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> AgentRewarder:
    """An ``AgentRewarder`` (one per agent instance: it holds that rollout's trajectory);
    arguments left None come from REWARDSVC_URL, REWARDSVC_RUBRIC, REWARDSVC_API_KEY,
    REWARDSVC_RUN."""
    settings = Settings.resolve(url, rubric, api_key=api_key, run=run, options=options)
    return AgentRewarder(
        settings, environment=environment, max_turns=max_turns, failure_score=failure_score
    )


__all__ = ["AgentRewarder", "make_agent_rewarder", "turn_reward"]
