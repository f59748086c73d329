"""Waiting and re-sending for the trainer adapters, written once for blocking and asyncio
callers: ``patient``, ``resending`` and ``results_or_none`` are generators of steps
(``rewardsvc_client._steps``) that ``drive`` (an AsyncClient, in the running loop) or
``drive_sync`` (a Client) carry out."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from rewardsvc_client._adapt import Settings, is_configuration_error, logger
from rewardsvc_client._steps import Steps, run_async, run_sync
from rewardsvc_client.client import AsyncClient, Client
from rewardsvc_client.errors import DeadlineExceededError, RewardServiceError

T = TypeVar("T")


MIN_SATURATION_WAIT = 0.1
"""Seconds; floor of one wait for a saturated service (Retry-After: 0 must not spin)."""


def saturation_wait(exc: RewardServiceError, attempt: int) -> float | None:
    """Seconds to wait before sending again when ``exc`` says the service is saturated
    (429, or 503 with Retry-After); None when it says something else."""
    if exc.status_code == 429:
        if exc.retry_after is not None:
            return max(MIN_SATURATION_WAIT, exc.retry_after)
        return min(30.0, 0.5 * 2.0**attempt)
    if exc.status_code == 503 and exc.retry_after is not None:
        return max(MIN_SATURATION_WAIT, exc.retry_after)
    return None


def _next_wait(exc: RewardServiceError, attempt: int, deadline: float, waited: float) -> float:
    """Seconds to wait before asking again; raises ``exc`` when it does not mean "saturated",
    and ``DeadlineExceededError`` when the wait of ``waited`` seconds is over."""
    wait = saturation_wait(exc, attempt)
    if wait is None:
        raise exc
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceededError(
            f"the service stayed saturated for {waited:.0f} s: {exc}",
            status_code=exc.status_code,
            error=exc.error,
            retry_after=exc.retry_after,
        ) from exc
    return min(wait, remaining)


@dataclass(frozen=True)
class Ask:
    """Step: ``client.rewards(entries)`` (``client.groups`` when ``groups``) with the rubric,
    options and run of ``settings``; the response comes back."""

    settings: Settings
    entries: list[dict[str, Any]]
    groups: bool = False


def _ask(client: Client | AsyncClient) -> Callable[[Ask], Any]:
    def call(ask: Ask) -> Any:
        settings = ask.settings
        method = client.groups if ask.groups else client.rewards
        return method(settings.rubric, ask.entries, settings.options, run=settings.run)

    return call


async def drive(client: AsyncClient, steps: Steps[Ask, T]) -> T:
    """Carry out ``steps`` (``patient``, ``resending``, ``results_or_none``...) in the
    running event loop."""
    return await run_async(steps, _ask(client))


def drive_sync(client: Client, steps: Steps[Ask, T]) -> T:
    """Carry out ``steps`` blocking; see ``drive``."""
    return run_sync(steps, _ask(client))


def patient(
    settings: Settings, items: list[dict[str, Any]], groups: bool = False
) -> Steps[Ask, Any]:
    """The rewards of ``items`` (or of groups: ``groups``), asked again while the service
    answers "saturated" (429, or 503 with Retry-After, honoured) after the client's own
    retries, until ``settings.timeout`` seconds have passed since the first try: a busy service
    delays training instead of turning into failure scores. Then ``DeadlineExceededError``."""
    deadline = time.monotonic() + settings.timeout
    attempt = 0
    while True:
        try:
            response = yield Ask(settings, items, groups)
        except RewardServiceError as exc:
            wait = _next_wait(exc, attempt, deadline, settings.timeout)
            logger.info("rewardsvc: service saturated (%s); again in %.1f s", exc, wait)
            yield wait
            attempt += 1
        else:
            return response


def _resend_failed(exc: RewardServiceError, failed: int, noun: str) -> None:
    """A re-send of judge_error entries raised: keep what was scored, stop re-sending."""
    if is_configuration_error(exc):
        raise exc
    logger.warning(
        "rewardsvc: re-sending %d judge_error %s(s) failed: %s; keeping the results so far",
        failed,
        noun,
        exc,
    )


JUDGE_ERROR_BACKOFF_CAP = 10.0
"""Seconds; the longest pause between two re-sends of judge_error items."""


def _resend_pause(backoff: float, attempt: int, deadline: float) -> float:
    pause = min(backoff * 2.0**attempt, JUDGE_ERROR_BACKOFF_CAP)
    remaining = deadline - time.monotonic()
    # Within the wait, do not sleep past its end (one last re-send right at the deadline).
    return min(pause, remaining) if remaining > 0 else pause


def _keep_resending(attempt: int, retries: int, deadline: float) -> bool:
    return attempt < retries or time.monotonic() < deadline


def resending(
    settings: Settings,
    items: list[dict[str, Any]],
    judge_error_retries: int,
    backoff: float = 1.0,
    judge_error_wait: float = 0.0,
    groups: bool = False,
) -> Steps[Ask, list[Any]]:
    """Score items (or groups: ``groups``); re-send those that came back judge_error (for
    trainers that cannot mask a missing reward: judges often recover, and verdicts that did
    succeed come from the service's cache), at least ``judge_error_retries`` more times and
    for as long as ``judge_error_wait`` seconds after the first answer, with exponential pauses
    (at most 10 s): a judge outage shorter than the wait delays training instead of failing
    samples.

    A saturated service is waited for (``patient``). If a re-send fails, the results
    already obtained are kept and re-sending stops (the items still failed stay judge_error).
    """
    noun = "group" if groups else "item"
    response = yield from patient(settings, items, groups)
    results = list(response.results)
    deadline = time.monotonic() + judge_error_wait
    attempt = 0
    while _keep_resending(attempt, judge_error_retries, deadline):
        failed = [i for i, r in enumerate(results) if r.status == "judge_error"]
        if not failed:
            break
        if attempt == 0:
            logger.info("rewardsvc: %d %s(s) judge_error; re-sending", len(failed), noun)
        yield _resend_pause(backoff, attempt, deadline)
        attempt += 1
        try:
            retry = yield from patient(settings, [items[i] for i in failed], groups)
        except RewardServiceError as exc:
            _resend_failed(exc, len(failed), noun)
            break
        for index, result in zip(failed, retry.results, strict=True):
            results[index] = result
    return results


def results_or_none(
    settings: Settings,
    items: list[dict[str, Any]],
    judge_error_retries: int,
    judge_error_wait: float,
    where: str,
    groups: bool = False,
) -> Steps[Ask, list[Any]]:
    """``resending``, for adapters that fall back per sample: a failed request gives None for
    every item (logged as ``rewardsvc <where>: ...``); a configuration error (unknown
    rubric, bad key) raises, since no fallback can fix it."""
    try:
        results = yield from resending(
            settings, items, judge_error_retries, judge_error_wait=judge_error_wait, groups=groups
        )
    except RewardServiceError as exc:
        if is_configuration_error(exc):
            raise
        logger.error("rewardsvc %s: %s", where, exc)
        return [None] * len(items)
    return list(results)


__all__ = [
    "Ask",
    "drive",
    "drive_sync",
    "patient",
    "resending",
    "results_or_none",
    "saturation_wait",
]
