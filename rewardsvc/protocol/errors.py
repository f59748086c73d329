"""The error body of every route: what was wrong and where."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ErrorDetail(BaseModel):
    """A 4xx/5xx body: what was wrong and where."""

    error: str = Field(description="Machine-readable kind, e.g. invalid_request, unknown_rubric.")
    message: str
    field: str | None = Field(default=None, description="The offending field, e.g. items[3].")
