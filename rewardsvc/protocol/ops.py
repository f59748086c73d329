"""Wire models of the operations routes: ``GET /healthz``, ``GET /readyz`` and
``GET /readyz/detail``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Health(BaseModel):
    """Liveness: the process answers."""

    status: str = "ok"


class PublicReadiness(BaseModel):
    """Readiness as every probe may see it (``GET /readyz``, no key): ready or not, and why
    in general terms; which judges and rubrics are ``GET /readyz/detail``'s (a key)."""

    ready: bool
    message: str = Field(description="Why the service is not ready, or 'ready'.")


class Readiness(PublicReadiness):
    """Readiness in detail: rubrics are loaded and enough judges answer for every rubric."""

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
