"""veRL adapter configuration: one ``_Config`` from a hook's keyword arguments
(``reward_kwargs``) and the environment; see ``rewardsvc_client.verl``."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from rewardsvc_client._adapt import Settings, failure_score_default, logger
from rewardsvc_client._objectives import objective_names

PROMPT_KEYS = ("question", "prompt")
_NO_RUBRIC = "-"  # placeholder while only a per-data_source mapping is given
DEFAULT_JUDGE_ERROR_WAIT = 120.0
"""Seconds a judge_error sample is re-sent before it gets the failure score."""
DEFAULT_CRITERIA_KEY = "criteria"
"""The ``extra_info`` key whose value is sent as the sample's own criteria."""

_warned: set[str] = set()


def _warn_once(key: str, message: str, *args: Any, level: int = logging.WARNING) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.log(level, message, *args)


@dataclasses.dataclass(frozen=True)
class _Config:
    settings: Settings
    rubrics: Mapping[str, str]
    failure_score: float
    judge_error_retries: int
    judge_error_wait: float
    prompt_key: str | None
    criteria_key: str
    objectives: tuple[str, ...] = ()
    """The rubric's or recipe's objectives returned as keys of every sample's dict (GDPO)."""

    def rubric_for(self, data_source: Any) -> str:
        """The rubric of this data_source: ``rubrics[data_source]``, else ``rubrics["default"]``,
        else the configured rubric."""
        rubric = self.rubrics.get(
            str(data_source), self.rubrics.get("default", self.settings.rubric)
        )
        if rubric == _NO_RUBRIC:
            raise ValueError(
                f"no rubric for data_source {data_source!r}: add it to rubrics or give a 'default'"
            )
        return rubric


def _router_url(address: Any) -> str | None:
    if not address:
        return None
    text = str(address)
    return text if "://" in text else f"http://{text}"


def _config(
    url: str | None,
    rubric: str | None,
    rubrics: Mapping[str, str] | None,
    api_key: str | None,
    run: str | None,
    failure_score: float | None,
    judge_error_retries: int,
    judge_error_wait: float,
    prompt_key: str | None,
    timeout: float | None,
    options: Mapping[str, Any] | None,
    reward_router_address: Any,
    criteria_key: str | None = None,
    criteria_format: str | None = None,
    criteria_mode: str | None = None,
    objectives: Sequence[str] | None = None,
    retries: int = 3,
) -> _Config:
    criteria = {"criteria_format": criteria_format, "criteria_mode": criteria_mode}
    try:
        settings = Settings.resolve(
            url,
            rubric or (dict(rubrics).get("default") if rubrics else None) or _NO_RUBRIC,
            api_key=api_key,
            timeout=timeout,
            run=run,
            options=options,
            retries=retries,
            **criteria,
        )
    except ValueError:
        router = _router_url(reward_router_address)
        if router is None:
            raise
        _warn_once(
            "router",
            "rewardsvc veRL adapter: using reward_router_address %s",
            router,
            level=logging.INFO,
        )
        settings = Settings.resolve(
            router, rubric or _NO_RUBRIC, api_key=api_key, timeout=timeout, run=run,
            options=options, **criteria,
        )  # fmt: skip
    if settings.rubric == _NO_RUBRIC and not rubrics:
        raise ValueError(
            "no rubric: pass rubric=..., rubrics={data_source: rubric}, or set REWARDSVC_RUBRIC"
        )
    return _Config(
        settings,
        dict(rubrics or {}),
        failure_score_default(failure_score),
        judge_error_retries,
        judge_error_wait,
        prompt_key,
        criteria_key or DEFAULT_CRITERIA_KEY,
        objective_names(objectives, reserved=("score", "acc")),
    )


_CONFIG_ARGS = (
    "url", "rubric", "rubrics", "api_key", "run", "failure_score", "judge_error_retries",
    "judge_error_wait", "prompt_key", "timeout", "options", "reward_router_address",
    "criteria_key", "criteria_format", "criteria_mode", "objectives", "retries",
)  # fmt: skip


def _config_of(arguments: Mapping[str, Any]) -> _Config:
    """``_config`` from a public function's arguments (its ``locals()``)."""
    # A name a public function lacks (make_compute_score has no reward_router_address) is None.
    given: dict[str, Any] = {name: arguments.get(name) for name in _CONFIG_ARGS[:-1]}
    return _config(**given, retries=arguments.get("retries", 3))
