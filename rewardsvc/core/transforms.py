"""What happens to a rubric's aggregated reward before it is returned: flag penalties, a
length penalty, rounding (the ``transforms`` block of a rubric file). Pure data with
validation; ``core.aggregate.apply_transforms`` applies it, and the scoring layer merges the
detectors' default flag penalties under a rubric's own (``scoring.penalties``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator

from rewardsvc.core.base import StrictModel


class LengthPenalty(StrictModel):
    """Subtract a penalty for completions longer than a budget (counted in whitespace tokens)."""

    budget_tokens: int = Field(gt=0, description="Completions up to this length are free.")
    per_token: float = Field(gt=0, description="Penalty per token over the budget.")
    max_penalty: float = Field(default=1.0, gt=0, le=1.0)


class Transforms(StrictModel):
    """Post-processing of the aggregated reward."""

    discretize: int | None = Field(
        default=None,
        ge=2,
        le=101,
        description="Round the reward to this many evenly spaced levels in [0, 1].",
    )
    length_penalty: LengthPenalty | None = None
    flag_penalties: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict,
        description="Per flag, the amount (>= 0) subtracted from the reward when a detector "
        "raises it, overriding that flag's default. Every detector's flag costs by default "
        "(1.0 for attack shapes, so a flagged attack never out-earns an honest answer; 0.5 "
        "for padding); 0 opts a flag out (e.g. fence_escape: 0). dataset:<flag> flags cost "
        "nothing.",
    )

    @field_validator("flag_penalties")
    @classmethod
    def _check_flags(cls, penalties: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        # The flag table belongs to the detectors, above the core: whoever validates
        # (the library, the server) passes its names in the context.
        known = (info.context or {}).get("flag_names")
        if known is None:
            return penalties
        for name in penalties:
            if name not in known:
                raise ValueError(
                    f"{name}: unknown flag {name!r}, so this penalty would never apply; "
                    f"the detectors raise {sorted(known)}"
                )
        return penalties
