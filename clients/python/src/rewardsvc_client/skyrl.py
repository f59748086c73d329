"""SkyRL adapter: a ``skyrl_gym`` text environment whose reward is rewardsvc's.

SkyRL's generator (skyrl/train/generators/skyrl_gym_generator.py, skyrl 0.3.0) calls
``env.init(prompt)`` once, then ``env.step(action)`` after every model turn (in a thread
executor, no timeout of its own) and reads ``reward`` (a float: it asserts the per-step reward
is not None before building the token-level rewards), ``done``, ``observations`` and
``metadata``; at the end of the episode it logs ``env.get_metrics()``, averaged per env class.

``RewardsvcTextEnv`` scores with a rubric:

- episode level (default): reward 0.0 on intermediate turns, and at the final turn the whole
  episode (every assistant turn and the follow-up observations) as the completion;
- turn level (``turn_rewards=True``): every turn's reply is scored as the completion, with the
  conversation before it as the prompt; SkyRL places each at that turn's last token.

The episode ends after ``max_turns`` turns; the observations between turns are
``followups`` (user messages), given in ``extras``. Register it as a SkyRL env::

    skyrl_gym.register(id="rewardsvc", entry_point="rewardsvc_client.skyrl:RewardsvcTextEnv")
    # dataset rows: "env_class": "rewardsvc", "reward_spec": {"ground_truth": "5"},
    # env config: {"url": "http://HOST:8000", "rubric": "short-answer-correctness"}

Failures. SkyRL can only take a number, so a turn without a reward is re-sent for
``judge_error_wait`` seconds (default 120; a judge outage shorter than that delays the turn
and gives the real reward), then gets ``failure_score`` (default 0.0), flagged in the step's
``metadata["rewardsvc"]`` (status, valid: False) and counted in ``get_metrics()``
(``rewardsvc_valid`` < 1 in SkyRL's env metrics), with a warning in the log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rewardsvc_client._adapt import (
    Settings,
    ThreadClients,
    failure_score_default,
    fallback_reward,
    status_numbers,
    to_wire_text,
    verdict,
    wire_item,
)
from rewardsvc_client._retrying import drive_sync, results_or_none
from rewardsvc_client.types import RewardResult

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # skyrl-gym absent: the same contract, so the adapter imports anywhere

    class BaseTextEnv:  # type: ignore[no-redef]
        """What ``skyrl_gym``'s ``BaseTextEnv.__init__`` sets (turn counters, tool groups)."""

        def __init__(self) -> None:
            self.turns = 0
            self.max_turns = 1
            self.tool_groups: list[Any] = []
            self.tool_to_toolgroup: dict[str, Any] = {}

        def close(self) -> None:
            """Nothing to release."""


StepOutput = dict[str, Any]
"""SkyRL's ``BaseTextEnvStepOutput`` is a TypedDict: a plain dict at run time."""


def _option(config: Any, extras: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """``extras[key]`` (per sample), else ``config[key]`` (per env class), else ``default``."""
    if key in extras:
        return extras[key]
    if config is not None:
        getter = getattr(config, "get", None)
        value = getter(key) if callable(getter) else getattr(config, key, None)
        if value is not None:
            return value
    return default


def _reference(extras: Mapping[str, Any]) -> Any:
    """SkyRL datasets put the label in ``reward_spec.ground_truth``."""
    spec = extras.get("reward_spec") or {}
    return extras.get("reference", spec.get("ground_truth") if isinstance(spec, Mapping) else None)


class RewardsvcTextEnv(BaseTextEnv):  # type: ignore[misc]
    """A SkyRL text environment scored by rewardsvc (see the module docstring).

    ``env_config`` (SkyRL's per-env-class config) and ``extras`` (the dataset row's extra
    fields) may both carry ``url``, ``rubric``, ``api_key``, ``run``, ``max_turns``,
    ``turn_rewards``, ``judge_error_wait``, ``failure_score``; ``extras`` wins. ``extras`` also
    gives ``reward_spec.ground_truth`` (or ``reference``), ``criteria`` and ``followups``.
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = dict(extras or {})
        self.settings = Settings.resolve(
            _option(env_config, extras, "url"),
            _option(env_config, extras, "rubric"),
            api_key=_option(env_config, extras, "api_key"),
            run=_option(env_config, extras, "run"),
        )
        self.max_turns = int(_option(env_config, extras, "max_turns", 1))
        self.turn_rewards = bool(_option(env_config, extras, "turn_rewards", False))
        self.judge_error_wait = float(_option(env_config, extras, "judge_error_wait", 120.0))
        self.failure_score = failure_score_default(_option(env_config, extras, "failure_score"))
        self.reference = _reference(extras)
        self.criteria = extras.get("criteria")
        self.followups: list[str] = list(extras.get("followups") or [])
        self.prompt: list[dict[str, Any]] = []
        self.history: list[dict[str, Any]] = []
        self.verdicts: list[dict[str, Any]] = []
        self._clients = ThreadClients.shared(self.settings)

    def init(self, prompt: Any) -> tuple[Any, dict[str, Any]]:
        """Keep the prompt (a chat) for scoring; SkyRL's model sees it unchanged."""
        wire = to_wire_text(prompt)
        self.prompt = [{"role": "user", "content": wire}] if isinstance(wire, str) else wire
        return prompt, {}

    def _score(self, prompt: Sequence[Any], completion: Sequence[Any]) -> RewardResult | None:
        item = wire_item(
            0, list(prompt), list(completion), {"trainer": "skyrl", "turn": self.turns},
            self.reference, self.criteria,
        )  # fmt: skip
        steps = results_or_none(self.settings, [item], 2, self.judge_error_wait, "SkyRL env")
        (result,) = drive_sync(self._clients.get(), steps)
        return result  # type: ignore[no-any-return]

    def step(self, action: str) -> StepOutput:
        """One model turn: its reward (the turn's, or the episode's at the last turn)."""
        self.turns += 1
        done = self.turns >= self.max_turns
        before = self.prompt + self.history
        reply = {"role": "assistant", "content": action}
        self.history.append(reply)
        observations: list[dict[str, str]] = []
        if not done:
            followup = self.followups[self.turns - 1] if self.turns <= len(self.followups) else ""
            observations = [{"role": "user", "content": followup or "Go on."}]
        if self.turn_rewards:
            result = self._score(before, [reply])
        elif done:
            result = self._score(self.prompt, self.history)
        else:  # episode level: the reward comes at the final turn
            self.history.extend(observations)
            return StepOutput(observations=observations, reward=0.0, done=False, metadata={})
        self.history.extend(observations)
        reward = fallback_reward(result, self.failure_score, "SkyRL env", str(self.turns))
        info = {**verdict(result), "valid": result is not None and result.reward is not None}
        self.verdicts.append({**info, **status_numbers(result)})
        return StepOutput(
            observations=observations, reward=reward, done=done, metadata={"rewardsvc": info}
        )

    def get_metrics(self) -> dict[str, Any]:
        """Per episode, averaged over its scored turns: ``rewardsvc_valid`` (1.0: every
        reward is the service's), ``rewardsvc_judge_error``, ``rewardsvc_degraded``... SkyRL
        averages them per env class in its logged env metrics."""
        keys = status_numbers(None)
        if not self.verdicts:
            return {}
        return {k: sum(v[k] for v in self.verdicts) / len(self.verdicts) for k in keys}


__all__ = ["RewardsvcTextEnv"]
