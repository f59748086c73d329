"""Serving the app with uvicorn, hardened for hostile and slow clients and for shutdown.

uvicorn has no deadline for a request's headers or body: a client that connects and then
trickles bytes holds a connection forever. :class:`DeadlineProtocol` adds both deadlines to
uvicorn's httptools protocol and closes the connection when one passes. The connection
count is bounded by uvicorn's own ``limit_concurrency`` (503 beyond it).

On SIGTERM, :class:`DrainingServer` keeps listening while the service drains: new scoring
requests get 503 with Retry-After (and ``/readyz`` 503, so a load balancer stops sending),
requests already accepted finish within ``shutdown_timeout_s``, then uvicorn stops and the
lifespan flushes the reward log.

With ``workers`` above one, uvicorn's supervisor spawns that many processes on one socket;
each builds its own app from the ``REWARDSVC_*`` environment (:func:`worker_app`), so each
is a replica with its own memory, kept one by the shared state in Redis. A worker stops on
SIGTERM with uvicorn's graceful shutdown: the requests it accepted finish within
``shutdown_timeout_s``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.supervisors import Multiprocess

from rewardsvc.settings import Settings

log = logging.getLogger(__name__)


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol with deadlines for receiving headers and body.

    The header deadline runs from the connection (or the end of the previous request on a
    kept-alive connection) to the end of the headers; the body deadline from the end of the
    headers to the end of the body. A connection that misses one is closed.
    """

    header_timeout_s = 10.0
    body_timeout_s = 30.0

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            log.info("closing a connection that was too slow to send its request")
            self.transport.close()

    def connection_made(  # type: ignore[override]  # a Transport, as in uvicorn's own
        self, transport: asyncio.Transport
    ) -> None:
        super().connection_made(transport)
        self._arm(self.header_timeout_s)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._deadline is None:
            self._arm(self.header_timeout_s)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._arm(self.body_timeout_s)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def protocol_with_deadlines(header_timeout_s: float, body_timeout_s: float) -> type:
    """A :class:`DeadlineProtocol` class with these deadlines."""
    return type(
        "RewardsvcHttpProtocol",
        (DeadlineProtocol,),
        {"header_timeout_s": header_timeout_s, "body_timeout_s": body_timeout_s},
    )


class DrainingServer(uvicorn.Server):
    """A uvicorn server that drains the service on SIGTERM before it stops (see module doc)."""

    def __init__(self, config: uvicorn.Config, app: FastAPI, shutdown_timeout_s: float):
        super().__init__(config)
        self.app = app
        self.shutdown_timeout_s = shutdown_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining = False

    async def serve(self, sockets: Any = None) -> None:
        """Serve until shut down (records the loop the signal handler hands work to)."""
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """First SIGTERM: drain, then exit. Anything else: uvicorn's own handling."""
        if sig == signal.SIGTERM and not self._draining and self._loop is not None:
            self._draining = True
            loop = self._loop
            loop.call_soon_threadsafe(lambda: loop.create_task(self._drain()))
            return
        super().handle_exit(sig, frame)

    async def _drain(self) -> None:
        service = getattr(self.app.state, "service", None)
        if service is not None:
            log.info("SIGTERM: draining (up to %.0f s)", self.shutdown_timeout_s)
            finished = await service.drain(self.shutdown_timeout_s)
            if not finished:
                log.warning("shutdown timeout passed with requests still running")
        self.should_exit = True


class WorkerProtocol(DeadlineProtocol):
    """The deadline protocol of worker processes. A class made at run time cannot be sent
    to a spawned worker: its deadlines are set from the settings when the worker builds
    its app."""


def worker_app() -> FastAPI:
    """The app of one worker process (uvicorn's factory), set up from ``REWARDSVC_*``."""
    from rewardsvc.server.app import create_app

    settings = Settings()
    WorkerProtocol.header_timeout_s = settings.header_timeout_s
    WorkerProtocol.body_timeout_s = settings.body_timeout_s
    return create_app(settings)


def serve_workers(settings: Settings) -> None:
    """Serve ``settings.workers`` processes of the app on one socket until SIGTERM or SIGINT.

    The workers read their settings from the environment: what the command line changed
    (rubrics folder, judge pool, reward log) is put there first.
    """
    os.environ["REWARDSVC_RUBRICS_DIR"] = str(settings.rubrics_dir)
    os.environ["REWARDSVC_JUDGE_POOL"] = str(settings.judge_pool)
    if settings.reward_log is not None:
        os.environ["REWARDSVC_REWARD_LOG"] = str(settings.reward_log)
    config = uvicorn.Config(
        f"{__name__}:worker_app",
        factory=True,
        workers=settings.workers,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
        http=f"{__name__}:WorkerProtocol",
        limit_concurrency=settings.max_connections,
        timeout_graceful_shutdown=int(settings.shutdown_timeout_s),
    )
    Multiprocess(config, sockets=[config.bind_socket()]).run()


def serve(app: FastAPI, settings: Settings) -> None:
    """Serve ``app`` on the settings' host and port until SIGTERM or SIGINT."""
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
        http=protocol_with_deadlines(settings.header_timeout_s, settings.body_timeout_s),
        limit_concurrency=settings.max_connections,
        # After draining, what is still running gets a moment to answer before it is cut.
        timeout_graceful_shutdown=5,
    )
    DrainingServer(config, app, settings.shutdown_timeout_s).run()
