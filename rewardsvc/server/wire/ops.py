"""Wire models of the operations routes: ``GET /healthz`` and ``GET /readyz``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Health(BaseModel):
    """Liveness: the process answers."""

    status: str = "ok"


class Readiness(BaseModel):
    """Readiness: rubrics are loaded and enough judges answer for every rubric."""

    ready: bool
    message: str = Field(description="Why the service is not ready, or 'ready'.")
    rubrics: int = Field(description="Rubrics served.")
    judges: dict[str, bool] = Field(description="Whether each pool judge answered its probe.")
    shared_state: Literal["none", "ok", "unreachable"] = Field(
        default="none",
        description="The shared state store (REWARDSVC_REDIS_URL): none when not configured; "
        "unreachable while the service scores on local state (it stays ready: every replica "
        "would otherwise leave together).",
    )
    shared_pending: int = Field(
        default=0, description="Writes queued for the shared state store while it is away."
    )
