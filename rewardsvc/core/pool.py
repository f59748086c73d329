"""Judge pool models: the named LLM judges that rubrics refer to.

A judge pool file (e.g. ``rubrics/judges.yaml``) defines each judge once: its
model, the OpenAI-compatible base URLs serving it, how it is asked, and its
limits. API keys are never written in the file, only the name of the
environment variable that holds one.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, HttpUrl, field_validator, model_validator

from rewardsvc.core.base import StrictModel
from rewardsvc.core.rubric import Identifier


class Sampling(StrictModel):
    """Sampling settings sent with every call to this judge."""

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_logprobs: int = Field(
        default=20, ge=1, le=20, description="logprob method: alternatives read per position."
    )
    n: int = Field(default=4, ge=1, le=32, description="sampled method: samples per call.")
    max_tokens: int = Field(
        default=256, ge=1, le=8192, description="structured and sampled methods: output budget."
    )
    seed: int | None = Field(default=None, description="Passed to vLLM for reproducible sampling.")


REASONING_MARKERS: dict[str, tuple[str, str]] = {
    "deepseek_r1": ("<think>", "</think>"),
    "qwen3": ("<think>", "</think>"),
}
"""The texts that open and end a judge's reasoning, by the name of vLLM's
``--reasoning-parser`` that the judge's server runs (parsers with one marker pair)."""

# Tokens of the answer call beyond the budget: room for a forced end of reasoning that is
# more than one token (vLLM's --reasoning-config reasoning_end_str may add a phrase).
REASONING_END_TOKENS = 16


class Reasoning(StrictModel):
    """A judge that thinks before it answers (Qwen3 in thinking mode, DeepSeek-R1 distills,
    generative reward models trained with RL), served by vLLM with a reasoning parser."""

    budget_tokens: int = Field(
        ge=0,
        le=32768,
        description="Most tokens the judge may think before its answer; sent as vLLM's "
        "thinking_token_budget, which forces the end of reasoning when it is spent (the "
        "server needs --reasoning-parser). A reply that still has not ended its reasoning "
        "is a failed verdict of kind reasoning_budget, never a score.",
    )
    parser: Literal["deepseek_r1", "qwen3"] = Field(
        default="deepseek_r1",
        description="The vLLM --reasoning-parser the judge's server runs: says where the "
        "reasoning ends in the decoded tokens (<think>...</think> for both), so where the "
        "answer is read.",
    )

    @property
    def markers(self) -> tuple[str, str]:
        """The texts that open and end the reasoning."""
        return REASONING_MARKERS[self.parser]


class JudgeConfig(StrictModel):
    """One named judge: an LLM behind one or more OpenAI-compatible endpoints."""

    model: str = Field(min_length=1, description="Model name as served (vLLM --served-model-name).")
    revision: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="Which weights serve `model`, in the verdict cache's identity (with the "
        "judge's name): bump it when you swap the weights under the same model name, so "
        "verdicts of the old weights are not reused. Replicas of one judge share verdicts; "
        "base URLs are not part of the identity.",
    )
    base_urls: list[HttpUrl] = Field(
        min_length=1,
        description="OpenAI-compatible base URLs (ending in /v1); calls spread across them.",
    )
    api: Literal["chat", "completion"] = Field(
        default="chat",
        description="chat: /chat/completions with the model's chat template; "
        "completion: /completions with a plain-text prompt (base models).",
    )
    method: Literal["logprob", "structured", "sampled", "batched"] = Field(
        default="logprob",
        description="logprob: one constrained token, expected value over the scale; "
        "structured: JSON reasoning then score; sampled: n samples, mean and variance; "
        "batched: one call per item reads all its criteria and answers each with one "
        "constrained token (expected value per criterion, as logprob), far fewer judge "
        "tokens; holistic and per-step calls are asked as logprob.",
    )
    sampling: Sampling = Field(default_factory=Sampling)
    timeout_s: float = Field(
        default=60.0, gt=0, le=3600, description="Longest one attempt may take, in seconds."
    )
    call_deadline_s: float | None = Field(
        default=None,
        gt=0,
        le=36000,
        description="Longest one call may take, slot wait, retries and backoff included "
        "(default: every attempt's timeout plus the longest backoff after each).",
    )
    max_context_tokens: int | None = Field(
        default=None,
        ge=1,
        description="The judge's context length (vLLM's --max-model-len): a prompt that cannot "
        "fit is refused before the call, as context_overflow.",
    )
    max_concurrency: int = Field(default=32, ge=1, le=4096, description="In-flight calls at most.")
    routing: Literal["affine", "round_robin"] = Field(
        default="affine",
        description="How calls spread over base_urls. affine: the calls of one item (of one "
        "trajectory, for step rewards) go to one URL, chosen by hashing the item's shared "
        "prompt prefix, so that URL's prefix cache serves them all; round_robin: each call "
        "to the next URL.",
    )
    load_factor: float = Field(
        default=1.25,
        ge=1.0,
        le=100.0,
        description="affine routing: a URL with more calls in flight than load_factor times "
        "the mean over the URLs, plus one, is passed over for the item's next URL.",
    )
    retries: int = Field(default=3, ge=0, le=10, description="Retries on 429, 5xx, connection.")
    api_key_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="Name of the environment variable holding the API key (never the key); "
        "when NAME_FILE is set instead, the key is read from that file, and read again when "
        "it changes (a rotated Kubernetes Secret).",
    )

    special_tokens: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default_factory=list,
        max_length=4096,
        description="The judge model's own special tokens (its tokenizer's added special "
        "tokens), broken in untrusted text like the maintained control-token families; "
        "part of the verdict cache's identity.",
    )
    reasoning: Reasoning | None = Field(
        default=None,
        description="A reasoning judge (chat API only): it thinks, within budget_tokens, "
        "before its constrained answer; the logprob and batched methods read the answer "
        "after the reasoning. Part of the verdict cache's identity.",
    )
    chat_template_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Sent as vLLM's chat_template_kwargs with every call (chat API), e.g. "
        "{enable_thinking: false}. Part of the verdict cache's identity.",
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="Further request fields sent with every call (e.g. top_k, "
        "repetition_penalty); the fields rewardsvc sets itself (messages, max_tokens, "
        "logprobs, structured outputs, ...) take precedence. Part of the verdict cache's "
        "identity.",
    )

    @field_validator("base_urls")
    @classmethod
    def _no_duplicates(cls, urls: list[HttpUrl]) -> list[HttpUrl]:
        if len({str(u) for u in urls}) != len(urls):
            raise ValueError("a base URL is listed twice")
        return urls

    @model_validator(mode="after")
    def _reasoning_needs_chat(self) -> Self:
        # The reasoning parser and the chat template's thinking live behind the chat API.
        if self.api != "chat" and (self.reasoning is not None or self.chat_template_kwargs):
            raise ValueError("reasoning and chat_template_kwargs need api: chat")
        return self

    def request_extras(self) -> dict[str, Any]:
        """The judge's own fields for every request body: ``extra_body``, then
        ``chat_template_kwargs`` (empty for a judge that sets neither)."""
        extras = dict(self.extra_body)
        if self.chat_template_kwargs:
            extras["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        return extras


class JudgePool(StrictModel):
    """The judge pool file: named judges."""

    model_config = ConfigDict(json_schema_extra={"title": "rewardsvc judge pool"})

    judges: dict[Identifier, JudgeConfig] = Field(min_length=1)
