"""Fault rigs for the invariant test (no tests here): the app served on loopback with its
event loop reachable from the test, and a TCP proxy that makes a Redis slow.

:class:`ServedApp` runs the app under a real uvicorn in a thread whose event loop the test
holds, so that trainer adapters reach it by URL and the test can run the service's own
coroutines (``drain``) on the loop that serves it. :class:`DelayProxy` forwards TCP
connections to an upstream (a real ``redis-server``) and holds every chunk, both ways, for
``delay_s``: Redis still answers every command, only late.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import uvicorn
from fastapi import FastAPI
from test_api_support import free_port

T = TypeVar("T")


class ServedApp:
    """``with ServedApp(app) as served: served.url``; ``served.run(coro)`` runs a coroutine
    on the serving loop and returns its result."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.server.serve())

    def __enter__(self) -> ServedApp:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)

    @property
    def service(self) -> Any:
        """The running ``rewardsvc.server.service.Service``."""
        return self.app.state.service

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float = 60.0) -> T:
        """``coro``'s result, run on the serving loop."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)


class DelayProxy:
    """A loopback TCP proxy to ``127.0.0.1:upstream_port`` that delays every chunk by
    ``delay_s`` in both directions (a slow, not a dead, server)."""

    def __init__(self, upstream_port: int, delay_s: float) -> None:
        self.upstream_port = upstream_port
        self.delay_s = delay_s
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        """The ``redis://`` URL through the proxy."""
        return f"redis://127.0.0.1:{self.port}/0"

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while chunk := await reader.read(65536):
                await asyncio.sleep(self.delay_s)
                writer.write(chunk)
                await writer.drain()
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, "127.0.0.1", self.port)
        self._started.set()
        async with server:
            await self._stop.wait()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main())

    def __enter__(self) -> DelayProxy:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("delay proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)
