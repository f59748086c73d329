"""Compatibility routes that speak trainers' own reward-server protocols.

* OpenRLHF (``--reward.remote_url http://host:8000/openrlhf/<rubric>``): its single-turn
  agent executor POSTs ``{"query": [str], "prompts": [str], "labels": [str]}`` (one
  sample per request in current versions) and reads ``rewards``, ``scores`` and
  ``extra_logs`` from the reply; each value is a list as long as ``query``, and
  ``extra_logs`` is turned into per-sample tensors, so its keys must never change
  and its values must be numbers. It retries a failed request 5 times, 1 s apart,
  then gives the sample a reward of None.
* slime (``--rm-type remote_rm --rm-url http://host:8000/slime/<rubric>``): POSTs
  ``{"prompt", "response", "label"}`` per sample (prompt a string or a message list)
  and uses the JSON reply as the reward: a bare number, or a dict read with
  ``--reward-key`` (``?format=dict``). It retries with exponential backoff.

Neither trainer can carry a null reward through its reply, so when a reward cannot
be produced (fewer judges answered than the rubric's ``min_judges``) these routes
answer 503 and let the trainer's own retry run. Neither client sends headers: when
API keys are set, put the key in the URL's user info (``http://k:KEY@host:8000/...``),
which their HTTP client sends as Basic credentials.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, Protocol

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from rewardsvc.server.guards import ApiError
from rewardsvc.server.wire import ErrorDetail, Message, RewardOptions, RewardResponse, RewardResult


class Scorer(Protocol):
    """What the compatibility routes need from the service (``api.Service`` provides it)."""

    async def score_rubric(
        self,
        rubric_id: str,
        items: list[dict[str, Any]],
        options: RewardOptions,
        field_name: str = "items",
    ) -> RewardResponse: ...


def get_scorer(request: Request) -> Scorer:
    """The running service, set on the app by its lifespan."""
    return request.app.state.service  # type: ignore[no-any-return]


ScorerDep = Annotated[Scorer, Depends(get_scorer)]


# ------------------------------------------------------------------ text extraction

# End-of-turn / end-of-text / padding tokens that a decoded sequence keeps at its end when
# decoded with skip_special_tokens=False (OpenRLHF decodes its query that way).
SPECIAL_TOKENS = ("</s>", "<eos>", "<pad>", "<end_of_turn>", "<｜end▁of▁sentence｜>")
# ChatML/Llama-3/Phi style tokens: <|im_end|>, <|endoftext|>, <|eot_id|>, <|end|>, ...
_BAR_TOKEN = re.compile(r"<\|[A-Za-z0-9_.:\-]{1,40}\|>\Z")


def strip_trailing_special_tokens(text: str) -> str:
    """``text`` without the special tokens (and whitespace between them) at its end."""
    # A loop over suffixes rather than one regex with nested repetition: the text is
    # untrusted, and such a regex backtracks quadratically on long runs of whitespace.
    while True:
        text = text.rstrip()
        for token in SPECIAL_TOKENS:
            if text.endswith(token):
                text = text[: -len(token)]
                break
        else:
            match = _BAR_TOKEN.search(text, max(0, len(text) - 44))
            if match is None:
                return text
            text = text[: match.start()]


def _common_prefix_length(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def response_from_query(query: str, prompt: str | None) -> str:
    """The policy's response inside an OpenRLHF ``query`` (templated prompt + response).

    ``query[len(prompt):]`` when the prompt is a prefix of the query; otherwise (the
    tokenizer round trip changed the prompt text, or it was truncated) the text after
    the longest common prefix. Trailing end-of-text tokens are stripped.
    """
    if prompt and query.startswith(prompt):
        response = query[len(prompt) :]
    elif prompt:
        response = query[_common_prefix_length(query, prompt) :]
    else:
        response = query
    return strip_trailing_special_tokens(response)


def _label_text(label: Any) -> str | None:
    # OpenRLHF sends "" when the dataset has no label column; that is "no reference".
    if label is None or label == "":
        return None
    if isinstance(label, str):
        return label
    return json.dumps(label, ensure_ascii=False, sort_keys=True)


def _require_rewards(results: list[RewardResult], fields: list[str]) -> list[float]:
    """The rewards, or an error: 422 for a rejected item, 503 when judges failed.

    ``fields`` names each result's place in the trainer's request, for the message.
    """
    for field, r in zip(fields, results, strict=True):
        if r.status == "rejected":
            raise ApiError(422, "invalid_item", r.error or "item rejected", field=field)
    failed = [(field, r) for field, r in zip(fields, results, strict=True) if r.reward is None]
    if failed:
        field, r = failed[0]
        raise ApiError(
            503,
            "judge_error",
            f"{len(failed)} of {len(results)} rewards could not be produced (first, "
            f"{field}: {r.error or r.status}); retry later",
            field=field,
            headers={"Retry-After": "1"},
        )
    return [float(r.reward) for r in results if r.reward is not None]


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorDetail, "description": text}
    for code, text in {
        401: "Missing or invalid API key.",
        404: "Unknown rubric.",
        413: "Body larger than max_body_bytes, or more samples than max_items.",
        422: "Malformed request or sample.",
        429: "Too many items in flight (max_inflight); see Retry-After.",
        503: "A reward could not be produced (judges failed); retry.",
    }.items()
}

router = APIRouter(tags=["trainer compatibility"])


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
        default=None, description="Dataset labels (reference answers), one per query."
    )


class OpenRLHFExtraLogs(BaseModel):
    """Per-sample values OpenRLHF logs; the keys are the same in every reply."""

    uncertainty: list[float] = Field(description="Uncertainty of each reward (0 when unknown).")
    judge_error: list[float] = Field(
        description="1 when the reward could not be produced (such replies are 503, so 0)."
    )
    degraded: list[float] = Field(description="1 when fewer than all judges scored.")
    flagged: list[float] = Field(description="1 when a detector flagged the response.")
    cached: list[float] = Field(description="1 when every verdict came from the cache.")


class OpenRLHFResponse(BaseModel):
    """The reply OpenRLHF reads: lists as long as ``query``."""

    rewards: list[float] = Field(description="The reward of each sample, in [0, 1].")
    scores: list[float] = Field(description="The same values (OpenRLHF's dynamic filtering).")
    extra_logs: OpenRLHFExtraLogs


@router.post(
    "/openrlhf/{rubric}",
    response_model=OpenRLHFResponse,
    responses=_ERRORS,
    summary="Rewards in OpenRLHF's remote reward model protocol",
)
async def openrlhf(rubric: str, body: OpenRLHFRequest, scorer: ScorerDep) -> OpenRLHFResponse:
    """Score OpenRLHF samples against the library rubric ``rubric``.

    The response text is recovered from each query by removing its prompt (see
    ``response_from_query``); the label is the reference. Any sample without a
    reward makes the whole reply 503, so OpenRLHF retries it.
    """
    n = len(body.query)
    for name, values in (("prompts", body.prompts), ("labels", body.labels)):
        if values is not None and len(values) != n:
            raise ApiError(
                422,
                "invalid_request",
                f"{name} has {len(values)} entries but query has {n}",
                field=name,
            )
    prompts = body.prompts or [""] * n
    labels = body.labels or [None] * n
    items = [
        {
            "id": str(i),
            "prompt": prompts[i],
            "completion": response_from_query(body.query[i], prompts[i]),
            "reference": _label_text(labels[i]),
        }
        for i in range(n)
    ]
    if not items:
        empty = OpenRLHFExtraLogs(
            uncertainty=[], judge_error=[], degraded=[], flagged=[], cached=[]
        )
        return OpenRLHFResponse(rewards=[], scores=[], extra_logs=empty)
    response = await scorer.score_rubric(rubric, items, RewardOptions(), "query")
    results = response.results
    rewards = _require_rewards(results, [f"query[{i}]" for i in range(n)])
    return OpenRLHFResponse(
        rewards=rewards,
        scores=list(rewards),
        extra_logs=OpenRLHFExtraLogs(
            uncertainty=[float(r.uncertainty or 0.0) for r in results],
            judge_error=[0.0 for _ in results],
            degraded=[float(r.status == "degraded") for r in results],
            flagged=[float(bool(r.flags)) for r in results],
            cached=[float(r.cached) for r in results],
        ),
    )


# ------------------------------------------------------------------ slime


class SlimeRequest(BaseModel):
    """The body slime's ``remote_rm`` posts for one sample."""

    model_config = ConfigDict(extra="ignore")

    prompt: str | list[Message] = Field(
        default="", description="The prompt: a string or a chat message list."
    )
    response: str = Field(description="The policy's response.")
    label: Any = Field(default=None, description="The sample's label (reference answer).")


class SlimeReward(BaseModel):
    """The reply with ``?format=dict`` (read in slime with ``--reward-key reward``)."""

    reward: float
    uncertainty: float = Field(description="Uncertainty of the reward (0 when unknown).")
    status: Literal["ok", "degraded"]
    flags: list[str]
    cached: bool


@router.post(
    "/slime/{rubric}",
    response_model=float | SlimeReward,
    responses=_ERRORS,
    summary="A reward in slime's remote reward model protocol",
)
async def slime(
    rubric: str,
    body: SlimeRequest,
    scorer: ScorerDep,
    format: Annotated[
        Literal["number", "dict"],
        Query(description="number: a bare JSON number; dict: a SlimeReward object."),
    ] = "number",
) -> JSONResponse:
    """Score one slime sample against the library rubric ``rubric``; 503 when no reward."""
    prompt: Any = body.prompt
    if isinstance(prompt, list):
        prompt = [m.model_dump(exclude_none=True) for m in prompt]
    item = {
        "id": "0",
        "prompt": prompt,
        "completion": strip_trailing_special_tokens(body.response),
        "reference": _label_text(body.label),
    }
    response = await scorer.score_rubric(rubric, [item], RewardOptions())
    (reward,) = _require_rewards(response.results, ["response"])
    result = response.results[0]
    if format == "number":
        return JSONResponse(reward)
    reply = SlimeReward(
        reward=reward,
        uncertainty=result.uncertainty or 0.0,
        status="degraded" if result.status == "degraded" else "ok",
        flags=result.flags,
        cached=result.cached,
    )
    return JSONResponse(reply.model_dump())
