"""Slow clients: connections that trickle their headers or body are closed by the server
within its deadlines, while ordinary requests keep being served."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from fakejudge import FakeJudge
from test_api_support import fake_pool, free_port, settings_for, write_library

from rewardsvc.library.registry import Registry
from rewardsvc.server.app import create_app
from rewardsvc.server.serve import protocol_with_deadlines

HEADER_TIMEOUT_S = 2.0
BODY_TIMEOUT_S = 3.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, int]]:
    with FakeJudge() as primary, FakeJudge() as secondary:
        settings = settings_for(write_library(tmp_path / "rubrics"))
        registry = Registry(tmp_path / "rubrics", fake_pool(primary.url, secondary.url))
        app = create_app(settings, registry=registry)
        port = free_port()
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            http=protocol_with_deadlines(HEADER_TIMEOUT_S, BODY_TIMEOUT_S),
            limit_concurrency=1000,
        )
        srv = uvicorn.Server(config)
        thread = threading.Thread(target=srv.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not srv.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        try:
            yield "127.0.0.1", port
        finally:
            srv.should_exit = True
            thread.join(timeout=20)


async def _trickle(host: str, port: int, head: bytes, drip: bytes, limit_s: float) -> float | None:
    """Send ``head``, then ``drip`` every 0.25 s; seconds until the server closed the
    connection, or None if it was still open after ``limit_s``."""
    reader, writer = await asyncio.open_connection(host, port)
    started = time.monotonic()
    writer.write(head)
    try:
        while time.monotonic() - started < limit_s:
            await writer.drain()
            try:
                data = await asyncio.wait_for(reader.read(4096), 0.25)
            except TimeoutError:
                writer.write(drip)
                continue
            if data == b"":
                return time.monotonic() - started
    except (ConnectionResetError, BrokenPipeError):
        return time.monotonic() - started
    finally:
        writer.close()
    return None


async def _normal_request(host: str, port: int) -> int:
    body = b'{"rubric": "tiny", "items": [{"prompt": "p", "completion": "c"}]}'
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(
        b"POST /v1/rewards HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    await writer.drain()
    reply = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    return int(reply.split(b" ", 2)[1])


async def test_slow_headers_and_bodies_are_cut_while_others_are_served(
    server: tuple[str, int],
) -> None:
    host, port = server
    limit = 15.0
    slow_headers = [
        _trickle(host, port, b"POST /v1/rewards HTTP/1.1\r\nHost: t\r\n", b"X-Slow: 1\r\n", limit)
        for _ in range(100)
    ]
    slow_bodies = [
        _trickle(
            host,
            port,
            b"POST /v1/rewards HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n",
            b"[",
            limit,
        )
        for _ in range(50)
    ]
    trickles = asyncio.gather(*slow_headers, *slow_bodies)
    await asyncio.sleep(0.5)
    served = [await _normal_request(host, port) for _ in range(3)]
    closed = await trickles
    assert served == [200, 200, 200]
    # Without the deadlines none would ever close: the drips keep every one of them alive
    # (uvicorn alone leaves them open; checked when this test was written).
    assert all(t is not None for t in closed), "a slow connection was never closed"
