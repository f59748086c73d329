"""The exceptions of the client and of every trainer adapter: one tree, one base.

::

    RewardServiceError              anything the client or an adapter raises about the service
    ├── TransportError              no usable answer: connect, timeout, protocol (after retries)
    ├── RefusedError                the service answered with an error status and its kind
    │   └── BudgetExceededError     402 budget_exceeded: the run's cost budget is spent
    ├── ExhaustedError              a budget or a deadline ran out
    │   ├── BudgetExceededError     (also a RefusedError)
    │   └── DeadlineExceededError   an adapter's time budget ran out before a usable answer
    └── RewardsvcNoReward           an entry has no reward: the service answered it with
                                    ``reward: null`` and a status (judge_error, rejected)

``except RewardServiceError`` catches them all. Every exception carries ``status_code`` (the
HTTP status of the answer it comes from, None when there was none), ``error`` (the service's
error kind, also ``kind``), ``field`` and ``retry_after`` when the service said them. A
configuration error (``RefusedError`` with a 4xx other than 408/429: unknown rubric, bad key,
invalid options, budget) is raised by every adapter at once, since no retry can fix it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewardsvc_client.types import GroupResult, RewardResult


class RewardServiceError(Exception):
    """The base of every exception the client and its adapters raise about the service.

    ``status_code`` is None when no HTTP answer came back (connection refused, timeout).
    ``error`` is the service's machine-readable kind (e.g. ``unknown_rubric``,
    ``invalid_request``, ``unauthorized``) and ``field`` the offending field when it says.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        error: str | None = None,
        field: str | None = None,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.error = error
        self.field = field
        self.body = body
        self.retry_after = retry_after

    @property
    def kind(self) -> str | None:
        """The service's error kind (``error``), None when it gave none."""
        return self.error


class TransportError(RewardServiceError):
    """No usable answer after the client's retries: the service could not be reached
    (connection refused, DNS, TLS), a request timed out (``timeout`` seconds), or the answer
    was not the API's (an unreadable body, a wrong number of results). ``status_code`` is
    None when no HTTP answer came back; the httpx exception is the ``__cause__``."""


class RefusedError(RewardServiceError):
    """The service answered with an error status, after the client's retries of 429, 502,
    503 and 504: ``status_code`` (e.g. 401, 404, 413, 422, 429, 503), ``error`` (the kind
    from its ``{error, message, field}`` body: ``unknown_rubric``, ``invalid_request``,
    ``unauthorized``, ``overloaded``, ...), ``field`` and ``retry_after`` (seconds)."""


class ExhaustedError(RewardServiceError):
    """A budget or a deadline ran out: the run's cost budget on the service
    (``BudgetExceededError``) or an adapter's time budget (``DeadlineExceededError``)."""


class BudgetExceededError(RefusedError, ExhaustedError):
    """The run's cost reached its budget on the service (402, error ``budget_exceeded``):
    new scoring for the run is refused until the budget is raised. Never retried, and the
    trainer adapters always raise it (a configuration error, not a judge failure): training
    stops at the cap instead of learning from rewards that are not there."""


class DeadlineExceededError(ExhaustedError):
    """An adapter's time budget ran out before a usable answer came back: the service stayed
    saturated (429, or 503 with Retry-After) for the whole wait, or no request got through
    within the attempt's budget (AReaL). The last failure is the ``__cause__`` and its
    ``status_code`` and ``error`` are kept."""


class RewardsvcNoReward(RewardServiceError, RuntimeError):
    """An entry has no reward: the service answered it with ``reward: null`` and a
    ``status`` (``judge_error`` after the adapter's re-sends, or ``rejected``: the message
    says which field), or, status ``request_failed``, the adapter's request failed and it
    falls back per sample (the failure is logged). Raised by the adapters whose trainer
    takes "no reward" as an exception (Tinker, AReaL, verifiers 0.4) and carried in ART's
    group ``exceptions``; never a reward of 0."""

    def __init__(self, message: str, *, status: str | None = None) -> None:
        # ``status`` has a default so that the exception unpickles (AReaL runs the reward
        # function in a process pool): unpickling calls the class with the message alone.
        super().__init__(message)
        self.status = status


def no_reward(result: RewardResult | GroupResult | None) -> RewardsvcNoReward:
    """Why an entry has no reward (None: its request failed), as the exception an adapter
    raises or carries."""
    if result is None:
        message = "rewardsvc gave no reward (request failed)"
        return RewardsvcNoReward(message, status="request_failed")
    why = f"status {result.status}: {result.error}" if result.error else f"status {result.status}"
    return RewardsvcNoReward(f"rewardsvc gave no reward ({why})", status=result.status)


__all__ = [
    "BudgetExceededError",
    "DeadlineExceededError",
    "ExhaustedError",
    "RefusedError",
    "RewardServiceError",
    "RewardsvcNoReward",
    "TransportError",
    "no_reward",
]
