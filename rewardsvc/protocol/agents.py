"""Wire models of the agent trainer routes: NeMo Gym's resources-server verify
(``POST /nemo-gym/{rubric}/verify``), in NeMo Gym's own shapes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ResponsesCreateParams(BaseModel):
    """The part of NeMo Gym's ``responses_create_params`` read here; the rest is echoed."""

    model_config = ConfigDict(extra="allow")

    input: str | list[dict[str, Any]] = Field(
        description="The task: a string, or Responses-API input items (messages, ...)."
    )
    instructions: str | None = Field(default=None, description="A system message.")


class ResponseOut(BaseModel):
    """The part of NeMo Gym's ``response`` read here (its ``output`` items)."""

    model_config = ConfigDict(extra="allow")

    output: list[dict[str, Any]] = Field(
        description="The policy's Responses-API items: messages, function calls, function "
        "call outputs, reasoning."
    )


class NemoGymVerifyRequest(BaseModel):
    """NeMo Gym's verify request (``BaseVerifyRequest``); other fields are echoed back."""

    model_config = ConfigDict(extra="allow")

    responses_create_params: ResponsesCreateParams
    response: ResponseOut


class NemoGymVerifyResponse(NemoGymVerifyRequest):
    """The request body plus the reward, as NeMo Gym's ``BaseVerifyResponse``; a lone
    surrogate in an echoed string comes back as its escape, the text ``\\ud800``."""

    reward: float = Field(description="The reward in [0, 1]; 0.0 on a masked failure.")
    mask_sample: bool = Field(
        default=False, description="The reward measures nothing (judges failed): mask it."
    )
    failure_kind: str | None = Field(
        default=None,
        description="judge_failed or verifier_error (an item the rubric cannot score, text "
        "the judges cannot be sent among them), when masked.",
    )
    failure_reason: str | None = Field(
        default=None,
        description="Why the sample is masked (the field at fault, for a verifier_error) "
        "or its reward degraded.",
    )
