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

A reply that came back but cannot be read is a :class:`ReplyFailed`, which keeps what
the call cost: ``unparseable`` (no scale answer), or ``reasoning_budget`` (a reasoning
judge that did not end its reasoning within its budget, ``rewardsvc.judges.reasoning``).
Neither is retried by the backend: the judge answered, and would think the same again.

A redirect (not followed) and a reply past the transport's size bound are unparseable: the
URL did not answer as a judge endpoint.

The ``error`` text of a verdict reaches clients, so a failure's message never holds a base
URL or a connection's address (they are internal): it says what went wrong, and the
verdict's judge name says where. The URL and the underlying error (``detail``) go to the
service's log, through :class:`FailureLog`.

A failed call is a verdict with no score and its kind (:func:`failed_verdict`);
:func:`failure_of` reads one from what a call raised.
"""

from __future__ import annotations

import email.utils
import logging
import re
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from rewardsvc.core.errors import JudgeErrorKind
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.transport import HttpStatusError, ReplyTooLarge

log = logging.getLogger(__name__)

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


class ReplyFailed(Exception):
    """A reply that did not parse, with what it cost; ``kind`` is its verdict's error kind."""

    kind: JudgeErrorKind = "unparseable"

    def __init__(self, message: str, raw: str, prompt_tokens: int, completion_tokens: int):
        super().__init__(message)
        self.message = message
        self.raw = raw
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


class BackendError(Exception):
    """A judge call that failed; ``kind`` says why, ``label`` starts its error text.

    ``message`` (the first argument) is shown to clients and holds no URL; ``url`` and
    ``detail`` (the underlying error's own text) are for the service's log.
    """

    def __init__(
        self,
        kind: JudgeErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        url: str | None = None,
        detail: str | None = None,
    ):
        super().__init__(message)
        self.kind: JudgeErrorKind = kind
        self.status = status
        self.retry_after = retry_after
        self.url = url
        self.detail = detail

    @property
    def log_text(self) -> str:
        """The failure as the service's log shows it: message, URL and detail."""
        where = [part for part in (self.url, self.detail) if part]
        return f"{self}" + (f" [{'; '.join(where)}]" if where else "")

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
    if isinstance(exc, ReplyTooLarge):
        return BackendError("unparseable", str(exc), url=url)
    # Before the connection errors: aiohttp's connect and read timeouts are both.
    if isinstance(exc, TimeoutError):
        return BackendError("timeout", "no answer in time", url=url, detail=str(exc) or None)
    # A refused or unresolvable connect, a connection reset or closed mid-call, a reply
    # cut short or not HTTP at all. Their text names the address: the log's, not the client's.
    name = type(exc).__name__
    if isinstance(exc, aiohttp.ClientError | OSError):
        return BackendError("connection", f"connection failed ({name})", url=url, detail=str(exc))
    return BackendError("internal", name, url=url, detail=str(exc))


def _status_error(exc: HttpStatusError, url: str) -> BackendError:
    status = exc.status
    message = f"HTTP {status}: {exc.message}"
    if 300 <= status < 400:
        # Not followed (the transport never does): where it points is the log's.
        return BackendError(
            "unparseable",
            f"HTTP {status}: a redirect, not followed (a judge URL must answer itself)",
            status=status,
            url=url,
            detail=f"Location: {exc.headers.get('Location')}",
        )
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


def failed_verdict(
    kind: JudgeErrorKind,
    message: str,
    latency_s: float,
    raw: str = "",
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    label: str | None = None,
) -> Verdict:
    """A failed call's verdict: ``error`` is ``"<label or kind>: <message>"``, with what
    the call cost (its reply, tokens and latency)."""
    return Verdict(
        score=None,
        error=f"{label or kind}: {message}",
        error_kind=kind,
        raw=raw,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        latency_ms=latency_s * 1000.0,
    )


def failure_of(exc: Exception, latency_s: float) -> Verdict:
    """The failed verdict of a call that raised ``exc`` after ``latency_s``."""
    if isinstance(exc, BackendError):
        return failed_verdict(exc.kind, exc.args[0], latency_s, label=exc.label)
    if isinstance(exc, ReplyFailed):
        return failed_verdict(
            exc.kind, exc.message, latency_s, exc.raw, exc.prompt_tokens, exc.completion_tokens
        )
    # A bug or an unexpected response shape: still no score.
    return failed_verdict("internal", f"{type(exc).__name__}: {exc}", latency_s)


class FailureLog:
    """Logs failed judge attempts with their URL and cause: the first of each (judge, URL,
    kind) at once, then at most one every ``interval_s`` with the count of those between,
    so that an outage of thousands of calls a second is a few lines, not a flood."""

    def __init__(self, interval_s: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self.interval_s = interval_s
        self._clock = clock
        # (judge, url, kind) -> (when last logged, failures since then not logged)
        self._seen: dict[tuple[str, str | None, str], tuple[float, int]] = {}

    def note(self, judge: str, error: BackendError) -> None:
        """Record one failure of ``judge``; log it unless one like it was just logged."""
        key = (judge, error.url, error.kind)
        now = self._clock()
        held = self._seen.get(key)
        if held is not None and now - held[0] < self.interval_s:
            self._seen[key] = (held[0], held[1] + 1)
            return
        more = f" (and {held[1]} more since the last report)" if held and held[1] else ""
        self._seen[key] = (now, 0)
        log.warning("judge %r: %s%s", judge, error.log_text, more)
