"""Wire models of the trainer compatibility routes: ``POST /openrlhf/{rubric}`` (OpenRLHF's
remote reward model protocol) and ``POST /slime/{rubric}`` (slime's ``remote_rm``).

These are the trainers' own shapes, not rewardsvc's: a field is here because the trainer
sends or reads it (see ``rewardsvc.server.compat`` for each protocol).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rewardsvc.protocol.items import Message
from rewardsvc.protocol.rewards import RewardResult

# ------------------------------------------------------------------ OpenRLHF


class OpenRLHFRequest(BaseModel):
    """The body OpenRLHF's remote reward client posts."""

    model_config = ConfigDict(extra="ignore")

    query: list[str] = Field(
        description="Chat-templated prompt followed by the response, special tokens included."
    )
    prompts: list[str] | None = Field(
        default=None, description="The chat-templated prompts, one per query."
    )
    labels: list[Any] | None = Field(
        default=None,
        description="Dataset labels (reference answers), one per query: text, chat messages "
        "(read as an item's reference, images included) or another value (sent as JSON).",
    )


class OpenRLHFExtraLogs(BaseModel):
    """Per-sample numbers OpenRLHF logs; the same keys in every reply, and the same keys as
    the client package's python-file hook (``rewardsvc_client.openrlhf``)."""

    rewardsvc_valid: list[float] = Field(description="1 when the reward is real, 0 when flagged.")
    rewardsvc_degraded: list[float] = Field(description="1 when fewer than all judges scored.")
    rewardsvc_judge_error: list[float] = Field(
        description="1 when judges failed for every try (the reward is a flagged 0.0)."
    )
    rewardsvc_rejected: list[float] = Field(
        description="1 when the sample was malformed (the reward is a flagged 0.0)."
    )
    rewardsvc_request_failed: list[float] = Field(
        description="Always 0 here (the python-file hook sets 1 when it cannot reach the service)."
    )
    rewardsvc_uncertainty: list[float] = Field(
        description="Uncertainty of each reward (0 if none)."
    )
    rewardsvc_flagged: list[float] = Field(description="1 when a detector flagged the response.")

    @classmethod
    def of(cls, results: list[RewardResult]) -> OpenRLHFExtraLogs:
        """The numbers of these results, in order."""
        return cls(
            rewardsvc_valid=[float(r.reward is not None) for r in results],
            rewardsvc_degraded=[float(r.status == "degraded") for r in results],
            rewardsvc_judge_error=[float(r.status == "judge_error") for r in results],
            rewardsvc_rejected=[float(r.status == "rejected") for r in results],
            rewardsvc_request_failed=[0.0 for _ in results],
            rewardsvc_uncertainty=[float(r.uncertainty or 0.0) for r in results],
            rewardsvc_flagged=[float(bool(r.flags)) for r in results],
        )


class OpenRLHFResponse(BaseModel):
    """The reply OpenRLHF reads: lists as long as ``query``."""

    rewards: list[float] = Field(description="The reward of each sample, in [0, 1].")
    scores: list[float] = Field(description="The same values (OpenRLHF's dynamic filtering).")
    extra_logs: OpenRLHFExtraLogs


# ------------------------------------------------------------------ slime


class SlimeRequest(BaseModel):
    """The body slime's ``remote_rm`` posts for one sample."""

    model_config = ConfigDict(extra="ignore")

    prompt: str | list[Message] = Field(
        default="", description="The prompt: a string or a chat message list."
    )
    response: str = Field(description="The policy's response.")
    label: Any = Field(
        default=None,
        description="The sample's label (reference answer): text, chat messages (read as an "
        "item's reference, images included) or another value (sent as JSON).",
    )


class SlimeReward(BaseModel):
    """The reply with ``?format=dict`` (read in slime with ``--reward-key reward``)."""

    reward: float | None = Field(
        default=None,
        description="The reward; absent when valid is false (judges failed for every try), "
        "so that slime's --reward-key lookup fails instead of training on a made-up value.",
    )
    valid: bool = Field(description="False when the reward could not be produced.")
    uncertainty: float = Field(description="Uncertainty of the reward (0 when unknown).")
    status: Literal["ok", "degraded", "judge_error"]
    flags: list[str]
    cached: bool
    error: str | None = Field(default=None, description="Why there is no reward (when absent).")
