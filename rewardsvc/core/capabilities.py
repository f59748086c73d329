"""What a judge's endpoint can do: the ``capabilities`` of a judge pool entry.

vLLM serves every capability of a text model; hosted APIs differ, and only a
vision-language model sees images. A rubric naming a judge whose method needs what its
endpoint cannot do is refused (``rewardsvc.library.registry``), and so is a rubric whose
items carry images when none of its judges sees them (``Rubric.media``).
"""

from __future__ import annotations

from pydantic import Field

from rewardsvc.core.base import StrictModel
from rewardsvc.core.scoring_methods import Capability

DEFAULT_IMAGE_TOKENS = 1
"""Tokens counted per image in the context check when the pool gives none: every model
family spends at least one, and the check refuses only prompts that cannot fit."""


class Capabilities(StrictModel):
    """What the judge's endpoint can do (vLLM does all of it but vision, which takes a
    vision-language model; hosted APIs differ)."""

    top_logprobs: bool = Field(
        default=True,
        description="Returns top_logprobs (methods logprob and batched read them).",
    )
    structured_outputs: bool = Field(
        default=True,
        description="Constrains output (structured_outputs, response_format json_schema): "
        "methods logprob, batched and structured send them.",
    )
    vision: bool = Field(
        default=False,
        description="Sees images (a vision-language model on the chat API): an item's "
        "images reach it as image_url content parts, in their places in the text. A judge "
        "without it reads a placeholder where each image stood, and its per-judge result "
        "says without_images: true. Part of the verdict cache's identity.",
    )
    image_tokens: int = Field(
        default=DEFAULT_IMAGE_TOKENS,
        ge=1,
        le=65536,
        description="vision: the fewest prompt tokens the model spends on one image, "
        "counted toward the context check (max_context_tokens) so that a prompt that "
        "cannot fit is refused before the call. Default 1, true of every model; set the "
        "model's own count (e.g. 576 for LLaVA-1.5, 256 for Gemma 3, 64 per tile for "
        "SmolVLM) to refuse early. The reply's usage.prompt_tokens counts them exactly.",
    )

    def lacking(self, needs: frozenset[Capability]) -> list[Capability]:
        """The capabilities of ``needs`` this endpoint has not, in a stable order."""
        return sorted(c for c in needs if not getattr(self, c))
