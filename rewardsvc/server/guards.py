"""Request guards: API-key auth, body-size and batch-size limits, and bounded in-flight work.

Auth and the body limit are pure ASGI middleware, so that an unauthenticated or
oversized request is refused before its body is read or parsed. The batch and
in-flight limits need the parsed request and are applied by the routes.
Every refusal is an ``ErrorDetail`` body, like all other errors of the API.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardsvc.server.errors import ApiError, error_response

# Routes that orchestrators probe without credentials.
PUBLIC_PATHS = frozenset({"/healthz", "/readyz"})


# ------------------------------------------------------------------ auth


def _digest(secret: str) -> bytes:
    # Comparing fixed-length digests keeps compare_digest constant-time even when
    # the presented token and the key differ in length.
    return hashlib.sha256(secret.encode()).digest()


class ApiKeyMiddleware:
    """Require ``Authorization: Bearer KEY`` (or HTTP Basic with KEY as the password) on
    every HTTP route except ``PUBLIC_PATHS``; others get 401 with ``WWW-Authenticate``.

    Basic auth exists for trainers whose reward client takes only a URL and sends no
    headers (OpenRLHF, slime): ``http://any:KEY@host:8000/openrlhf/rubric`` makes their
    HTTP client send the key as Basic credentials.
    """

    def __init__(self, app: ASGIApp, keys: Iterable[str], public: Iterable[str] = PUBLIC_PATHS):
        self.app = app
        self._keys = [_digest(k) for k in keys]
        if not self._keys:
            raise ValueError("ApiKeyMiddleware needs at least one key")
        self._public = frozenset(public)

    def matches(self, token: str) -> bool:
        """True when ``token`` is one of the keys (every key is compared, in constant time)."""
        presented = _digest(token)
        found = False
        for key in self._keys:
            found |= hmac.compare_digest(presented, key)
        return found

    def _token(self, scope: Scope) -> str | None:
        for name, value in scope.get("headers", []):
            if name != b"authorization":
                continue
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            credentials = credentials.strip()
            if scheme.lower() == "bearer":
                return credentials
            if scheme.lower() == "basic":
                try:
                    decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
                except (binascii.Error, UnicodeDecodeError):
                    return None
                user, _, password = decoded.partition(":")
                # http://KEY@host gives the key as user name with an empty password.
                return password or user
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._public:
            await self.app(scope, receive, send)
            return
        token = self._token(scope)
        if token is not None and self.matches(token):
            await self.app(scope, receive, send)
            return
        message = (
            "missing API key: send 'Authorization: Bearer <key>'"
            if token is None
            else "invalid API key"
        )
        response = error_response(
            401,
            "unauthorized",
            message,
            field="Authorization",
            headers={"WWW-Authenticate": 'Bearer realm="rewardsvc"'},
        )
        await response(scope, receive, send)


# ------------------------------------------------------------------ body size


class BodyTooLarge(ApiError):
    """Raised from ``receive`` when a body grows past the limit while being read."""

    def __init__(self, limit: int):
        super().__init__(
            413,
            "payload_too_large",
            f"request body is larger than max_body_bytes={limit}",
            field="max_body_bytes",
        )


class BodyLimitMiddleware:
    """Refuse request bodies larger than ``max_bytes`` with 413.

    A declared ``Content-Length`` over the limit is refused before anything is read;
    a chunked or understated body is cut off as soon as the bytes read pass the limit.
    """

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self) -> JSONResponse:
        exc = BodyTooLarge(self.max_bytes)
        return JSONResponse(exc.detail, status_code=exc.status_code)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await self._too_large()(scope, receive, send)
                    return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            # Normally the app's exception handlers turn it into a 413; this covers
            # a body read outside them.
            if not started:
                await self._too_large()(scope, receive, send)


# ------------------------------------------------------------------ batch size and in-flight work


def check_batch(count: int, max_items: int, field: str = "items") -> None:
    """413 when a request carries more than ``max_items`` items."""
    if count > max_items:
        raise ApiError(
            413,
            "too_many_items",
            f"{field} has {count} entries, more than max_items={max_items}; split the batch",
            field=field,
        )


class InflightLimiter:
    """Counts items being scored across all requests and refuses work beyond ``limit``.

    A refused request gets 429 with ``Retry-After`` at once, so overload shows up at
    the client (which retries or backs off) instead of as an unbounded queue inside
    the service. The counter lives on one event loop, so it needs no lock.
    """

    def __init__(self, limit: int, retry_after_s: int = 1):
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.current = 0

    def try_acquire(self, count: int) -> bool:
        """Take ``count`` slots if they are free; a single request larger than the whole
        limit is still admitted when nothing else is in flight, so it cannot starve."""
        if self.current + count > self.limit and self.current > 0:
            return False
        self.current += count
        return True

    def release(self, count: int) -> None:
        """Give back slots taken by ``try_acquire``."""
        self.current -= count

    @contextmanager
    def admit(self, count: int) -> Iterator[None]:
        """Hold ``count`` slots for the duration of the block, or raise a 429 ApiError."""
        if not self.try_acquire(count):
            raise ApiError(
                429,
                "overloaded",
                f"{self.current} items are being scored and {count} more would exceed "
                f"max_inflight={self.limit}; retry after {self.retry_after_s} s",
                field="max_inflight",
                headers={"Retry-After": str(self.retry_after_s)},
            )
        try:
            yield
        finally:
            self.release(count)
