"""veRL adapter: a ``compute_score`` custom reward function backed by rewardsvc.

veRL's contract (verl 0.9, ``verl/experimental/reward_loop/reward_manager/naive.py`` and
``limited.py``, loaded by ``verl/trainer/ppo/reward.py``): the reward manager calls, once per
sample and concurrently,

    await compute_score(data_source=..., solution_str=<decoded response only>,
                        ground_truth=<reward_model.ground_truth>, extra_info=<row extra_info>,
                        **reward_kwargs)

(``async def`` functions are awaited on the reward loop; sync ones run in a thread pool). A
dict result must hold ``score``; all its keys go to ``reward_extra_info`` and are stacked
into one numpy array per key, so every sample must return the same keys, with numbers.

Wiring (Hydra overrides of ``verl.trainer.main_ppo``)::

    reward.custom_reward_function.path=pkg://rewardsvc_client.verl
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.url=http://HOST:8000
    +reward.custom_reward_function.reward_kwargs.rubric=short-answer-correctness

(``reward_kwargs`` are merged into every call; without them the function reads
REWARDSVC_URL / REWARDSVC_RUBRIC / REWARDSVC_API_KEY from the environment of veRL's reward
workers, which are Ray actors: set them in the Ray runtime_env.) The question must be in the
dataset's ``extra_info`` as ``question`` or ``prompt`` (veRL's data preprocessing examples put
it under ``question``), because ``solution_str`` is the response alone.

Failures. veRL has no way to leave a sample out: the score goes into ``token_level_scores``
and GRPO's group mean/std (``compute_grpo_outcome_advantage``) use plain ``torch.mean`` and
``torch.std``, so a NaN score would turn the advantages of the whole group, and then the loss,
into NaN. So when the service gives no reward (judge_error after retries, a rejected item,
or the service unreachable), this adapter returns ``score = failure_score`` (default 0.0,
env REWARDSVC_FAILURE_SCORE) and says so in the numeric keys (``rewardsvc_valid = 0``).
0.0 is the bottom of the rubric scale: a policy can never gain reward by making the judges
fail (over-long or garbled outputs that time them out), which any other constant would
allow. judge_error items are first re-sent (``judge_error_retries``, default 2) since a
judge timeout is often transient. Each fallback to ``failure_score`` logs a warning. Watch
``rewardsvc_valid`` in the logs: if it drops, fix the judges rather than trust the rewards.
A saturated service (429, or 503 with Retry-After) is waited for, honouring Retry-After,
until ``timeout`` seconds have passed since the first try, rather than scored as a failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardsvc_client._adapt import (
    LoopClients,
    Settings,
    failure_score_default,
    fallback_reward,
    is_configuration_error,
    logger,
    rewards_with_retries,
    status_numbers,
    to_reference,
    to_wire_text,
)
from rewardsvc_client.client import RewardServiceError

PROMPT_KEYS = ("question", "prompt")

# One LoopClients per (url, rubric, key) so that env-configured and reward_kwargs-configured
# calls reuse connections across the thousands of per-sample calls of a run.
_clients: dict[tuple[Any, ...], LoopClients] = {}
_warned_no_question = False


def _question(extra_info: Mapping[str, Any] | None, prompt_key: str | None) -> Any:
    if not extra_info:
        return None
    keys = (prompt_key,) if prompt_key else PROMPT_KEYS
    for key in keys:
        value = extra_info.get(key)
        if value is not None:
            return value
    return None


def _result_dict(score: float, numbers: dict[str, float]) -> dict[str, float]:
    return {"score": float(score), **numbers}


async def score_sample(
    settings: Settings,
    clients: LoopClients,
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
    *,
    failure_score: float,
    judge_error_retries: int,
    prompt_key: str | None = None,
) -> dict[str, float]:
    """Score one veRL sample; the dict veRL reads (``score`` plus fixed numeric keys)."""
    global _warned_no_question
    question = _question(extra_info, prompt_key)
    if question is None and not _warned_no_question:
        _warned_no_question = True
        logger.warning(
            "rewardsvc veRL adapter: extra_info has no %s; the judge sees no question",
            prompt_key or " or ".join(PROMPT_KEYS),
        )
    item: dict[str, Any] = {
        "id": "0",
        "prompt": to_wire_text(question),
        "completion": solution_str if isinstance(solution_str, str) else str(solution_str),
        "metadata": {"trainer": "verl", "data_source": str(data_source)},
    }
    reference = to_reference(ground_truth)
    if reference is not None:
        item["reference"] = reference
    try:
        results = await rewards_with_retries(
            clients.get(), settings, [item], judge_error_retries=judge_error_retries
        )
    except RewardServiceError as exc:
        if is_configuration_error(exc):
            raise  # a configuration error (unknown rubric, bad key): stop the run, loudly
        logger.error("rewardsvc veRL adapter: %s", exc)
        score = fallback_reward(None, failure_score, "veRL adapter")
        return _result_dict(score, status_numbers(None))
    result = results[0]
    score = fallback_reward(result, failure_score, "veRL adapter")
    return _result_dict(score, status_numbers(result))


def make_compute_score(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    failure_score: float | None = None,
    judge_error_retries: int = 2,
    prompt_key: str | None = None,
    timeout: float | None = None,
    retries: int = 3,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """An ``async def compute_score(data_source, solution_str, ground_truth, extra_info=None,
    **kwargs)`` bound to one service and rubric, for your own reward file::

        # my_reward.py   (reward.custom_reward_function.path=my_reward.py)
        from rewardsvc_client.verl import make_compute_score
        compute_score = make_compute_score("http://HOST:8000", "short-answer-correctness")

    Arguments left None come from REWARDSVC_URL, REWARDSVC_RUBRIC, REWARDSVC_API_KEY,
    REWARDSVC_FAILURE_SCORE. ``prompt_key`` names the extra_info key holding the question
    (default: "question", then "prompt").
    """
    settings = Settings.resolve(
        url, rubric, api_key=api_key, timeout=timeout, retries=retries, options=options
    )
    clients = LoopClients(settings)
    fallback = failure_score_default() if failure_score is None else float(failure_score)

    async def compute_score(
        data_source: Any,
        solution_str: str,
        ground_truth: Any,
        extra_info: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, float]:
        return await score_sample(
            settings,
            clients,
            data_source,
            solution_str,
            ground_truth,
            extra_info,
            failure_score=fallback,
            judge_error_retries=judge_error_retries,
            prompt_key=prompt_key,
        )

    return compute_score


async def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    failure_score: float | None = None,
    judge_error_retries: int = 2,
    prompt_key: str | None = None,
    timeout: float | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """veRL ``compute_score`` configured per call (``reward_kwargs``) or by environment.

    Returns ``{"score": float, "rewardsvc_valid", "rewardsvc_degraded",
    "rewardsvc_judge_error", "rewardsvc_rejected", "rewardsvc_request_failed",
    "rewardsvc_uncertainty", "rewardsvc_flagged"}``, all floats, the same keys for every
    sample. ``score`` is the reward, or ``failure_score`` (default 0.0) when there is none:
    see the module docstring for why veRL cannot take None or NaN. Other keyword arguments
    veRL passes (``reward_router_address``, ...) are ignored.
    """
    settings = Settings.resolve(url, rubric, api_key=api_key, timeout=timeout)
    key = (settings.url, settings.rubric, settings.api_key, settings.timeout)
    clients = _clients.get(key)
    if clients is None:
        clients = _clients.setdefault(key, LoopClients(settings))
    fallback = failure_score_default() if failure_score is None else float(failure_score)
    return await score_sample(
        settings,
        clients,
        data_source,
        solution_str,
        ground_truth,
        extra_info,
        failure_score=fallback,
        judge_error_retries=judge_error_retries,
        prompt_key=prompt_key,
    )


__all__ = ["compute_score", "make_compute_score", "score_sample"]
