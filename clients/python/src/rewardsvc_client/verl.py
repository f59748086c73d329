"""veRL adapter: ``compute_score`` custom reward functions backed by rewardsvc.

veRL 0.9 calls a custom reward function in three ways, and each needs its own kind:

* ``compute_score`` (sync): the legacy ``naive`` manager (``verl/workers/reward_manager``)
  calls it once per sample in the trainer process, and the reward-loop ``remote`` manager
  runs it in Ray worker actors, which refuse an ``async def`` (``AssertionError: Async
  reward score is not supported in remote reward manager``);
* ``compute_score_async``: the reward-loop managers ``naive``, ``rate_limited`` and ``dapo``
  (``verl/experimental/reward_loop/reward_manager``) await it, one task per sample;
* ``compute_score_batch``: the legacy ``batch`` manager calls it once per batch with lists
  (``data_sources``, ``solution_strs``, ``ground_truths``, ``extra_infos``); one HTTP
  request per rubric per batch.

Each returns ``{"score": float, "rewardsvc_valid", "rewardsvc_degraded",
"rewardsvc_judge_error", "rewardsvc_rejected", "rewardsvc_request_failed",
"rewardsvc_uncertainty", "rewardsvc_flagged"}`` (the same keys for every sample: veRL stacks
them into one array per key in ``reward_extra_info``).

Wiring (Hydra overrides of ``verl.trainer.main_ppo``; the keys are under ``reward.``: the
old top-level ``custom_reward_function.*`` is accepted by ``main_ppo`` and silently
ignored)::

    reward.custom_reward_function.path=pkg://rewardsvc_client.verl
    reward.custom_reward_function.name=compute_score_async   # or compute_score, compute_score_batch
    +reward.custom_reward_function.reward_kwargs.url=http://HOST:8000
    +reward.custom_reward_function.reward_kwargs.rubric=short-answer-correctness
    +reward.custom_reward_function.reward_kwargs.run='${trainer.experiment_name}'

``rubrics`` chooses the rubric per ``data_source`` (``{"openai/gsm8k": "math-correctness",
"default": "helpful-answer"}``; ``+reward.custom_reward_function.reward_kwargs.rubrics.X=Y``),
falling back to ``rubric``. Without ``url`` (and REWARDSVC_URL), the address veRL hands a
reward function for its hosted reward model (``reward_router_address``) is used, so a
rewardsvc deployed as veRL's reward model server needs no URL. ``run`` defaults to
REWARDSVC_RUN. The question must be in the dataset's ``extra_info`` as ``question`` or
``prompt`` (``prompt_key``), because ``solution_str`` is the response alone.

Images: a message ``prompt`` with ``image_url`` parts reaches the judge as it is; veRL's
own image rows (``{"bytes": ...}``, PIL), copied into ``extra_info["images"]``, go as data:
URLs at the question's ``<image>`` markers (``rewardsvc_client._media.with_images``).

Per-prompt rubrics: ``extra_info[criteria_key]`` (default ``criteria``; e.g. HealthBench's
rows copied to ``extra_info["rubrics"]`` with ``criteria_key=rubrics``) is sent as the
sample's own criteria, read in ``criteria_format``
(``+reward.custom_reward_function.reward_kwargs.criteria_format=healthbench``) and
``criteria_mode``; a ``ground_truth`` that is a rubric label (``{"criteria": [...],
"reference": ...}``, ``rewardsvc_client.criteria.rubric_label``) works too.

Multi-objective (GDPO). veRL's ``gdpo`` reward manager
(``verl/experimental/reward_loop/reward_manager/gdpo.py``) awaits ``compute_score`` once per
sample and copies every key of the returned dict into ``reward_extra_info``; the ``gdpo``
advantage estimator (``compute_gdpo_outcome_advantage``) reads the keys named in
``algorithm.gdpo_reward_keys`` from the batch and normalizes each within its group before
the weighted sum. ``objectives`` (a list, or ``"a,b"``) names the rubric's or recipe's
objectives to return as such keys::

    reward.reward_manager.name=gdpo   algorithm.adv_estimator=gdpo
    +reward.custom_reward_function.reward_kwargs.objectives=[correct,explanation]
    +algorithm.gdpo_reward_keys=[correct,explanation]

An objective without a value gets ``failure_score`` and ``rewardsvc_objectives_valid = 0``.

Failures. veRL has no way to leave a sample out: the score goes into
``token_level_scores`` and GRPO's group mean/std use plain ``torch.mean``/``torch.std``,
so a NaN would poison the whole group. judge_error items are first re-sent for up to
``judge_error_wait`` seconds (default 120: a judge outage shorter than that only delays
the step). After that, the sample gets ``score = failure_score`` (default 0.0, env
REWARDSVC_FAILURE_SCORE, the bottom of the scale so that making the judges fail never
pays) and ``rewardsvc_valid = 0``, with a warning in the reward worker's log. Filter on
``rewardsvc_valid`` (e.g. in a custom advantage or a dynamic-sampling filter) to skip such
samples. A rejected item (malformed, e.g. no reference for a rubric that needs one) gets
the same treatment with ``rewardsvc_rejected = 1``; a configuration error (unknown rubric,
bad key) raises.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from rewardsvc_client._adapt import (
    LoopClients,
    ThreadClients,
    fallback_reward,
    status_numbers,
    to_wire_text,
    wire_item,
)
from rewardsvc_client._media import with_images
from rewardsvc_client._objectives import missing_objectives, objective_numbers
from rewardsvc_client._retrying import Ask, drive, drive_sync, results_or_none
from rewardsvc_client._steps import Steps
from rewardsvc_client._verl_config import (
    DEFAULT_JUDGE_ERROR_WAIT,
    PROMPT_KEYS,
    _Config,
    _config_of,
    _warn_once,
)
from rewardsvc_client.criteria import split_label
from rewardsvc_client.types import RewardResult


def _question(extra_info: Mapping[str, Any] | None, prompt_key: str | None) -> Any:
    if not extra_info:
        return None
    for key in (prompt_key,) if prompt_key else PROMPT_KEYS:
        value = extra_info.get(key)
        if value is not None:
            return value
    return None


def _item(
    config: _Config,
    index: int,
    data_source: Any,
    solution_str: Any,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
) -> dict[str, Any]:
    question = _question(extra_info, config.prompt_key)
    if question is None:
        _warn_once(
            "question",
            "rewardsvc veRL adapter: extra_info has no %s; the judge sees no question",
            config.prompt_key or " or ".join(PROMPT_KEYS),
        )
    reference, criteria = split_label(ground_truth)
    if extra_info and extra_info.get(config.criteria_key) is not None:
        criteria = extra_info[config.criteria_key]
    question = with_images(question, (extra_info or {}).get("images"))
    return wire_item(
        index,
        to_wire_text(question),
        solution_str if isinstance(solution_str, str) else str(solution_str),
        {"trainer": "verl", "data_source": str(data_source)},
        reference,
        criteria,
    )


def _by_rubric(config: _Config, data_sources: Sequence[Any]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for index, source in enumerate(data_sources):
        groups.setdefault(config.rubric_for(source), []).append(index)
    return groups


def _scored(config: _Config, results: Sequence[RewardResult | None]) -> list[dict[str, float]]:
    return [
        {
            "score": float(fallback_reward(r, config.failure_score, "veRL adapter", str(i))),
            **status_numbers(r),
            **_objective_numbers(config, r),
        }
        for i, r in enumerate(results)
    ]


def _objective_numbers(config: _Config, result: RewardResult | None) -> dict[str, float]:
    """The configured objectives as keys for GDPO (``algorithm.gdpo_reward_keys``), the same
    keys for every sample: an objective without a value gets ``failure_score`` (veRL stacks
    the keys into float arrays: no None, and a NaN would poison its group's mean) and
    ``rewardsvc_objectives_valid`` is 0 for that sample."""
    if not config.objectives:
        return {}
    missing = missing_objectives(config.objectives, result)
    if missing and result is not None and result.reward is not None:
        _warn_once(
            f"objectives:{','.join(missing)}",
            "rewardsvc veRL adapter: no value for objectives %s (not declared by the rubric, "
            "or not scored); using failure_score",
            missing,
        )
    return objective_numbers(config.objectives, result, config.failure_score)


def _score(
    config: _Config,
    data_sources: Sequence[Any],
    solutions: Sequence[Any],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None],
) -> Steps[Ask, list[dict[str, float]]]:
    """One request per rubric (samples grouped by data_source), results in sample order."""
    results: list[RewardResult | None] = [None] * len(solutions)
    for rubric, indices in _by_rubric(config, data_sources).items():
        settings = dataclasses.replace(config.settings, rubric=rubric)
        items = [
            _item(config, i, data_sources[i], solutions[i], ground_truths[i], extra_infos[i])
            for i in indices
        ]
        got = yield from results_or_none(
            settings, items, config.judge_error_retries, config.judge_error_wait, "veRL adapter"
        )
        for index, result in zip(indices, got, strict=True):
            results[index] = result
    return _scored(config, results)


async def _score_async(config: _Config, *columns: Sequence[Any]) -> list[dict[str, float]]:
    return await drive(LoopClients.shared(config.settings).get(), _score(config, *columns))


def _score_sync(config: _Config, *columns: Sequence[Any]) -> list[dict[str, float]]:
    return drive_sync(ThreadClients.shared(config.settings).get(), _score(config, *columns))


def _one(
    config: _Config,
    data_source: Any,
    solution_str: Any,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
) -> dict[str, float]:
    return _score_sync(config, [data_source], [solution_str], [ground_truth], [extra_info])[0]


async def _one_async(
    config: _Config,
    data_source: Any,
    solution_str: Any,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
) -> dict[str, float]:
    sample = ([data_source], [solution_str], [ground_truth], [extra_info])
    return (await _score_async(config, *sample))[0]


def _batch(
    config: _Config,
    data_sources: Sequence[Any],
    solution_strs: Sequence[Any],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None,
) -> list[dict[str, float]]:
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    return _score_sync(config, list(data_sources), list(solution_strs), list(ground_truths), infos)


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    url: str | None = None,
    rubric: str | None = None,
    rubrics: Mapping[str, str] | None = None,
    api_key: str | None = None,
    run: str | None = None,
    failure_score: float | None = None,
    judge_error_retries: int = 2,
    judge_error_wait: float = DEFAULT_JUDGE_ERROR_WAIT,
    prompt_key: str | None = None,
    timeout: float | None = None,
    options: Mapping[str, Any] | None = None,
    reward_router_address: Any = None,
    criteria_key: str | None = None,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
    objectives: Sequence[str] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """Sync veRL ``compute_score`` (legacy ``naive`` and reward-loop ``remote`` managers),
    configured per call (``reward_kwargs``) or by environment; see the module docstring."""
    config = _config_of(locals())
    return _one(config, data_source, solution_str, ground_truth, extra_info)


async def compute_score_async(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    url: str | None = None,
    rubric: str | None = None,
    rubrics: Mapping[str, str] | None = None,
    api_key: str | None = None,
    run: str | None = None,
    failure_score: float | None = None,
    judge_error_retries: int = 2,
    judge_error_wait: float = DEFAULT_JUDGE_ERROR_WAIT,
    prompt_key: str | None = None,
    timeout: float | None = None,
    options: Mapping[str, Any] | None = None,
    reward_router_address: Any = None,
    criteria_key: str | None = None,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
    objectives: Sequence[str] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """``async def`` veRL ``compute_score`` for the reward-loop managers (``naive``,
    ``rate_limited``, ``dapo``); same arguments and result as ``compute_score``."""
    config = _config_of(locals())
    return await _one_async(config, data_source, solution_str, ground_truth, extra_info)


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    url: str | None = None,
    rubric: str | None = None,
    rubrics: Mapping[str, str] | None = None,
    api_key: str | None = None,
    run: str | None = None,
    failure_score: float | None = None,
    judge_error_retries: int = 2,
    judge_error_wait: float = DEFAULT_JUDGE_ERROR_WAIT,
    prompt_key: str | None = None,
    timeout: float | None = None,
    options: Mapping[str, Any] | None = None,
    reward_router_address: Any = None,
    criteria_key: str | None = None,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
    objectives: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """Batch veRL ``compute_score`` for the legacy ``batch`` manager: one result dict per
    sample, one request per rubric (samples grouped by ``data_source``)."""
    config = _config_of(locals())
    return _batch(config, data_sources, solution_strs, ground_truths, extra_infos)


def make_compute_score(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    kind: str = "async",
    rubrics: Mapping[str, str] | None = None,
    run: str | None = None,
    failure_score: float | None = None,
    judge_error_retries: int = 2,
    judge_error_wait: float = DEFAULT_JUDGE_ERROR_WAIT,
    prompt_key: str | None = None,
    timeout: float | None = None,
    options: Mapping[str, Any] | None = None,
    retries: int = 3,
    criteria_key: str | None = None,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
    objectives: Sequence[str] | None = None,
) -> Any:
    """A ``compute_score`` bound to one service, for your own reward file::

        # my_reward.py   (reward.custom_reward_function.path=my_reward.py)
        from rewardsvc_client.verl import make_compute_score
        compute_score = make_compute_score("http://HOST:8000", "short-answer-correctness")

    ``kind`` is ``"async"`` (reward-loop managers), ``"sync"`` (legacy ``naive``, ``remote``)
    or ``"batch"`` (legacy ``batch``). Arguments left None come from the environment.
    """
    if kind not in ("async", "sync", "batch"):
        raise ValueError("kind must be 'async', 'sync' or 'batch'")
    config = _config_of(locals())

    async def score_async(
        data_source: Any,
        solution_str: str,
        ground_truth: Any,
        extra_info: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, float]:
        return await _one_async(config, data_source, solution_str, ground_truth, extra_info)

    def score_sync(
        data_source: Any,
        solution_str: str,
        ground_truth: Any,
        extra_info: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, float]:
        return _one(config, data_source, solution_str, ground_truth, extra_info)

    def score_batch(
        data_sources: Sequence[Any],
        solution_strs: Sequence[str],
        ground_truths: Sequence[Any],
        extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
        **kwargs: Any,
    ) -> list[dict[str, float]]:
        return _batch(config, data_sources, solution_strs, ground_truths, extra_infos)

    return {"async": score_async, "sync": score_sync, "batch": score_batch}[kind]


__all__ = ["compute_score", "compute_score_async", "compute_score_batch", "make_compute_score"]
