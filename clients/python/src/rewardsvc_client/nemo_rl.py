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
(names, a list or ``"a,b"``: dict rewards keyed ``reward/<objective>``; True: the names the
service's results carry, remembered from step to step), ``scalar_key`` (with
``objectives``, also the scalar reward under this key; it is then one more GDPO component
and part of the sum).

Failures. NeMo-RL masks a sample only on its NeMo Gym path (``mask_sample`` in a verify
result's ``instance_config``: use the service's ``/nemo-gym/<rubric>/verify`` route for
that); an ``EnvironmentInterface`` can only give a number, and ``ray.get`` waits for the step
without a time limit. So a batch with judge_error items is held: they are re-sent for
``judge_error_wait`` seconds (an outage shorter than that gives real rewards). A sample still
without a reward (judges down longer, or rejected) gets ``failure_score``, flagged where NeMo-RL
logs per sample: its observation (written into the message log, and so into
``train_data_step*.jsonl``) says ``rewardsvc: no reward (<status>)``, and its metadata holds
``rewardsvc_valid: 0``. ``global_post_process_and_metrics`` reports the counts per status.

An objective without a value (its judge failed while the reward exists: ``degraded``; or
no reward at all) gets ``failure_score`` in its ``reward/<objective>`` column, flagged the
same way: ``rewardsvc_objectives_valid: 0`` in the sample's metadata, and its observation
names the objectives without a value. Listed names give the same columns at every step,
an outage included; with True, a step before any result named them (the service
unreachable from the start) has only the scalar reward (under ``scalar_key`` when given,
else as the step's tensor), flagged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from rewardsvc_client._adapt import (
    Settings,
    ThreadClients,
    logger,
    status_numbers,
    to_wire_text,
    wire_item,
)
from rewardsvc_client._objectives import (
    OBJECTIVES_VALID,
    missing_objectives,
    objective_names,
    objective_numbers,
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
        given = cfg.get("objectives")
        self.discover = given is True
        """Objective names taken from the results (``objectives: True``)."""
        self.objectives = () if isinstance(given, bool) else objective_names(given)
        """The objectives' names: those configured, or (``discover``) those seen so far."""
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
        names = self._objective_names(results)
        if names or (self.scalar_key and self._per_objective):
            rewards = self._objective_rewards(names, results, rewards)
        return _environment_return()(
            observations=[_observation(r, names) for r in results],
            metadata=[
                _metadata(meta, r, names if self._per_objective else None)
                for meta, r in zip(metadata, results, strict=True)
            ],
            next_stop_strings=[None] * n,
            rewards=rewards,
            terminateds=torch.ones(n, dtype=torch.bool),
            answers=None,
        )

    @property
    def _per_objective(self) -> bool:
        return self.discover or bool(self.objectives)

    def _scalar(self, result: RewardResult | None) -> float:
        if result is None or result.reward is None:
            return self.failure_score
        return result.reward

    def _objective_names(self, results: list[RewardResult | None]) -> tuple[str, ...]:
        """The objectives of this step's columns: the configured ones, or with
        ``objectives: True`` every name seen so far (kept through an outage)."""
        if not self.discover:
            return self.objectives
        seen = {name for r in results if r is not None for name in r.objectives}
        self.objectives = tuple(sorted(seen.union(self.objectives)))
        if not self.objectives and not self.scalar_key:
            if any(r is not None for r in results):
                raise ValueError(
                    "objectives=True but the rubric declares no objectives (and no scalar_key)"
                )
            logger.warning(
                "rewardsvc NeMo-RL adapter: no objective names known yet (every request "
                "failed); this step's rewards are the flagged scalar failure_score. List the "
                "names in objectives=[...] for the same columns at every step"
            )
        return self.objectives

    def _objective_rewards(
        self, names: Sequence[str], results: list[RewardResult | None], scalar: Any
    ) -> dict[str, Any]:
        """``{"reward/<name>": Tensor[B]}`` over ``names`` (``failure_score`` where a sample
        has no value, flagged in its metadata), plus the scalar under ``scalar_key``."""
        import torch

        numbers = [objective_numbers(names, r, self.failure_score) for r in results]
        out: dict[str, Any] = {
            f"reward/{name}": torch.tensor([row[name] for row in numbers], dtype=torch.float32)
            for name in names
        }
        if self.scalar_key:
            out[self.scalar_key] = scalar
        return out

    def global_post_process_and_metrics(self, batch: Any) -> tuple[Any, dict[str, float]]:
        """The batch unchanged, and the count of results per status since the last call."""
        metrics = {f"rewardsvc/{status}": float(n) for status, n in self.statuses.items()}
        self.statuses.clear()
        return batch, metrics

    def shutdown(self) -> None:
        """Nothing to release (connections close with the process)."""


def _observation(result: RewardResult | None, objectives: Sequence[str] = ()) -> dict[str, str]:
    """The environment's message for the sample: the reward, or that there is none, and
    the objectives without a value."""
    if result is None or result.reward is None:
        status = "request_failed" if result is None else result.status
        return {"role": "environment", "content": f"rewardsvc: no reward ({status})"}
    text = f"rewardsvc: reward {result.reward:.4g}"
    missing = missing_objectives(objectives, result)
    if missing:
        text += f"; no value for objectives {', '.join(missing)}"
    return {"role": "environment", "content": text}


def _metadata(meta: Any, result: RewardResult | None, objectives: Sequence[str] | None) -> Any:
    """The sample's metadata with the ``rewardsvc_*`` numbers added (with objectives,
    ``rewardsvc_objectives_valid`` too)."""
    out = dict(meta) if isinstance(meta, Mapping) else {}
    out.update(status_numbers(result))
    if objectives is not None:
        out[OBJECTIVES_VALID] = 0.0 if missing_objectives(objectives, result) else 1.0
    return out


__all__ = [
    "DEFAULT_JUDGE_ERROR_WAIT",
    "LocalEnvironmentReturn",
    "RewardsvcEnvironment",
    "split_messages",
]
