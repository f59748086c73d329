"""What happens to a rubric's aggregated reward before it is returned: flag penalties, a
length penalty, rounding (the ``transforms`` block of a rubric file). Pure data with
validation; ``core.aggregate.apply_transforms`` applies it, and the scoring layer merges the
detectors' and the code graders' default flag penalties under a rubric's own
(``scoring.penalties``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator

from rewardsvc.core.base import StrictModel

FlagPenalties = dict[str, Annotated[float, Field(ge=0)]]
"""Per flag, the amount (>= 0) a raised flag subtracts."""


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
    flag_penalties: FlagPenalties = Field(
        default_factory=dict,
        description="Per flag, the amount (>= 0) subtracted from the reward when a detector "
        "or a grader criterion raises it, overriding that flag's default. Every flag costs by "
        "default (1.0 for attack shapes, among them a code grader's tamper_* flags, so a "
        "flagged attack never out-earns an honest answer; 0.5 for padding); 0 opts a flag "
        "out (e.g. fence_escape: 0, tamper_exit_hook: 0). dataset:<flag> flags cost nothing.",
    )

    @field_validator("flag_penalties")
    @classmethod
    def _check_flags(cls, penalties: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        return known_flags(penalties, info, "flag_names", "grader_flag_names")


_WHO = {"flag_names": "detectors", "grader_flag_names": "graders"}
"""Who raises the flags of each validation context key (for the refusal's message)."""


def known_flags(penalties: dict[str, float], info: ValidationInfo, *keys: str) -> dict[str, float]:
    """``penalties`` when every flag it names is known (a ``flag_penalties`` validator).

    The flag tables belong to the detectors, above the core: whoever validates (the
    library, the server) passes their names in the context, the text detectors' as
    ``flag_names``, the graders' as ``grader_flag_names``; ``keys`` say which tables a
    flag may come from (a rubric's: both, since its grader criteria raise the graders'
    flags; a recipe's: the graders')."""
    context = info.context or {}
    tables = {key: context[key] for key in keys if context.get(key) is not None}
    if not tables:
        return penalties
    for name in penalties:
        if not any(name in known for known in tables.values()):
            raised = "; ".join(f"the {_WHO[k]} raise {sorted(v)}" for k, v in tables.items())
            raise ValueError(
                f"{name}: unknown flag {name!r}, so this penalty would never apply; {raised}"
            )
    return penalties
