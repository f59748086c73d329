"""NeMo-RL adapter: an environment whose rewards are rewardsvc's, scalar or per objective.

NeMo-RL calls ``env.step(message_log_batch, metadata)`` on a Ray actor (one call per task
and turn, the whole batch of that task) and reads an ``EnvironmentReturn(observations,
metadata, next_stop_strings, rewards, terminateds, answers)``, where ``rewards`` is a
``Tensor[B]`` or a dict ``{name: Tensor[B]}``. With a dict it sums the values into
``total_reward`` and keeps each as a batch column: GDPO's advantage estimator normalizes each
``reward/<name>`` column within the prompt's group before combining them. Make the actor
as NeMo-RL makes its own environments::

    env = ray.remote(RewardsvcEnvironment).remote({"url": URL, "rubric": "helpful-answer"})
    task_to_env = {"rewardsvc": env}

The prompt is the messages before the first assistant message, the completion the rest; the
reference is ``metadata[i]["ground_truth"]`` (NeMo-RL's math datasets) or ``["reference"]``,
the sample's own rubric ``metadata[i]["criteria"]``. Config keys: ``url``, ``rubric``,
``api_key``, ``run``, ``timeout``, ``options``, ``criteria_format``, ``criteria_mode``,
``judge_error_wait`` (s, default 300), ``failure_score`` (default 0.0), ``objectives``
(True: dict rewards keyed ``reward/<objective>``), ``scalar_key`` (with ``objectives``, also
the scalar reward under this key; it is then one more GDPO component and part of the sum).

Failures. NeMo-RL masks a sample only on its NeMo Gym path (``mask_sample`` in a verify
result's ``instance_config``: use the service's ``/nemo-gym/<rubric>/verify`` route for
that); an ``EnvironmentInterface`` can only give a number, and ``ray.get`` waits for the step
without a time limit. So a batch with judge_error items is held: they are re-sent for
``judge_error_wait`` seconds (an outage shorter than that gives real rewards). A sample still
without a reward (judges down longer, or rejected) gets ``failure_score``, flagged where NeMo-RL
logs per sample: its observation (written into the message log, and so into
``train_data_step*.jsonl``) says ``rewardsvc: no reward (<status>)``, and its metadata holds
``rewardsvc_valid: 0``. ``global_post_process_and_metrics`` reports the counts per status.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from rewardsvc_client._adapt import (
    Settings,
    ThreadClients,
    status_numbers,
    to_wire_text,
    wire_item,
)
from rewardsvc_client._retrying import drive_sync, results_or_none
from rewardsvc_client.types import RewardResult

DEFAULT_JUDGE_ERROR_WAIT = 300.0
"""Seconds a batch is held while judges recover (NeMo-RL's ray.get does not time out)."""


class LocalEnvironmentReturn(NamedTuple):
    """NeMo-RL's ``EnvironmentReturn`` field for field, used when nemo_rl is not importable
    (NeMo-RL unpacks it by position)."""

    observations: list[dict[str, str]]
    metadata: list[Any]
    next_stop_strings: list[list[str] | None] | list[None]
    rewards: Any
    terminateds: Any
    answers: list[str | None] | None


def _environment_return() -> Any:
    try:
        from nemo_rl.environments.interfaces import (  # type: ignore[import-not-found]
            EnvironmentReturn,
        )
    except ImportError:
        return LocalEnvironmentReturn
    return EnvironmentReturn


def split_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[Any, Any]:
    """(prompt, completion): the messages before and from the first assistant message."""
    plain = [{"role": m.get("role"), "content": m.get("content")} for m in messages]
    first = next((i for i, m in enumerate(plain) if m["role"] == "assistant"), len(plain))
    return to_wire_text(plain[:first]), to_wire_text(plain[first:])


def _label(meta: Any, *keys: str) -> Any:
    if not isinstance(meta, Mapping):
        return None
    return next((meta[k] for k in keys if meta.get(k) is not None), None)


class RewardsvcEnvironment:
    """NeMo-RL's ``EnvironmentInterface`` (by shape): see the module docstring."""

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        cfg = dict(cfg or {})
        self.settings = Settings.resolve(
            cfg.get("url"), cfg.get("rubric"), api_key=cfg.get("api_key"),
            timeout=cfg.get("timeout"), run=cfg.get("run"), options=cfg.get("options"),
            criteria_format=cfg.get("criteria_format"), criteria_mode=cfg.get("criteria_mode"),
        )  # fmt: skip
        self.judge_error_wait = float(cfg.get("judge_error_wait", DEFAULT_JUDGE_ERROR_WAIT))
        self.failure_score = float(cfg.get("failure_score", 0.0))
        self.objectives = bool(cfg.get("objectives", False))
        self.scalar_key: str | None = cfg.get("scalar_key")
        self.clients = ThreadClients(self.settings)
        self.statuses: Counter[str] = Counter()

    def score(
        self, message_log_batch: Sequence[Sequence[Mapping[str, Any]]], metadata: Sequence[Any]
    ) -> list[RewardResult | None]:
        """The service's results for the batch, judge_error ones held and re-sent."""
        items = [
            wire_item(i, *split_messages(log), {"trainer": "nemo-rl"},
                      _label(meta, "ground_truth", "reference"), _label(meta, "criteria"))
            for i, (log, meta) in enumerate(zip(message_log_batch, metadata, strict=True))
        ]  # fmt: skip
        steps = results_or_none(self.settings, items, 2, self.judge_error_wait, "NeMo-RL adapter")
        results: list[RewardResult | None] = drive_sync(self.clients.get(), steps)
        self.statuses.update(r.status if r else "request_failed" for r in results)
        return results

    def step(
        self, message_log_batch: Sequence[Sequence[Mapping[str, Any]]], metadata: Sequence[Any]
    ) -> Any:
        """Score the batch: one reward per sample (or per objective), every episode done."""
        import torch

        results = self.score(message_log_batch, metadata)
        n = len(results)
        rewards: Any = torch.tensor([self._scalar(r) for r in results], dtype=torch.float32)
        if self.objectives:
            rewards = self._objective_rewards(results, rewards)
        return _environment_return()(
            observations=[_observation(r) for r in results],
            metadata=[_metadata(meta, r) for meta, r in zip(metadata, results, strict=True)],
            next_stop_strings=[None] * n,
            rewards=rewards,
            terminateds=torch.ones(n, dtype=torch.bool),
            answers=None,
        )

    def _scalar(self, result: RewardResult | None) -> float:
        if result is None or result.reward is None:
            return self.failure_score
        return result.reward

    def _objective_rewards(self, results: list[RewardResult | None], scalar: Any) -> Any:
        """``{"reward/<name>": Tensor[B]}`` over the objectives any result names (a sample
        without one gets ``failure_score``), plus the scalar under ``scalar_key``."""
        import torch

        names = sorted({name for r in results if r is not None for name in r.objectives})
        out: dict[str, Any] = {}
        for name in names:
            values = [r.objectives.get(name) if r is not None else None for r in results]
            out[f"reward/{name}"] = torch.tensor(
                [self.failure_score if v is None else v for v in values], dtype=torch.float32
            )
        if self.scalar_key:
            out[self.scalar_key] = scalar
        if not out:
            raise ValueError(
                "objectives=True but the rubric declares no objectives (and no scalar_key)"
            )
        return out

    def global_post_process_and_metrics(self, batch: Any) -> tuple[Any, dict[str, float]]:
        """The batch unchanged, and the count of results per status since the last call."""
        metrics = {f"rewardsvc/{status}": float(n) for status, n in self.statuses.items()}
        self.statuses.clear()
        return batch, metrics

    def shutdown(self) -> None:
        """Nothing to release (connections close with the process)."""


def _observation(result: RewardResult | None) -> dict[str, str]:
    """The environment's message for the sample: the reward, or that there is none."""
    if result is None or result.reward is None:
        status = "request_failed" if result is None else result.status
        return {"role": "environment", "content": f"rewardsvc: no reward ({status})"}
    return {"role": "environment", "content": f"rewardsvc: reward {result.reward:.4g}"}


def _metadata(meta: Any, result: RewardResult | None) -> Any:
    """The sample's metadata with the ``rewardsvc_*`` numbers added."""
    out = dict(meta) if isinstance(meta, Mapping) else {}
    out.update(status_numbers(result))
    return out


__all__ = [
    "DEFAULT_JUDGE_ERROR_WAIT",
    "LocalEnvironmentReturn",
    "RewardsvcEnvironment",
    "split_messages",
]
