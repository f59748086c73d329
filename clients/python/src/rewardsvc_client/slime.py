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

Per-prompt rubrics: a ``sample.label`` that is a rubric label (``{"criteria": [...],
"reference": "..."}``, an object or its JSON text: ``rubric_label``), or else
``sample.metadata[criteria_key]`` (default ``criteria``), is the sample's own criteria,
read in ``criteria_format`` with ``criteria_mode`` (``make_rm``'s arguments, or
REWARDSVC_CRITERIA_FORMAT / REWARDSVC_CRITERIA_MODE). slime's own ``remote_rm`` posts the
label to the service's route as it is: ``route_url`` builds its ``--rm-url``.

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
    to_wire_text,
    verdict,
    wire_item,
)
from rewardsvc_client._retrying import drive, results_or_none
from rewardsvc_client.criteria import route_url as _route_url
from rewardsvc_client.criteria import rubric_label, split_label

DEFAULT_JUDGE_ERROR_WAIT = 100.0
DEFAULT_CRITERIA_KEY = "criteria"


class SlimeRM:
    """``await rm(args, sample)`` / ``await rm(args, samples)`` for slime."""

    def __init__(
        self,
        settings: Settings,
        failure_score: float,
        judge_error_retries: int = 2,
        judge_error_wait: float = DEFAULT_JUDGE_ERROR_WAIT,
        criteria_key: str = DEFAULT_CRITERIA_KEY,
    ) -> None:
        self.settings = settings
        self.criteria_key = criteria_key
        self.failure_score = failure_score
        self.judge_error_retries = judge_error_retries
        self.judge_error_wait = judge_error_wait
        self.clients = LoopClients(settings)

    async def score(self, samples: Sequence[Any]) -> list[float]:
        """Rewards of ``samples`` in one request; failed ones are marked for removal."""
        items = [self._item(i, sample) for i, sample in enumerate(samples)]
        if not items:
            return []
        steps = results_or_none(
            self.settings, items, self.judge_error_retries, self.judge_error_wait, "slime adapter"
        )
        results = await drive(self.clients.get(), steps)
        rewards = []
        for i, (sample, result) in enumerate(zip(samples, results, strict=True)):
            mark(sample, verdict(result), result is not None and result.reward is not None)
            reward = fallback_reward(result, self.failure_score, "slime adapter", str(i))
            rewards.append(float(reward))
        return rewards

    def _item(self, index: int, sample: Any) -> dict[str, Any]:
        reference, criteria = split_label(getattr(sample, "label", None))
        metadata = getattr(sample, "metadata", None)
        if criteria is None and isinstance(metadata, dict):
            criteria = metadata.get(self.criteria_key)
        return wire_item(
            index,
            to_wire_text(getattr(sample, "prompt", "")),
            to_wire_text(getattr(sample, "response", "")),
            {"trainer": "slime"},
            reference,
            criteria,
        )

    async def rm(self, args: Any, sample: Any, **kwargs: Any) -> float:
        """slime custom RM: the reward of one sample."""
        return (await self.score([sample]))[0]

    async def group_rm(self, args: Any, samples: Sequence[Any], **kwargs: Any) -> list[float]:
        """slime group RM: one reward per sample of the group, in order."""
        return await self.score(samples)


def mark(sample: Any, info: dict[str, Any], scored: bool) -> None:
    """Record the verdict ``info`` in the sample's metadata; a sample without a reward
    (not ``scored``) is marked removed, so slime leaves it out of the loss."""
    metadata = getattr(sample, "metadata", None)
    if isinstance(metadata, dict):
        metadata["rewardsvc"] = info
    if not scored:
        sample.remove_sample = True


def rm_url(args: Any) -> str | None:
    """REWARDSVC_URL, else slime's ``--rm-url``."""
    return os.environ.get(ENV_URL) or getattr(args, "rm_url", None)


def _settings(args: Any, **kwargs: Any) -> Settings:
    url = kwargs.pop("url", None) or rm_url(args)
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
    criteria_key: str = DEFAULT_CRITERIA_KEY,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
) -> SlimeRM:
    """A scorer whose ``rm`` and ``group_rm`` methods are slime custom RM functions::

    # my_rm.py   (--custom-rm-path my_rm.rm, or --group-rm --custom-rm-path my_rm.group_rm)
    from rewardsvc_client.slime import make_rm
    scorer = make_rm("http://HOST:8000", "short-answer-correctness", run="my-run")
    rm, group_rm = scorer.rm, scorer.group_rm

    ``criteria_key``, ``criteria_format``, ``criteria_mode``: see the module docstring.
    """
    settings = Settings.resolve(
        url, rubric, api_key=api_key, timeout=timeout, run=run, options=options,
        criteria_format=criteria_format, criteria_mode=criteria_mode,
    )  # fmt: skip
    return SlimeRM(
        settings,
        failure_score_default(failure_score),
        judge_error_wait=judge_error_wait,
        criteria_key=criteria_key,
    )


def route_url(
    base: str,
    rubric: str,
    *,
    run: str | None = None,
    format: str | None = None,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
) -> str:
    """The service's slime route for ``--rm-url``: ``{base}/slime/{rubric}?...`` (``format``
    is the route's reply format, e.g. ``dict``)."""
    return _route_url(
        base, "slime", rubric, run=run, format=format, criteria_format=criteria_format,
        criteria_mode=criteria_mode,
    )  # fmt: skip


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


__all__ = ["SlimeRM", "group_rm", "make_rm", "rm", "route_url", "rubric_label"]
