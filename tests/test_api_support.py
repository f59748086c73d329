"""Helpers shared by the API, guard and compatibility tests (no tests here).

A small rubric library in a temporary folder, a judge pool pointing at fake judges
(``fakejudge.py``), the app served in-process (httpx + ASGI transport, lifespan run)
or by a real uvicorn server in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from rewardsvc.core.pool import JudgePool
from rewardsvc.library.registry import Registry
from rewardsvc.server.app import create_app
from rewardsvc.settings import Settings

TINY_RUBRIC = """\
# a two-criterion rubric scored by both judges
id: tiny
description: Test rubric.
criteria:
  - id: correct
    category: essential
    text: The response answers the question correctly.
  - id: polite
    category: optional
    text: The response is polite.
judges: [primary, secondary]
min_judges: 1
"""

STRICT_RUBRIC = """\
id: strict
description: Needs both judges.
criteria:
  - id: correct
    text: The response answers the question correctly.
judges: [primary, secondary]
min_judges: 2
"""

INLINE_RUBRIC: dict[str, Any] = {
    "id": "inline-one",
    "criteria": [{"id": "short", "text": "The response is short."}],
    "judges": ["primary"],
}

ITEM = {"id": "a", "prompt": "What is 2+2?", "completion": "4", "reference": "4"}


def write_library(folder: Path) -> Path:
    """A rubric folder with ``tiny`` (min_judges 1) and ``strict`` (min_judges 2)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.yaml").write_text(TINY_RUBRIC)
    (folder / "strict.yaml").write_text(STRICT_RUBRIC)
    return folder


def fake_pool_doc(
    primary_url: str, secondary_url: str, timeout_s: float = 5.0, **settings: Any
) -> dict[str, Any]:
    """The judge pool document binding ``primary`` (chat) and ``secondary`` (completion) to
    fake judges, without retries so that failure tests are fast; ``settings`` go to both
    judges."""

    def judge(url: str, api: str) -> dict[str, Any]:
        return {
            "model": "fake",
            "base_urls": [url],
            "api": api,
            "timeout_s": timeout_s,
            "retries": 0,
            "max_concurrency": 64,
            **settings,
        }

    return {
        "judges": {
            "primary": judge(primary_url, "chat"),
            "secondary": judge(secondary_url, "completion"),
        }
    }


def fake_pool(
    primary_url: str, secondary_url: str, timeout_s: float = 5.0, **settings: Any
) -> JudgePool:
    """:func:`fake_pool_doc` as a pool."""
    return JudgePool.model_validate(
        fake_pool_doc(primary_url, secondary_url, timeout_s, **settings)
    )


def settings_for(folder: Path, **overrides: Any) -> Settings:
    """Settings for a test app: no reload watcher, no env file, overrides applied."""
    values: dict[str, Any] = {"rubrics_dir": folder, "reload": False}
    values.update(overrides)
    return Settings(**values)


@contextlib.asynccontextmanager
async def serve_asgi(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan running, behind an in-process httpx client."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://rewardsvc.test", timeout=30
        ) as client:
            yield client


@contextlib.asynccontextmanager
async def app_client(
    settings: Settings, pool: JudgePool
) -> AsyncIterator[tuple[httpx.AsyncClient, FastAPI, Registry]]:
    """A fresh app (own cache and judges) over ``settings.rubrics_dir`` and ``pool``."""
    registry = Registry(Path(settings.rubrics_dir), pool)
    app = create_app(settings, registry=registry)
    async with serve_asgi(app) as client:
        yield client, app, registry


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def uvicorn_server(app: FastAPI) -> Iterator[str]:
    """The app served by a real uvicorn in a thread (its own event loop); yields its URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


async def wait_for(predicate: Any, timeout_s: float = 5.0) -> None:
    """Poll ``predicate()`` until it is true (for work finished off the event loop)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)
