"""The judge calls' HTTP client: JSON POSTs over one keep-alive aiohttp session per base URL.

A judge call is one small JSON POST and one small JSON reply, thousands of times per
training step, so this client does the least that call needs: it serializes the body
with ``json.dumps``, sends it on a pooled keep-alive connection and parses the reply with
``json.loads`` into plain dicts and lists. There are no SDK request or response models
(the ``openai`` client spent four times the CPU of this per call, mostly building them).
Which fields a reply must have is the business of
:class:`~rewardsvc.judges.shapes.ApiShape`, which reads them.

Failures are raised as they come: :class:`HttpStatusError` for a non-2xx answer (with the
server's message and headers, for ``Retry-After``; redirects are not followed, so a 3xx
is one too: a judge URL that redirects must not send the call, its key included, to
wherever it points), :class:`ReplyTooLarge` for a body past ``max_reply_bytes`` (read no
further, so a judge cannot fill the service's memory), aiohttp's connection errors,
``TimeoutError``. ``rewardsvc.judges.failures.classify`` turns them into typed
``BackendError`` kinds. Retries, deadlines and breakers are the backend's, not this
client's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp

# How much of a non-JSON error body is quoted in the error's message.
_SNIPPET_CHARS = 300
_JSON = "application/json"
# How long an idle connection is kept for reuse: under the 5 s after which vLLM's server
# (uvicorn) closes it, so that a call rarely goes out on a connection being closed.
_IDLE_S = 4.0
MAX_REPLY_BYTES = 16 * 1024 * 1024
"""The largest judge reply read: far above a real one (a reply with 20 logprobs for
each of 8,192 tokens is about 12 MB), far below what would hurt the service."""


class HttpStatusError(Exception):
    """A judge answered with a non-2xx HTTP status."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str]):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.headers = headers


class ReplyTooLarge(ValueError):
    """A judge's reply body was longer than the transport reads."""

    def __init__(self, limit: int):
        super().__init__(f"the reply is larger than {limit} bytes")
        self.limit = limit


TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    HttpStatusError,
    aiohttp.ClientError,
    OSError,
    TimeoutError,
    ValueError,
)
"""What a call through :class:`JudgeTransport` may raise when the judge or the network fails."""


def error_message(raw: bytes) -> str:
    """The server's own words from an error body.

    OpenAI-style ``{"error": {"message": ...}}``, vLLM's ``{"message": ...}`` (older
    versions) or FastAPI's ``{"detail": ...}``; else the start of the body as text.
    """
    text = raw.decode("utf-8", "replace")
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        inner = doc.get("error")
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        for key in ("message", "detail", "error"):
            if doc.get(key):
                return str(doc[key])
    text = " ".join(text.split())
    return text[:_SNIPPET_CHARS] + ("..." if len(text) > _SNIPPET_CHARS else "")


class JudgeTransport:
    """JSON over HTTP to one base URL of a judge, on a pool of keep-alive connections.

    ``max_connections`` bounds the pool (the judge's ``max_concurrency``, so calls never
    queue inside the HTTP layer); ``connect_s`` bounds each connect; no reply body is read
    past ``max_reply_bytes``. The total of each request is the caller's to bound (every
    caller does, within the judge's timeout): a timer per read would never fire first, and
    aiohttp sets it again at every chunk (measured: 2 % of a scoring request's
    instructions). The session is made on first use, inside the event loop that uses it.
    """

    def __init__(
        self,
        base_url: str,
        *,
        max_connections: int,
        connect_s: float,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ):
        self.base_url = base_url.rstrip("/")
        # The server root: vLLM mounts its pooling routes (/classify, /pooling) there.
        self.root_url = self.base_url.removesuffix("/v1")
        self.max_reply_bytes = max_reply_bytes
        self._max_connections = max_connections
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_s)
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._max_connections,
                limit_per_host=0,
                keepalive_timeout=_IDLE_S,
            )
            # No cookie jar: judge replies never set state that later calls should send.
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                cookie_jar=aiohttp.DummyCookieJar(),
                skip_auto_headers=("User-Agent",),
            )
        return self._session

    async def post(
        self,
        path: str,
        body: Mapping[str, Any],
        authorization: str,
        headers_seen: Callable[[int, Mapping[str, str]], None] | None = None,
        *,
        from_root: bool = False,
    ) -> Any:
        """POST ``body`` as JSON to ``base_url + path`` (``from_root``: to the server root,
        the base URL without its ``/v1``, where vLLM mounts its pooling routes
        ``/classify`` and ``/pooling``); the reply's JSON value.

        A 2xx reply that is not JSON comes back as its text, for the caller to refuse
        with a quote of it. Raises :class:`HttpStatusError` for any other status.
        ``headers_seen`` gets every reply's status and headers (a hosted judge's rate
        limits), before anything is raised.
        """
        url = (self.root_url if from_root else self.base_url) + path
        # ASCII-escaped: a lone surrogate in untrusted text must not fail the encoding.
        data = json.dumps(body).encode()
        headers = {"Content-Type": _JSON, "Accept": _JSON, "Authorization": authorization}
        session = self._open()
        async with session.post(url, data=data, headers=headers, allow_redirects=False) as reply:
            raw = await self._body(reply)
            status = reply.status
            if headers_seen is not None:
                headers_seen(status, reply.headers)
            if not 200 <= status < 300:
                raise HttpStatusError(status, error_message(raw), reply.headers)
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    async def get(self, path: str, authorization: str) -> Any:
        """GET ``base_url + path``; the reply's JSON value (raises as :meth:`post`)."""
        headers = {"Accept": _JSON, "Authorization": authorization}
        session = self._open()
        url = self.base_url + path
        async with session.get(url, headers=headers, allow_redirects=False) as reply:
            raw = await self._body(reply)
            if not 200 <= reply.status < 300:
                raise HttpStatusError(reply.status, error_message(raw), reply.headers)
        return json.loads(raw)

    async def _body(self, reply: aiohttp.ClientResponse) -> bytes:
        """The reply's body (decompressed), refused as soon as it passes the bound."""
        limit = self.max_reply_bytes
        length = reply.content_length
        if length is not None:
            if length > limit:
                raise ReplyTooLarge(limit)
            if "Content-Encoding" not in reply.headers:
                # As long as it says (aiohttp reads no further): read at once, as every
                # judge reply of vLLM is.
                return await reply.read()
        chunks: list[bytes] = []
        size = 0
        async for chunk in reply.content.iter_any():
            size += len(chunk)
            if size > limit:
                raise ReplyTooLarge(limit)
            chunks.append(chunk)
        return b"".join(chunks)

    async def aclose(self) -> None:
        """Close the connection pool (a later call opens a new one)."""
        if self._session is not None:
            await self._session.close()
            self._session = None
