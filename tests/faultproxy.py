"""A fault-injection proxy for putting between the service and a real judge (no tests here).

:class:`FaultProxy` listens on a local port and forwards each HTTP/1.1 request to an
upstream OpenAI-compatible server (a real vLLM judge), or injects a fault instead. The mode
is switched at run time from the test (thread-safe), also in the middle of a batch:

- ``pass``: forward the request and relay the upstream's answer. A call in flight when a
  fault is switched on gets that fault instead of its answer (the judge went bad mid-call).
- ``drop``: abort every open connection at once (a judge killed mid-batch: the calls in
  flight see a reset) and reset each new connection as soon as it arrives.
- ``refuse``: stop listening, so that connections are refused (a judge process that is
  gone); switching to another mode listens again on the same port.
- ``stall``: read the request and answer nothing until the client hangs up.
- ``trickle``: forward, then send the upstream's answer one byte every ``trickle_s``
  (a judge or middlebox that keeps a call alive without finishing it).
- ``garbage``: answer ``200`` with an HTML page (a misrouted ingress).
- ``overflow``: forward the request with its prompt made longer than any context, so that
  the real judge answers its own context-overflow ``400`` (vLLM's wording, not ours).
- ``storm``: answer ``503`` with a vLLM-style error body and ``Retry-After``.

The proxy runs its own event loop in a daemon thread, so it works beside sync and async
tests and beside a service running in another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import yaml

MODES = ("pass", "drop", "refuse", "stall", "trickle", "garbage", "overflow", "storm")

# Far beyond the 2048-token context of the CPU judges: vLLM refuses it before any work.
_OVERFLOW_TEXT = "overflow " * 6000

_GARBAGE_PAGE = (
    b"<!DOCTYPE html><html><head><title>Welcome</title></head>"
    b"<body><h1>It works!</h1><p>This is the default page of the web server.</p></body></html>"
)

_STORM_BODY = json.dumps(
    {
        "error": {
            "message": "The server is overloaded; please retry later.",
            "type": "ServiceUnavailableError",
            "code": 503,
        }
    }
).encode()

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error"}


def _lengthen(body: bytes) -> bytes:
    """The request body with over-long text added to its prompt (chat or completion)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return body
    if isinstance(payload.get("prompt"), str):
        payload["prompt"] = _OVERFLOW_TEXT + payload["prompt"]
    messages = payload.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        last = messages[-1]
        last["content"] = _OVERFLOW_TEXT + str(last.get("content") or "")
    return json.dumps(payload).encode()


def _response_head(status: int, headers: list[tuple[str, str]], length: int) -> bytes:
    reason = _REASONS.get(status, "Service Unavailable" if status == 503 else "Status")
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{k}: {v}" for k, v in headers]
    lines += [f"content-length: {length}", "connection: keep-alive", "", ""]
    return "\r\n".join(lines).encode("latin-1")


class FaultProxy:
    """An HTTP proxy to ``upstream`` (e.g. ``http://127.0.0.1:8101``) with switchable faults.

    ``url`` is the proxy's base URL; ``seen`` counts requests per mode in force when they
    arrived, ``hits`` the requests and connections a fault was applied to (those in flight
    when it was switched on once the judge has answered them: see :meth:`settled`),
    ``aborted`` the connections reset by ``drop``/``refuse``, ``hung_up`` the stalled or
    trickled requests whose client gave up.
    """

    def __init__(self, upstream: str, trickle_s: float = 0.5):
        self.upstream = upstream.rstrip("/")
        self.trickle_s = trickle_s
        self.mode = "pass"
        self.seen: Counter[str] = Counter()
        self.aborted = 0
        self.hung_up = 0
        self.hits = 0
        self.forwarding = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._client: httpx.AsyncClient | None = None

    @property
    def url(self) -> str:
        """The proxy's base URL (without ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    def _call(self, coro: Any, timeout_s: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def start(self) -> FaultProxy:
        """Start the loop thread and listen on a free port."""
        self._thread.start()
        self._call(self._open())
        return self

    def close(self) -> None:
        """Stop listening, drop every connection and stop the loop thread."""
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_mode(self, mode: str) -> None:
        """Switch the fault now; ``drop`` also resets the connections open at this moment."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        self._call(self._switch(mode))

    async def settled(self, timeout_s: float = 120.0) -> None:
        """Wait (from the test's loop) until no request is with the judge: the calls a
        fault met in flight are counted in ``hits`` once the judge has answered them."""
        for _ in range(int(timeout_s / 0.1)):
            if self.forwarding == 0:
                return
            await asyncio.sleep(0.1)

    def total(self) -> int:
        """Requests received so far, in every mode."""
        return sum(self.seen.values())

    # ------------------------------------------------------------------ inside the loop

    async def _open(self) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient(base_url=self.upstream, timeout=120)
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close_listener(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def _abort_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
            self.aborted += 1
        self._writers.clear()

    async def _switch(self, mode: str) -> None:
        self.mode = mode
        if mode in ("drop", "refuse"):
            self._abort_all()
        if mode == "refuse":
            await self._close_listener()
        elif self._server is None:
            await self._open()

    async def _shutdown(self) -> None:
        await self._close_listener()
        self._abort_all()
        if self._client is not None:
            await self._client.aclose()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode in ("drop", "refuse"):
            writer.transport.abort()
            self.aborted += 1
            # A client opens a connection to send a call: the fault met that call.
            self.hits += 1
            return
        self._writers.add(writer)
        try:
            while await self._one_request(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Serve one request on a kept-alive connection; False when the connection ends."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        headers = {}
        for line in header_lines:
            if ":" in line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        mode = self.mode
        self.seen[mode] += 1
        # Counted on arrival, not once the judge has answered: a loaded judge may answer a
        # trickled call only after its client gave up and the test looked at the count.
        if mode != "pass":
            self.hits += 1
        answer = None
        if mode in ("pass", "trickle"):
            self.forwarding += 1
            try:
                answer = await self._forward(method, path, headers, body)
            except httpx.HTTPError:
                # The judge itself failed the call: the client sees the connection die.
                writer.transport.abort()
                return False
            finally:
                self.forwarding -= 1
            if mode == "pass" and self.mode != "pass":
                # A fault switched on while the judge worked hits this call's answer too.
                mode = self.mode
                self.hits += 1
        return await self._respond(mode, reader, writer, (method, path, headers, body), answer)

    async def _respond(
        self,
        mode: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        request: tuple[str, str, dict[str, str], bytes],
        answer: tuple[int, str, bytes] | None,
    ) -> bool:
        """Answer one request as ``mode`` says; False when the connection ends."""
        if mode in ("drop", "refuse"):
            writer.transport.abort()
            self.aborted += 1
            return False
        if mode == "stall":
            # Nothing is sent; the read ends when the client gives up and hangs up.
            await reader.read()
            self.hung_up += 1
            return False
        if mode == "garbage":
            answer = (200, "text/html", _GARBAGE_PAGE)
        elif mode == "storm":
            answer = (503, "application/json", _STORM_BODY)
        elif mode == "overflow" or answer is None:
            method, path, headers, body = request
            body = _lengthen(body) if mode == "overflow" else body
            try:
                answer = await self._forward(method, path, headers, body)
            except httpx.HTTPError:
                writer.transport.abort()
                return False
        status, content_type, content = answer
        extra = [("retry-after", "1")] if status == 503 else []
        out = _response_head(status, [("content-type", content_type), *extra], len(content))
        out += content
        if mode != "trickle":
            writer.write(out)
            await writer.drain()
            return True
        try:
            for byte in out:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(self.trickle_s)
        except ConnectionError:
            self.hung_up += 1
            return False
        return True

    async def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, str, bytes]:
        assert self._client is not None
        keep = {k: v for k, v in headers.items() if k in ("content-type", "authorization")}
        reply = await self._client.request(method, path, headers=keep, content=body)
        return (
            reply.status_code,
            reply.headers.get("content-type", "application/json"),
            reply.content,
        )


def proxied_pool(pool_file: Path, proxies: dict[str, FaultProxy], **judge: Any) -> dict[str, Any]:
    """The judge pool of ``pool_file`` with each named judge's ``base_urls`` pointing at its
    proxy and ``judge`` settings (e.g. ``timeout_s``, ``retries``) applied to every judge."""
    pool = yaml.safe_load(pool_file.read_text())
    for name, config in pool["judges"].items():
        if name in proxies:
            config["base_urls"] = [f"{proxies[name].url}/v1"]
        config.update(judge)
    return pool  # type: ignore[no-any-return]
