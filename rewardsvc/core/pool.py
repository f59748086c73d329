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
from rewardsvc.core.capabilities import Capabilities as Capabilities
from rewardsvc.core.judge_tools import JudgeTools
from rewardsvc.core.rubric import Identifier
from rewardsvc.core.scoring_methods import Capability, MethodName, method_entry, methods_description


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


class RateLimit(StrictModel):
    """A hosted judge's rate limits (its provider's per-minute quotas for this key).

    Calls wait in a token bucket per limit (each refills at its rate, holds at most a
    minute's worth) before they are sent; the provider's ``x-ratelimit-*`` and
    ``Retry-After`` headers move the buckets as they come.
    """

    requests_per_minute: float | None = Field(
        default=None, gt=0, description="Requests per minute at most (RPM)."
    )
    tokens_per_minute: float | None = Field(
        default=None,
        gt=0,
        description="Tokens per minute at most (TPM): prompt tokens (estimated before the "
        "call from its text, corrected by the reply's usage) plus the call's max_tokens.",
    )


class Prices(StrictModel):
    """What the provider charges, in a currency of your choice (USD in the docs) per
    million tokens: ``usage.cost`` and the monitor's cost per run are in it."""

    input: float = Field(ge=0, description="Per million prompt tokens (not cached).")
    cached_input: float | None = Field(
        default=None,
        ge=0,
        description="Per million cached prompt tokens (usage.prompt_tokens_details."
        "cached_tokens); default: the input price.",
    )
    output: float = Field(ge=0, description="Per million completion tokens.")

    def cost(self, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> float:
        """The price of one reply: cached prompt tokens at ``cached_input``, the other
        prompt tokens at ``input``, completion tokens at ``output``."""
        cached = max(0, min(cached_tokens, prompt_tokens))
        cached_price = self.input if self.cached_input is None else self.cached_input
        fresh = prompt_tokens - cached
        return (fresh * self.input + cached * cached_price + completion_tokens * self.output) / 1e6


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


class RewardModelSettings(StrictModel):
    """How a ``method: reward_model`` judge reads its scalar from vLLM's pooling runner.

    The conversation goes as chat messages (the server applies the model's chat template);
    the value is read at index ``label`` of the classifier's output and mapped into [0, 1]
    by ``transform``. With ``step_separator`` the judge is also a process reward model: the
    policy's steps, each followed by the separator, go in one ``/pooling`` call
    (``task: token_classify``) and the server's STEP pooler returns one row per separator.
    """

    endpoint: Literal["classify", "pooling"] = Field(
        default="classify",
        description="Where the item's scalar is read: classify: POST /classify, "
        "data[0].probs; pooling: POST /pooling with task classify, data[0].data (vLLM's "
        "/pooling serves only the task of its --pooler-config: classify by default under "
        "--convert classify).",
    )
    label: int = Field(
        default=0,
        ge=0,
        le=1023,
        description="Index of the classifier output that is the reward (0 for a "
        "one-label reward model; the 'good' class of a two-label one).",
    )
    transform: Literal["sigmoid", "probability"] = Field(
        default="sigmoid",
        description="sigmoid: the raw logit is asked for (use_activation false) and mapped "
        "by sigmoid((logit - center) / scale); probability: the server's own activation "
        "(sigmoid for one label, softmax over several) is the score. Either way a rubric's "
        "calibration (zscore or rank over its window) can then put the model on the "
        "scale of the other judges before min.",
    )
    center: float = Field(
        default=0.0, ge=-1e6, le=1e6, description="transform sigmoid: the logit mapped to 0.5."
    )
    scale: float = Field(
        default=1.0, gt=0, le=1e6, description="transform sigmoid: logits per unit of the slope."
    )
    step_separator: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="Process reward model: the text (one token of the model, the server's "
        "--pooler-config step_tag_id, its task token_classify) that follows each step; "
        "untrusted text has it broken. All steps are scored in one POST /pooling call, and "
        "a whole item as its last step (endpoint is then unused). Without it, step criteria "
        "are scored one call per step, each step's trajectory scored as a whole item. At "
        "least two characters: a word joiner after its first character is how it is broken, "
        "and a single character cannot be.",
    )

    @field_validator("step_separator")
    @classmethod
    def _breakable(cls, value: str | None) -> str | None:
        # A policy that writes an unbreakable separator adds steps, and the reply's rows no
        # longer match: that judge fails every item such a policy answers.
        if value is not None and len(value) < 2:
            raise ValueError(
                f"{value!r} is one character, which cannot be broken in the policy's text "
                "(a completion holding it would add steps); use the model's step token of "
                "two or more characters"
            )
        return value


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
    method: MethodName = Field(default="logprob", description=methods_description())
    weight: float = Field(
        default=1.0,
        gt=0,
        le=1000,
        description="How much this judge counts when its score combines with other judges' "
        "(a multiplier of the rubric's own judge weight): give a weaker judge less, for "
        "example in proportion to ROC AUC - 0.5 from `rewardsvc eval` on labelled data.",
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
    retry_after_max_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="The longest the judge's server may hold its calls: a call whose 429 or "
        "5xx asks a longer Retry-After fails rather than waits, and no Retry-After or "
        "x-ratelimit-* header (rate_limit) holds the judge's calls longer than this.",
    )
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

    rate_limit: RateLimit | None = Field(
        default=None,
        description="A hosted provider's RPM/TPM limits, kept by a token bucket before "
        "each call (default: none; the provider's rate-limit headers are honoured anyway).",
    )
    capabilities: Capabilities = Field(
        default_factory=Capabilities,
        description="What the endpoint can do; a rubric naming a judge whose method needs "
        "what it cannot do is refused.",
    )
    prices: Prices | None = Field(
        default=None,
        description="Price per million tokens: fills usage.cost and the monitor's cost per "
        "run (default: none, usage.cost stays null).",
    )
    tools: JudgeTools | None = Field(
        default=None,
        description="An agentic judge (chat API only): the tools it may call before it "
        "answers and the bounds of its loop per verdict. Part of the verdict cache's identity.",
    )
    reward_model: RewardModelSettings | None = Field(
        default=None,
        description="method reward_model: which pooling endpoint and output give the score, "
        "its transform into [0, 1], and the step separator of a process reward model "
        "(defaults when left out).",
    )

    def lacking(self) -> list[Capability]:
        """The capabilities this judge's method needs and its endpoint has not."""
        return self.capabilities.lacking(method_entry(self.method).needs)

    @model_validator(mode="after")
    def _reward_model_settings(self) -> JudgeConfig:
        if not method_entry(self.method).whole_item and self.reward_model is not None:
            raise ValueError("reward_model: settings for a judge whose method is not reward_model")
        return self

    @field_validator("base_urls")
    @classmethod
    def _no_duplicates(cls, urls: list[HttpUrl]) -> list[HttpUrl]:
        if len({str(u) for u in urls}) != len(urls):
            raise ValueError("a base URL is listed twice")
        return urls

    @model_validator(mode="after")
    def _chat_only_fields(self) -> Self:
        # The reasoning parser, the chat template's thinking, tool calls and images (content
        # parts) live behind the chat API.
        chat_only = {
            "reasoning": self.reasoning is not None,
            "chat_template_kwargs": bool(self.chat_template_kwargs),
            "tools": self.tools is not None,
            "capabilities.vision": self.capabilities.vision,
        }
        given = [name for name, set_ in chat_only.items() if set_]
        if self.api != "chat" and given:
            raise ValueError(f"{' and '.join(given)}: need api: chat")
        # A reward model and an agentic judge's loop read text only.
        blind = self.tools is not None or method_entry(self.method).whole_item
        if self.capabilities.vision and blind:
            raise ValueError("capabilities.vision: needs no tools and not reward_model")
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
    media_domains: list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")]] = Field(
        default_factory=list,
        description="Hosts (exact, lower case) whose http(s) image URLs pass to the judges "
        "untouched, never fetched (match vLLM's --allowed-media-domains); others are refused.",
    )
