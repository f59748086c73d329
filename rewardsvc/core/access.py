"""Scoped API keys: the runs and rubrics one key may read and write, and how many runs it
may create. Pure models; the server enforces them (``rewardsvc.server.access``)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, SecretStr, field_validator

from rewardsvc.core.base import StrictModel

Patterns = list[str] | None


def matches(patterns: Sequence[str] | None, name: str) -> bool:
    """True when ``name`` is one of ``patterns`` or starts with one ending in ``*``; None
    (no restriction) matches every name."""
    if patterns is None:
        return True
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in patterns)


class KeyScope(StrictModel):
    """One scoped API key. A field left out does not restrict; a key given only in
    ``api_keys`` is unrestricted (the single-tenant default)."""

    key: SecretStr = Field(description="The key, sent as 'Authorization: Bearer KEY'.")
    name: str = Field(
        min_length=1,
        max_length=64,
        description="Names the key in refusals and logs (the key itself never is).",
    )
    runs: Patterns = Field(
        default=None,
        description="Run names this key may write to and read in the monitor: exact names, "
        "or prefixes ending in '*' (e.g. 'team-a-*'); a request without a run writes to "
        "'default'.",
    )
    rubrics: Patterns = Field(
        default=None,
        description="Rubric, recipe and routing-table ids this key may score with and read, "
        "exact or prefixes ending in '*'; inline rubrics are named 'inline:<id>@<version>' "
        "(allow them with 'inline:*'), and so is the rubric an item's own criteria make "
        "from the request's rubric: they need the same right ('inline:*', or "
        "'inline:<rubric id>@*').",
    )
    max_runs: int | None = Field(
        default=None,
        ge=1,
        description="Most runs this key may have in the monitor at once (counted by each "
        "replica); writing to one more is refused until one of them expires or is evicted.",
    )

    @field_validator("key")
    @classmethod
    def _non_empty(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("runs", "rubrics")
    @classmethod
    def _patterns(cls, value: Patterns) -> Patterns:
        if value is not None and any(not p or p.count("*") > p.endswith("*") for p in value):
            raise ValueError("each entry is a name, or a prefix followed by one final '*'")
        return value

    def allows_run(self, run: str) -> bool:
        """True when this key may write to and read the run ``run``."""
        return matches(self.runs, run)

    def allows_rubric(self, rubric: str) -> bool:
        """True when this key may score with and read ``rubric``."""
        return matches(self.rubrics, rubric)
