"""slime adapter: custom reward-model functions backed by rewardsvc.

slime (``slime/rollout/rm_hub/__init__.py``) loads ``--custom-rm-path`` with its
``load_function`` and awaits it as ``rm(args, sample)``; with ``--group-rm`` it awaits
``rm(args, samples)`` once per group and expects one reward per sample, in order::

    --custom-rm-path rewardsvc_client.slime.rm                   # one request per sample
    --group-rm --custom-rm-path rewardsvc_client.slime.group_rm  # one request per group

Configured by REWARDSVC_URL (else slime's ``--rm-url``), REWARDSVC_RUBRIC, REWARDSVC_API_KEY
and REWARDSVC_RUN in the environment of slime's rollout workers, or build your own with
``make_rm`` / ``make_group_rm``. ``sample.prompt`` (a string or messages) is the prompt,
``sample.response`` the completion and ``sample.label`` the reference.

Failures. slime's own ``remote_rm`` retries 10 times and then raises, which ends the
rollout. These functions instead re-send judge_error items for up to ``judge_error_wait``
seconds (100 by default), and a sample still without a reward gets
``sample.remove_sample = True`` (slime leaves it out of the loss), reward ``failure_score``
(0.0) and ``sample.metadata["rewardsvc"]`` saying why, with a warning in the log. A service
outage is handled the same way; a configuration error (unknown rubric, bad key) raises.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from rewardsvc_client._adapt import (
    ENV_URL,
    LoopClients,
    Settings,
    failure_score_default,
    fallback_reward,
    is_configuration_error,
    logger,
    rewards_with_retries,
    to_reference,
    to_wire_text,
)
from rewardsvc_client.client import RewardServiceError
from rewardsvc_client.types import RewardResult

DEFAULT_JUDGE_ERROR_WAIT = 100.0


class SlimeRM:
    """``await rm(args, sample)`` / ``await rm(args, samples)`` for slime."""

    def __init__(
        self,
        settings: Settings,
        failure_score: float,
        judge_error_retries: int = 2,
        judge_error_wait: float = DEFAULT_JUDGE_ERROR_WAIT,
    ) -> None:
        self.settings = settings
        self.failure_score = failure_score
        self.judge_error_retries = judge_error_retries
        self.judge_error_wait = judge_error_wait
        self.clients = LoopClients(settings)

    async def score(self, samples: Sequence[Any]) -> list[float]:
        """Rewards of ``samples`` in one request; failed ones are marked for removal."""
        items = []
        for i, sample in enumerate(samples):
            item: dict[str, Any] = {
                "id": str(i),
                "prompt": to_wire_text(getattr(sample, "prompt", "")),
                "completion": to_wire_text(getattr(sample, "response", "")),
                "metadata": {"trainer": "slime"},
            }
            reference = to_reference(getattr(sample, "label", None))
            if reference is not None:
                item["reference"] = reference
            items.append(item)
        if not items:
            return []
        results: list[RewardResult | None]
        try:
            results = list(
                await rewards_with_retries(
                    self.clients.get(),
                    self.settings,
                    items,
                    self.judge_error_retries,
                    judge_error_wait=self.judge_error_wait,
                )
            )
        except RewardServiceError as exc:
            if is_configuration_error(exc):
                raise
            logger.error("rewardsvc slime adapter: %s", exc)
            results = [None] * len(items)
        rewards = []
        for i, (sample, result) in enumerate(zip(samples, results, strict=True)):
            _annotate(sample, result)
            reward = fallback_reward(result, self.failure_score, "slime adapter", str(i))
            rewards.append(float(reward))
        return rewards

    async def rm(self, args: Any, sample: Any, **kwargs: Any) -> float:
        """slime custom RM: the reward of one sample."""
        return (await self.score([sample]))[0]

    async def group_rm(self, args: Any, samples: Sequence[Any], **kwargs: Any) -> list[float]:
        """slime group RM: one reward per sample of the group, in order."""
        return await self.score(samples)


def _annotate(sample: Any, result: RewardResult | None) -> None:
    """Record the verdict in the sample's metadata; mark a sample without reward removed."""
    info: dict[str, Any] = (
        {"status": "request_failed", "reward": None}
        if result is None
        else {
            "status": result.status,
            "reward": result.reward,
            "uncertainty": result.uncertainty,
            "flags": list(result.flags),
        }
    )
    metadata = getattr(sample, "metadata", None)
    if isinstance(metadata, dict):
        metadata["rewardsvc"] = info
    if result is None or result.reward is None:
        sample.remove_sample = True


def _settings(args: Any, **kwargs: Any) -> Settings:
    url = kwargs.pop("url", None) or os.environ.get(ENV_URL) or getattr(args, "rm_url", None)
    return Settings.resolve(url, kwargs.pop("rubric", None), **kwargs)


def make_rm(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    run: str | None = None,
    failure_score: float | None = None,
    judge_error_wait: float = DEFAULT_JUDGE_ERROR_WAIT,
    timeout: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> SlimeRM:
    """A scorer whose ``rm`` and ``group_rm`` methods are slime custom RM functions::

    # my_rm.py   (--custom-rm-path my_rm.rm, or --group-rm --custom-rm-path my_rm.group_rm)
    from rewardsvc_client.slime import make_rm
    scorer = make_rm("http://HOST:8000", "short-answer-correctness", run="my-run")
    rm, group_rm = scorer.rm, scorer.group_rm
    """
    settings = Settings.resolve(
        url, rubric, api_key=api_key, timeout=timeout, run=run, options=options
    )
    fallback = failure_score_default() if failure_score is None else float(failure_score)
    return SlimeRM(settings, fallback, judge_error_wait=judge_error_wait)


_default: SlimeRM | None = None


def _scorer(args: Any) -> SlimeRM:
    global _default
    if _default is None:
        _default = SlimeRM(_settings(args), failure_score_default())
    return _default


async def rm(args: Any, sample: Any, **kwargs: Any) -> float:
    """slime ``--custom-rm-path rewardsvc_client.slime.rm``: the reward of one sample."""
    return await _scorer(args).rm(args, sample)


async def group_rm(args: Any, samples: Sequence[Any], **kwargs: Any) -> list[float]:
    """slime ``--group-rm --custom-rm-path rewardsvc_client.slime.group_rm``: one request
    per group, one reward per sample in order."""
    return await _scorer(args).group_rm(args, samples)


__all__ = ["SlimeRM", "group_rm", "make_rm", "rm"]
