"""Route dependencies that read what the app's lifespan put on ``app.state``.

They are coroutines although they never await: FastAPI runs a plain-function dependency
in a worker thread, a thread hop on every request for an attribute read.
"""

from __future__ import annotations

from typing import Any, Protocol

from fastapi import Request

from rewardsvc.protocol.rewards import RewardOptions, RewardResponse


class RubricScorer(Protocol):
    """What the trainer-protocol routes (OpenRLHF, slime, NeMo Gym) need of the service:
    a batch scored against a library rubric (``Service`` provides it)."""

    async def score_rubric(
        self,
        rubric_id: str,
        items: list[dict[str, Any]],
        options: RewardOptions,
        field_name: str = "items",
        *,
        run: str | None = None,
    ) -> RewardResponse:
        """Score ``items``; ``field_name`` names the items' field in the caller's protocol."""
        ...


async def running_service(request: Request) -> Any:
    """The running service (set by the app's lifespan). Each route module types it as the
    protocol it needs of the service."""
    service = getattr(request.app.state, "service", None)
    if service is None:
        raise RuntimeError("the app's lifespan has not run (use it as an ASGI app with lifespan)")
    return service
