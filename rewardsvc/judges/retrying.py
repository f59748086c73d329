"""How a judge call retries: the backoff policy and the longest a call may take.

:mod:`rewardsvc.judges.backends` applies them (and re-exports both).
"""

from __future__ import annotations

from dataclasses import dataclass

from rewardsvc.core.pool import JudgeConfig


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff of retried attempts; the number of retries is the judge's ``retries``, and
    the longest ``Retry-After`` waited for its ``retry_after_max_s`` (a longer ask fails
    the call)."""

    initial_s: float = 0.25
    max_s: float = 8.0
    jitter_s: float = 0.25


def call_deadline_s(config: JudgeConfig, retry: RetryPolicy) -> float:
    """The longest one call may take, slot wait and retries included.

    ``call_deadline_s`` of the judge config when it has one; else every attempt's
    ``timeout_s`` plus the longest backoff after each.
    """
    configured = getattr(config, "call_deadline_s", None)
    if configured is not None:
        return float(configured)
    return (config.timeout_s + retry.max_s) * (config.retries + 1)
