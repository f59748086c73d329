"""TRL's ``AsyncGRPOTrainer`` and ``environment_factory``, backed by rewardsvc.

``AsyncGRPOTrainer`` (trl/experimental/async_grpo, TRL 1.16.0) generates and scores in a child
process started with ``multiprocessing``'s *spawn* context, with CUDA hidden
(``_scrub_child_env``): every reward function and environment factory is pickled into it
(the trainer checks ``pickle.dumps`` of them first). Its ``_score_group`` awaits each reward
function when ``is_async_callable`` says so (an async ``__call__`` counts), turns ``None``
into NaN, and gives a completion that no reward source scored advantage 0 and leaves it out
of the group's mean and std. A plain ``async def`` made inside a function (what
``trl_reward_func`` returns) does not pickle; ``async_reward_func`` returns the picklable
``TRLReward`` object itself, with the same arguments and logging::

    from rewardsvc_client.trl_async import async_reward_func, environment_factory
    trainer = AsyncGRPOTrainer(model=..., reward_funcs=[async_reward_func(URL, RUBRIC)], ...)

``environment_factory``: the trainer (sync ``GRPOTrainer`` or ``AsyncGRPOTrainer``) makes one
environment per rollout, calls ``reset(**row)``, exposes the environment's public methods as
tools, and at the end awaits its ``get_reward()`` (no arguments) as one more reward column,
named after the class. ``RewardsvcEnvironment`` has one tool, ``submit_answer``; its reward is
rewardsvc's for the submitted answer (the row's ``prompt`` as prompt, its ``reference_key``
column as reference), ``None`` (masked) when nothing was submitted or the service gave no
reward after ``judge_error_wait`` seconds of re-sending::

    trainer = GRPOTrainer(..., environment_factory=environment_factory(URL, RUBRIC))
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from rewardsvc_client._adapt import (
    LoopClients,
    Settings,
    logger,
    to_wire_text,
    verdict,
    wire_item,
)
from rewardsvc_client._retrying import drive, results_or_none
from rewardsvc_client.trl import TRLReward


def async_reward_func(
    url: str | None,
    rubric: str | None,
    reference_column: str | None = "reference",
    api_key: str | None = None,
    **kwargs: Any,
) -> TRLReward:
    """A picklable TRL reward function (a ``TRLReward``) for ``AsyncGRPOTrainer``'s spawned
    reward process; the keyword arguments are ``trl_reward_func``'s (``name``, ``on_error``,
    ``missing``, ``run``, ``criteria_column``...); ``on_error`` defaults to "none" here: a
    failed request masks its batch instead of ending the trainer's rollout process."""
    resolve_keys = ("options", "timeout", "retries", "max_batch", "run")
    resolve = {k: kwargs.pop(k) for k in resolve_keys if k in kwargs}
    criteria = {k: kwargs.pop(k) for k in ("criteria_format", "criteria_mode") if k in kwargs}
    settings = Settings.resolve(url, rubric, api_key=api_key, **resolve, **criteria)
    # A raise in the spawned process ends its loop and the run: mask a failed request instead.
    kwargs.setdefault("on_error", "none")
    return TRLReward(settings, reference_column=reference_column, **kwargs)


class RewardsvcEnvironment:
    """A TRL environment whose reward is rewardsvc's (see the module docstring). Picklable:
    it holds settings, the row and the answer; connections are made per event loop."""

    def __init__(
        self, settings: Settings, reference_key: str | None = "answer", judge_error_wait: float = 0
    ) -> None:
        self._settings = settings
        self._reference_key = reference_key
        self._judge_error_wait = judge_error_wait
        self._clients = LoopClients.shared(settings)
        self._row: dict[str, Any] = {}
        self._answer: str | None = None
        self.verdict: dict[str, Any] | None = None
        """The service's verdict on the last reward (status, reward, flags)."""

    def reset(self, **row: Any) -> str | None:
        """Start a rollout on dataset row ``row``; nothing is added to the prompt."""
        self._row = dict(row)
        self._answer = None
        self.verdict = None
        return None

    def submit_answer(self, answer: str) -> str:
        """Submit the final answer to the task; call it once, when done.

        Args:
            answer: The final answer, in full.
        """
        self._answer = answer
        return "Answer recorded."

    async def get_reward(self) -> float | None:
        """rewardsvc's reward for the submitted answer; None (TRL masks it) without one."""
        if self._answer is None:
            self.verdict = {"status": "no_answer", "reward": None}
            return None
        label = self._row.get(self._reference_key) if self._reference_key else None
        item = wire_item(
            0, to_wire_text(self._row.get("prompt")), self._answer, {"trainer": "trl-env"}, label
        )
        steps = results_or_none(
            self._settings, [item], 0, self._judge_error_wait, "TRL environment"
        )
        (result,) = await drive(self._clients.get(), steps)
        self.verdict = verdict(result)
        if result is None or result.reward is None:
            logger.warning("rewardsvc TRL environment: no reward (%s); None", self.verdict)
            return None
        return float(result.reward)


def environment_factory(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    reference_key: str | None = "answer",
    judge_error_wait: float = 0.0,
    run: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Callable[[], RewardsvcEnvironment]:
    """A picklable ``environment_factory`` making ``RewardsvcEnvironment`` objects; arguments
    left None come from REWARDSVC_URL, REWARDSVC_RUBRIC, REWARDSVC_API_KEY, REWARDSVC_RUN."""
    settings = Settings.resolve(url, rubric, api_key=api_key, run=run, options=options)
    return functools.partial(RewardsvcEnvironment, settings, reference_key, judge_error_wait)


__all__ = ["RewardsvcEnvironment", "async_reward_func", "environment_factory"]
