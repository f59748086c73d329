"""OpenRLHF adapter: its remote-reward hooks pointed at rewardsvc.

OpenRLHF (0.11, ``openrlhf/utils/agent.py`` ``SingleTurnAgentExecutor``) gets rewards from
``--reward.remote_url`` (called ``--remote_rm_url`` before 0.10), either

1. HTTP URLs: it POSTs ``{"query": [...], "prompts": [...], "labels": [...]}`` (one sample
   per request) and reads ``rewards``/``scores``/``extra_logs``. rewardsvc answers that
   shape itself at ``/openrlhf/<rubric>``::

       --reward.remote_url http://HOST:8000/openrlhf/short-answer-correctness?run=my-run

   Several comma-separated URLs (rewardsvc replicas) are used in turn: OpenRLHF rotates
   over them on every call. Its client retries a failed request 5 times, 1 s apart, with a
   180 s timeout per try, and ignores Retry-After; so during a judge outage the route holds
   each request (up to 150 s) while it re-scores, instead of failing at once. OpenRLHF's HTTP
   client sends no Authorization header; with API keys, put the key in the URL as Basic
   auth, ``http://k:KEY@HOST:8000/openrlhf/<rubric>`` (the service accepts it).

2. a path ending in ``.py``: it loads the file, takes its ``reward_func`` and calls it in a
   thread as ``reward_func(queries, prompts, labels)`` with one sample per call. This module
   is such a file (configured by REWARDSVC_URL, REWARDSVC_RUBRIC, REWARDSVC_API_KEY,
   REWARDSVC_RUN, in the environment of OpenRLHF's Ray actors), so::

       --reward.remote_url $(python -c "import rewardsvc_client.openrlhf as m; print(m.__file__)")

   or write your own two-line file with ``make_reward_func``.

``query`` is the chat-templated prompt plus the response, decoded with special tokens; the
response sent to the judge is ``query`` minus the prompt, without trailing end-of-turn
tokens. OpenRLHF cuts over-long prompts from the left, so a query may start with only the
end of the prompt: that part is removed too. ``labels`` (``--data.label_key``) become
references.

Per-prompt rubrics: a label built with ``rubric_label(criteria, reference)`` (JSON text:
OpenRLHF's labels are strings) carries the sample's own criteria, read by both hooks; give
the dataset's format and the mode as ``criteria_format`` / ``criteria_mode`` (the route's
query parameters, see ``route_url``; ``make_reward_func``'s arguments, or
REWARDSVC_CRITERIA_FORMAT / REWARDSVC_CRITERIA_MODE for this file)::

    --reward.remote_url "$(python -c 'from rewardsvc_client.openrlhf import route_url;
        print(route_url("http://HOST:8000", "per-prompt", criteria_format="healthbench"))')"

Failures: both hooks return the same ``extra_logs`` keys (``rewardsvc_valid``,
``rewardsvc_judge_error``, ``rewardsvc_rejected``, ...), which OpenRLHF logs per sample. A
sample whose reward cannot be produced after ``judge_error_wait`` seconds of re-sending
(150 by default) gets ``failure_score`` (0.0, the bottom of the scale, so judge failures
never pay) with ``rewardsvc_valid = 0``, and a warning: OpenRLHF cannot drop a single sample
(a None reward breaks its batching). Filter on ``rewardsvc_valid`` to skip them.
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
    status_numbers,
    wire_item,
)
from rewardsvc_client._retrying import drive_sync, results_or_none
from rewardsvc_client.criteria import route_url as _route_url
from rewardsvc_client.criteria import rubric_label, split_label

# End-of-turn / end-of-text markers decoded with skip_special_tokens=False: <|im_end|>,
# <|eot_id|>, <|endoftext|>, </s>, <eos>, <end_of_turn>, and padding after them.
_TRAILING_SPECIAL = re.compile(
    r"(?:\s*(?:<\|[A-Za-z0-9_:\-]{1,40}\|>|</s>|<eos>|<pad>|<end_of_turn>))+\s*\Z"
)
_TAIL = 32
"""Characters of the prompt's end searched for in a query whose prompt was cut."""


def _after_prompt_tail(query: str, prompt: str) -> int | None:
    """Where the response starts in a query holding only the end of ``prompt`` (OpenRLHF
    truncates over-long prompts from the left): the end of the longest suffix of the prompt
    that the query starts with."""
    tail = prompt[-_TAIL:]
    start = query.find(tail)
    while start != -1:
        end = start + len(tail)
        if prompt.endswith(query[:end]):
            return end
        start = query.find(tail, start + 1)
    return None


def response_text(query: str, prompt: str) -> str:
    """The policy's response inside an OpenRLHF ``query`` (prompt + response + specials)."""
    if prompt and query.startswith(prompt):
        response = query[len(prompt) :]
    elif prompt and prompt in query:
        # Tokenizer round trips can add a BOS token or change spaces before the prompt. The
        # first occurrence: a policy that repeats its prompt must not hide what precedes it.
        response = query[query.index(prompt) + len(prompt) :]
    elif prompt and (cut := _after_prompt_tail(query, prompt)) is not None:
        response = query[cut:]
    else:
        response = query
    return _TRAILING_SPECIAL.sub("", response)


class OpenRLHFReward:
    """The ``reward_func(queries, prompts, labels)`` callable; picklable (Ray ships it to
    its actors): connections are per thread and are not pickled."""

    def __init__(
        self,
        settings: Settings,
        failure_score: float,
        judge_error_retries: int,
        judge_error_wait: float = 150.0,
    ) -> None:
        self.settings = settings
        self.failure_score = failure_score
        self.judge_error_retries = judge_error_retries
        self.judge_error_wait = judge_error_wait
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
            label = labels[i] if labels is not None and i < len(labels) else None
            completion = response_text(query, prompt_text)
            reference, criteria = split_label(label)
            item = wire_item(
                i, prompt_text, completion, {"trainer": "openrlhf"}, reference, criteria
            )
            items.append(item)
        steps = results_or_none(
            self.settings,
            items,
            self.judge_error_retries,
            self.judge_error_wait,
            "OpenRLHF adapter",
        )
        results = drive_sync(self.clients.get(), steps)
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
    judge_error_wait: float = 150.0,
    timeout: float | None = None,
    retries: int = 3,
    options: Mapping[str, Any] | None = None,
    run: str | None = None,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
) -> OpenRLHFReward:
    """A ``reward_func(queries, prompts, labels)`` for OpenRLHF's python-file hook::

        # my_reward.py   (--reward.remote_url /path/to/my_reward.py)
        from rewardsvc_client.openrlhf import make_reward_func
        reward_func = make_reward_func("http://HOST:8000", "short-answer-correctness")

    Returns ``{"rewards": [float], "scores": [float], "extra_logs": {key: [float]}}``, each
    list as long as ``queries``; extra_logs keys are fixed (``rewardsvc_valid``,
    ``rewardsvc_uncertainty``, ...), the same as the HTTP route's. ``run`` names the
    training run (default REWARDSVC_RUN). Labels made with ``rubric_label`` carry each
    sample's criteria, read in ``criteria_format`` with ``criteria_mode``. Arguments left
    None come from the environment. The returned object pickles (without its connections).
    """
    settings = Settings.resolve(
        url, rubric, api_key=api_key, timeout=timeout, retries=retries, options=options,
        run=run, criteria_format=criteria_format, criteria_mode=criteria_mode,
    )  # fmt: skip
    return OpenRLHFReward(
        settings, failure_score_default(failure_score), judge_error_retries, judge_error_wait
    )


def route_url(
    base: str,
    rubric: str,
    *,
    run: str | None = None,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
) -> str:
    """The service's OpenRLHF route for ``--reward.remote_url``:
    ``{base}/openrlhf/{rubric}?run=...&criteria_format=...&criteria_mode=...``."""
    return _route_url(
        base, "openrlhf", rubric, run=run, criteria_format=criteria_format,
        criteria_mode=criteria_mode,
    )  # fmt: skip


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


__all__ = [
    "OpenRLHFReward",
    "make_reward_func",
    "response_text",
    "reward_func",
    "route_url",
    "rubric_label",
]
