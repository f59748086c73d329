"""OpenRLHF adapter: its remote-reward hooks pointed at rewardsvc.

OpenRLHF (0.11, ``openrlhf/utils/agent.py`` ``SingleTurnAgentExecutor``) gets rewards from
``--reward.remote_url`` (called ``--remote_rm_url`` before 0.10), either

1. an HTTP URL: it POSTs ``{"query": [...], "prompts": [...], "labels": [...]}`` (one sample
   per request) and reads ``rewards``/``scores``/``extra_logs``. rewardsvc answers that
   shape itself at ``/openrlhf/<rubric>``::

       --reward.remote_url http://HOST:8000/openrlhf/short-answer-correctness

   OpenRLHF splits a batch over several comma-separated URLs, but with one sample per
   request only the first URL effectively serves: put a load balancer (e.g. a Kubernetes
   Service) in front of several replicas and give OpenRLHF its one URL. OpenRLHF's HTTP
   client sends no Authorization header; with API keys, put the key in the URL as Basic
   auth, ``http://k:KEY@HOST:8000/openrlhf/<rubric>`` (the service accepts it).

2. a path ending in ``.py``: it loads the file, takes its ``reward_func`` and calls it in a
   thread as ``reward_func(queries, prompts, labels)`` with one sample per call. This module
   is such a file (configured by REWARDSVC_URL, REWARDSVC_RUBRIC, REWARDSVC_API_KEY, in the
   environment of OpenRLHF's Ray actors), so::

       --reward.remote_url $(python -c "import rewardsvc_client.openrlhf as m; print(m.__file__)")

   or write your own two-line file with ``make_reward_func``.

``query`` is the chat-templated prompt plus the response, decoded with special tokens; the
response sent to the judge is ``query`` minus the ``prompt`` prefix, without trailing
end-of-turn tokens. ``labels`` (the dataset's ``--data.label_key`` column) become references.

Failures: an exception or a missing reward leaves OpenRLHF with ``rewards=None`` for that
sample, which its experience maker cannot batch with the others, so, as in the veRL adapter,
a sample the service cannot score gets ``failure_score`` (default 0.0, the bottom of the
scale, so judge failures can never pay off) after ``judge_error_retries`` re-sends, and
``extra_logs["rewardsvc_valid"] = 0``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rewardsvc_client._adapt import (
    Settings,
    ThreadClients,
    failure_score_default,
    fallback_reward,
    is_configuration_error,
    logger,
    rewards_with_retries_sync,
    status_numbers,
    to_reference,
)
from rewardsvc_client.client import RewardServiceError

# End-of-turn / end-of-text markers decoded with skip_special_tokens=False: <|im_end|>,
# <|eot_id|>, <|endoftext|>, </s>, <eos>, <end_of_turn>, and padding after them.
_TRAILING_SPECIAL = re.compile(
    r"(?:\s*(?:<\|[A-Za-z0-9_:\-]{1,40}\|>|</s>|<eos>|<pad>|<end_of_turn>))+\s*\Z"
)


def response_text(query: str, prompt: str) -> str:
    """The policy's response inside an OpenRLHF ``query`` (prompt + response + specials)."""
    if prompt and query.startswith(prompt):
        response = query[len(prompt) :]
    elif prompt and prompt in query:
        # Tokenizer round trips can add a BOS token or change spaces before the prompt.
        response = query[query.rindex(prompt) + len(prompt) :]
    else:
        response = query
    return _TRAILING_SPECIAL.sub("", response)


class OpenRLHFReward:
    """The ``reward_func(queries, prompts, labels)`` callable; picklable (Ray ships it to
    its actors): connections are per thread and are not pickled."""

    def __init__(self, settings: Settings, failure_score: float, judge_error_retries: int) -> None:
        self.settings = settings
        self.failure_score = failure_score
        self.judge_error_retries = judge_error_retries
        self.clients = ThreadClients(settings)

    def __call__(
        self,
        queries: Sequence[str],
        prompts: Sequence[Any],
        labels: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        items = []
        for i, query in enumerate(queries):
            prompt = prompts[i] if i < len(prompts) else ""
            prompt_text = prompt if isinstance(prompt, str) else str(prompt)
            item: dict[str, Any] = {
                "id": str(i),
                "prompt": prompt_text,
                "completion": response_text(query, prompt_text),
                "metadata": {"trainer": "openrlhf"},
            }
            reference = to_reference(labels[i]) if labels is not None and i < len(labels) else None
            if reference is not None:
                item["reference"] = reference
            items.append(item)
        results: list[Any]
        try:
            results = rewards_with_retries_sync(
                self.clients.get(),
                self.settings,
                items,
                judge_error_retries=self.judge_error_retries,
            )
        except RewardServiceError as exc:
            if is_configuration_error(exc):
                raise
            logger.error("rewardsvc OpenRLHF adapter: %s", exc)
            results = [None] * len(items)
        rewards = [
            fallback_reward(r, self.failure_score, "OpenRLHF adapter", str(i))
            for i, r in enumerate(results)
        ]
        numbers = [status_numbers(r) for r in results]
        extra_logs = {key: [n[key] for n in numbers] for key in status_numbers(None)}
        return {"rewards": rewards, "scores": list(rewards), "extra_logs": extra_logs}


def make_reward_func(
    url: str | None = None,
    rubric: str | None = None,
    api_key: str | None = None,
    *,
    failure_score: float | None = None,
    judge_error_retries: int = 2,
    timeout: float | None = None,
    retries: int = 3,
    options: Mapping[str, Any] | None = None,
) -> OpenRLHFReward:
    """A ``reward_func(queries, prompts, labels)`` for OpenRLHF's python-file hook::

        # my_reward.py   (--reward.remote_url /path/to/my_reward.py)
        from rewardsvc_client.openrlhf import make_reward_func
        reward_func = make_reward_func("http://HOST:8000", "short-answer-correctness")

    Returns ``{"rewards": [float], "scores": [float], "extra_logs": {key: [float]}}``, each
    list as long as ``queries``; extra_logs keys are fixed (``rewardsvc_valid``,
    ``rewardsvc_uncertainty``, ...). Arguments left None come from the environment. The
    returned object pickles (without its connections).
    """
    settings = Settings.resolve(
        url, rubric, api_key=api_key, timeout=timeout, retries=retries, options=options
    )
    fallback = failure_score_default() if failure_score is None else float(failure_score)
    return OpenRLHFReward(settings, fallback, judge_error_retries)


_default: Callable[..., dict[str, Any]] | None = None


def reward_func(
    queries: Sequence[str],
    prompts: Sequence[Any],
    labels: Sequence[Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """OpenRLHF's python-file hook, configured by REWARDSVC_URL and REWARDSVC_RUBRIC (and
    REWARDSVC_API_KEY, REWARDSVC_FAILURE_SCORE); see ``make_reward_func``."""
    global _default
    if _default is None:
        _default = make_reward_func()
    return _default(queries, prompts, labels, **kwargs)


__all__ = ["OpenRLHFReward", "make_reward_func", "response_text", "reward_func"]
