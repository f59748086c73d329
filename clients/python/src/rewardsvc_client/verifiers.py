"""verifiers adapter (classic API, verifiers up to 0.3): reward functions for ``vf.Rubric``.

verifiers 0.4 has no classic API; use the v1 judge plugin there, the top-level module
``rewardsvc_judge`` installed with this distribution (``id = "rewardsvc_judge"`` under the
task config's ``judges``).

verifiers' classic rubric API (``verifiers/rubrics/rubric.py``; ``verifiers.legacy`` in 0.3,
gone from 0.4 whose ``verifiers.v1`` uses Task methods instead) inspects each reward
function's parameter names and passes only those it names, from ``prompt``, ``completion``,
``answer``, ``state``, ``info``, ``task`` and the rubric's class objects (``parser``...); a
function naming any of ``prompts``, ``completions``, ``answers``, ``states``, ``infos``,
``tasks`` is a *group* function, called once per group with lists. Sync or async both work;
the result goes through ``float()``, and an exception is logged and scored 0.0. The function's
``__name__`` is its metric name.

    import verifiers as vf
    from rewardsvc_client.verifiers import verifiers_group_reward_func
    rubric = vf.Rubric(funcs=[verifiers_group_reward_func("http://HOST:8000", "helpful-answer")])

The group function scores a whole group in one request (fewer round trips); the per-rollout
function ``verifiers_reward_func`` suits rubrics that mix it with other per-rollout functions.
verifiers cannot mask a missing reward (``float(None)`` fails, and its group advantage is
reward minus the group mean), so ``judge_error`` rollouts are re-sent for ``judge_error_wait``
seconds (120 by default, as the other adapters wait: a judge outage shorter than that only
delays the step), at least ``judge_error_retries`` times; a rollout still without a reward
scores ``failure_score`` (default 0.0, for the reasons given in ``rewardsvc_client.verl``),
with a warning in the log, and the service's status, uncertainty and flags are written to
``state["rewardsvc"]``.

Per-prompt rubrics: ``info[criteria_key]`` (default ``criteria``: the dataset's ``info``
column, which verifiers passes per example) is sent as the rollout's own criteria, read in
``criteria_format`` with ``criteria_mode``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rewardsvc_client._adapt import (
    LoopClients,
    Settings,
    annotate_state,
    failure_score_default,
    fallback_reward,
    named,
    to_wire_text,
    verdict,
    wire_item,
)
from rewardsvc_client._retrying import drive, results_or_none

VIEWS = ("trace", "final")
DEFAULT_JUDGE_ERROR_WAIT = 120.0
DEFAULT_CRITERIA_KEY = "criteria"


def final_reply(completion: Any) -> Any:
    """The last assistant message of a message-list completion (a string as it is)."""
    wire = to_wire_text(completion)
    if isinstance(wire, str):
        return wire
    replies = [m for m in wire if m.get("role") == "assistant"]
    return replies[-1:] or wire


def _default_name(rubric: str) -> str:
    return "rewardsvc_" + re.sub(r"\W", "_", rubric)


class _Scorer:
    def __init__(
        self,
        settings: Settings,
        failure_score: float | None,
        judge_error_retries: int,
        name: str | None,
        view: str = "trace",
        judge_error_wait: float = DEFAULT_JUDGE_ERROR_WAIT,
        criteria_key: str = DEFAULT_CRITERIA_KEY,
    ) -> None:
        self.criteria_key = criteria_key
        if view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}, not {view!r}")
        self.view = view
        self.settings = settings
        self.clients = LoopClients(settings)
        self.failure_score = failure_score_default(failure_score)
        self.judge_error_retries = judge_error_retries
        self.judge_error_wait = judge_error_wait
        self.name = name or _default_name(settings.rubric)

    async def score(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        answers: Sequence[Any] | None,
        states: Sequence[Any] | None,
        infos: Sequence[Any] | None = None,
    ) -> list[float]:
        items = [
            wire_item(
                i,
                to_wire_text(prompt),
                to_wire_text(completion) if self.view == "trace" else final_reply(completion),
                {"trainer": "verifiers"},
                answers[i] if answers is not None else None,
                self._criteria(infos[i] if infos is not None else None),
            )
            for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True))
        ]
        if not items:
            return []
        steps = results_or_none(
            self.settings, items, self.judge_error_retries, self.judge_error_wait, self.name
        )
        results = await drive(self.clients.get(), steps)
        if states is not None:
            for state, result in zip(states, results, strict=False):
                info = verdict(result)
                annotate_state(state, info if result is None else {**info, "error": result.error})
        return [
            fallback_reward(r, self.failure_score, self.name, str(i)) for i, r in enumerate(results)
        ]

    def _criteria(self, info: Any) -> Any:
        """The rollout's own criteria: ``info[criteria_key]`` (None without it)."""
        return info.get(self.criteria_key) if isinstance(info, Mapping) else None


def _scorer(arguments: Mapping[str, Any]) -> _Scorer:
    """The scorer of a factory's arguments (its ``locals()``)."""
    a = arguments
    settings = Settings.resolve(
        a["url"], a["rubric"], api_key=a["api_key"], timeout=a["timeout"], options=a["options"],
        criteria_format=a["criteria_format"], criteria_mode=a["criteria_mode"],
    )  # fmt: skip
    return _Scorer(
        settings, a["failure_score"], a["judge_error_retries"], a["name"], a["view"],
        a["judge_error_wait"], a["criteria_key"],
    )  # fmt: skip


def verifiers_reward_func(
    url: str | None,
    rubric: str | None,
    api_key: str | None = None,
    *,
    name: str | None = None,
    failure_score: float | None = None,
    judge_error_retries: int = 2,
    judge_error_wait: float = DEFAULT_JUDGE_ERROR_WAIT,
    timeout: float | None = None,
    options: Mapping[str, Any] | None = None,
    view: str = "trace",
    criteria_key: str = DEFAULT_CRITERIA_KEY,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
) -> Any:
    """A per-rollout verifiers reward function: ``async def f(prompt, completion, answer,
    state) -> float``. ``answer`` ("" means none) is sent as the reference. Arguments left
    None come from REWARDSVC_URL / REWARDSVC_RUBRIC / REWARDSVC_API_KEY. ``name`` is the
    metric name (default ``rewardsvc_<rubric>``). ``view="trace"`` (default) sends the whole
    rollout, tool calls and tool results included; ``view="final"`` only its last assistant
    message (pair it with the rubric's own ``view``). ``judge_error_wait``: seconds to keep
    re-sending judge_error rollouts before ``failure_score``. ``info[criteria_key]`` is the
    rollout's own criteria, read in ``criteria_format`` with ``criteria_mode``."""
    scorer = _scorer(locals())

    async def reward(
        prompt: Any, completion: Any, answer: Any = None, state: Any = None, info: Any = None
    ) -> float:
        states = [state] if state is not None else None
        return (await scorer.score([prompt], [completion], [answer], states, [info]))[0]

    return named(reward, scorer.name)


def verifiers_group_reward_func(
    url: str | None,
    rubric: str | None,
    api_key: str | None = None,
    *,
    name: str | None = None,
    failure_score: float | None = None,
    judge_error_retries: int = 2,
    judge_error_wait: float = DEFAULT_JUDGE_ERROR_WAIT,
    timeout: float | None = None,
    options: Mapping[str, Any] | None = None,
    view: str = "trace",
    criteria_key: str = DEFAULT_CRITERIA_KEY,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
) -> Any:
    """A group verifiers reward function: ``async def f(prompts, completions, answers,
    states, infos) -> list[float]``, one request per group. Same arguments as
    ``verifiers_reward_func``."""
    scorer = _scorer(locals())

    async def reward(
        prompts: Sequence[Any],
        completions: Sequence[Any],
        answers: Sequence[Any] | None = None,
        states: Sequence[Any] | None = None,
        infos: Sequence[Any] | None = None,
    ) -> list[float]:
        return await scorer.score(prompts, completions, answers, states, infos)

    return named(reward, scorer.name)


__all__ = ["final_reply", "verifiers_group_reward_func", "verifiers_reward_func"]
