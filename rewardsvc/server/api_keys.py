"""API-key auth, as pure ASGI middleware: an unauthenticated request is refused (401, an
``ErrorDetail`` body like all other errors of the API) before its body is read or parsed.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from rewardsvc.core.errors import ErrorKind, Refused
from rewardsvc.server.access import GRANT, HOLDER, Keyring
from rewardsvc.server.errors import FormOf, form_at

# Routes that orchestrators probe without credentials.
PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/dashboard"})
# The dashboard's own script and styles: the page asks for the key and sends it to the API.
PUBLIC_PREFIXES = ("/dashboard/assets/",)
# Operators' routes: they show every run and rubric, so a scoped key gets 403 there.
OPERATOR_PATHS = frozenset({"/metrics"})


class ApiKeyMiddleware:
    """Require ``Authorization: Bearer KEY`` (or HTTP Basic with KEY as the password, or
    ``X-API-Key: KEY`` as the ``openreward`` client sends it) on every HTTP route except
    ``PUBLIC_PATHS``; others get 401 with ``WWW-Authenticate``.

    Basic auth exists for trainers whose reward client takes only a URL and sends no
    headers (OpenRLHF, slime): ``http://any:KEY@host:8000/openrlhf/rubric`` makes their
    HTTP client send the key as Basic credentials.

    The ``keyring`` holds the keys; a scoped key's
    :class:`~rewardsvc.server.access.Grant` is :data:`~rewardsvc.server.access.GRANT` while
    its request is served, and it gets 403 on ``OPERATOR_PATHS``.
    """

    def __init__(
        self,
        app: ASGIApp,
        keyring: Keyring,
        public: Iterable[str] = PUBLIC_PATHS,
        forms: FormOf = form_at,
    ):
        self.app = app
        self.keyring = keyring
        self._public = frozenset(public)
        self.forms = forms

    def _token(self, scope: Scope) -> str | None:
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        for name, value in headers:
            if name == b"x-api-key":
                # The openreward (ORS) client sends its key so, and no other header.
                return value.decode("latin-1").strip()
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
        path = scope.get("path", "")
        if scope["type"] != "http" or path in self._public or path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
            return
        token = self._token(scope)
        holder, grant = self.keyring.find(token) if token is not None else (None, None)
        if holder is not None and grant is not None and path in OPERATOR_PATHS:
            message = f"API key {grant.scope.name!r} is scoped; {path} is not"
            refusal = Refused(message, kind=ErrorKind.FORBIDDEN)
            await self.forms(scope).response(refusal)(scope, receive, send)
            return
        if holder is not None:
            reset, reset_holder = GRANT.set(grant), HOLDER.set(holder)
            try:
                await self.app(scope, receive, send)
            finally:
                GRANT.reset(reset)
                HOLDER.reset(reset_holder)
            return
        message = (
            "missing API key: send 'Authorization: Bearer <key>'"
            if token is None
            else "invalid API key"
        )
        refusal = Refused(message, kind=ErrorKind.UNAUTHORIZED, field="Authorization")
        await self.forms(scope).response(refusal)(scope, receive, send)
