"""Why a judge call failed: :class:`BackendError`, its kind, and how transport errors map to it.

Every failure carries a :data:`~rewardsvc.core.errors.JudgeErrorKind` (the typed
``error_kind`` of a failed verdict) and a ``label``, the word that starts the verdict's
``error`` text. The labels are those clients have read since the first release
(``server_error``, ``client_error``, ``other``), so existing clients keep working.

The kinds decide what happens next:

- retried (on the next base URL, with backoff): timeout, connection, rate_limited,
  http_5xx, unparseable (a 200 whose body is not the endpoint's JSON, e.g. an HTML page
  from a proxy);
- counted as a failure by the URL's circuit breaker: timeout, connection, http_5xx,
  unparseable, deadline (a judge that trickles bytes until the call's time is up);
- neither: http_4xx and context_overflow (the request is at fault, and would fail again
  anywhere), rate_limited (the server is alive, it asks us to slow down), unavailable
  (every breaker is open: nothing was sent).
"""

from __future__ import annotations

import email.utils
import re
import time
from typing import Any

import aiohttp

from rewardsvc.core.errors import JudgeErrorKind
from rewardsvc.judges.transport import HttpStatusError

RETRYABLE: frozenset[JudgeErrorKind] = frozenset(
    {"timeout", "connection", "rate_limited", "http_5xx", "unparseable"}
)
BREAKER_FAILURES: frozenset[JudgeErrorKind] = frozenset(
    {"timeout", "connection", "http_5xx", "unparseable", "deadline"}
)
# The first word of a failed verdict's ``error`` text, where it differs from the kind.
_LABELS: dict[JudgeErrorKind, str] = {
    "http_5xx": "server_error",
    "http_4xx": "client_error",
    "context_overflow": "client_error",
    "internal": "other",
}
# vLLM's 400 for a prompt that does not fit: "This model's maximum context length is 2048
# tokens. However, your prompt contains at least 2049 input tokens, ..." (vLLM 0.32); older
# and other servers say "... longer than the maximum model length ...".
_CONTEXT_OVERFLOW = re.compile(
    r"maximum context length|maximum model length|context length exceeded|"
    r"longer than the maximum|context window",
    re.IGNORECASE,
)


class BackendError(Exception):
    """A judge call that failed; ``kind`` says why, ``label`` starts its error text."""

    def __init__(
        self,
        kind: JudgeErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        url: str | None = None,
    ):
        super().__init__(message)
        self.kind: JudgeErrorKind = kind
        self.status = status
        self.retry_after = retry_after
        self.url = url

    @property
    def label(self) -> str:
        """The first word of the verdict's ``error`` text (``server_error`` for http_5xx)."""
        return _LABELS.get(self.kind, self.kind)

    @property
    def retryable(self) -> bool:
        """True for 429, 5xx, connection errors, timeouts and malformed 200s."""
        return self.kind in RETRYABLE

    @property
    def breaker_failure(self) -> bool:
        """True when the failure says the base URL is unhealthy."""
        return self.kind in BREAKER_FAILURES

    def __str__(self) -> str:
        return f"{self.label}: {self.args[0]}"


def parse_retry_after(headers: Any) -> float | None:
    """Seconds asked by ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def is_context_overflow(message: str) -> bool:
    """Whether a 400's message says the prompt does not fit the model's context."""
    return _CONTEXT_OVERFLOW.search(message) is not None


def classify(exc: BaseException, url: str) -> BackendError:
    """Map an exception of a judge call (``rewardsvc.judges.transport``) to a
    :class:`BackendError`: HTTP status, timeout or connection failure."""
    if isinstance(exc, BackendError):
        return exc
    if isinstance(exc, HttpStatusError):
        return _status_error(exc, url)
    # Before the connection errors: aiohttp's connect and read timeouts are both.
    if isinstance(exc, TimeoutError):
        return BackendError("timeout", f"no answer from {url} in time", url=url)
    # A refused or unresolvable connect, a connection reset or closed mid-call, a reply
    # cut short or not HTTP at all.
    if isinstance(exc, aiohttp.ClientError | OSError):
        return BackendError("connection", f"{url}: {type(exc).__name__}: {exc}", url=url)
    return BackendError("internal", f"{url}: {type(exc).__name__}: {exc}", url=url)


def _status_error(exc: HttpStatusError, url: str) -> BackendError:
    status = exc.status
    message = f"HTTP {status} from {url}: {exc.message}"
    if status == 429:
        retry_after = parse_retry_after(exc.headers)
        return BackendError(
            "rate_limited", message, status=status, retry_after=retry_after, url=url
        )
    if status >= 500:
        retry_after = parse_retry_after(exc.headers)
        return BackendError("http_5xx", message, status=status, retry_after=retry_after, url=url)
    if status == 400 and is_context_overflow(exc.message):
        return BackendError("context_overflow", message, status=status, url=url)
    return BackendError("http_4xx", message, status=status, url=url)
