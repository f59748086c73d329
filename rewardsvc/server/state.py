"""Route dependencies that read what the app's lifespan put on ``app.state``.

They are coroutines although they never await: FastAPI runs a plain-function dependency
in a worker thread, a thread hop on every request for an attribute read.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request


async def running_service(request: Request) -> Any:
    """The running service (set by the app's lifespan); ``service.ServiceDep`` types it.
    Tests put a stand-in there (or override this dependency) to drive the routes alone."""
    service = getattr(request.app.state, "service", None)
    if service is None:
        raise RuntimeError("the app's lifespan has not run (use it as an ASGI app with lifespan)")
    return service
