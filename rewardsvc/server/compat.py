"""Compatibility routes that speak trainers' own reward-server protocols.

* OpenRLHF (``--reward.remote_url http://host:8000/openrlhf/<rubric>``): its single-turn
  agent executor POSTs ``{"query": [str], "prompts": [str], "labels": [str]}`` (one
  sample per request in current versions) and reads ``rewards``, ``scores`` and
  ``extra_logs`` from the reply; each value is a list as long as ``query``, and
  ``extra_logs`` is turned into per-sample tensors, so its keys must never change
  and its values must be numbers. Its client tries a request 5 times, 1 s apart, with
  a 180 s timeout per try, ignores Retry-After, and then gives the sample no reward.
* slime (``--rm-type remote_rm --rm-url http://host:8000/slime/<rubric>``): POSTs
  ``{"prompt", "response", "label"}`` per sample (prompt a string or a message list)
  and uses the JSON reply as the reward: a bare number, or a dict read with
  ``--reward-key reward`` (``?format=dict``). It tries 10 times with exponential
  backoff (a 120 s timeout per try), then raises, which ends the rollout.

Neither trainer can carry a null reward, and both give up after a few quick retries, so
during a judge outage these routes *hold* the request: items that came back
``judge_error`` are scored again, with pauses of 1, 2, 4 ... 10 s, for up to ``hold``
seconds (OpenRLHF 150 s, slime 100 s: inside each trainer's own timeout per try;
``?hold=`` lowers it). Judges that recover within the hold give real rewards. When they
do not, the route answers 503 so that the trainer's own retry runs (and holds again),
except on the trainer's last try (the same body seen for the 5th time from OpenRLHF, the
10th from slime), which gets a flagged failure instead: reward 0.0 with
``rewardsvc_valid = 0`` and ``rewardsvc_judge_error = 1`` in OpenRLHF's ``extra_logs``,
``status: "judge_error"`` and ``valid: false`` in slime's dict format, never a crash of
the trainer's loop. A rejected sample (malformed, e.g. no reference for a rubric that
needs one) gets the same flagged 0.0 at once (a 422 would stop the trainer), with
``rewardsvc_rejected = 1`` / ``status: "rejected"``. ``?run=NAME`` names the training
run. Neither client sends headers: when API keys are set, put the key in the URL's user
info (``http://k:KEY@host:8000/...``), which their HTTP client sends as Basic credentials.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import OrderedDict
from typing import Annotated, Any, Literal, Protocol

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from rewardsvc.server.errors import ApiError
from rewardsvc.server.state import running_service
from rewardsvc.server.wire.compat import (
    OpenRLHFExtraLogs,
    OpenRLHFRequest,
    OpenRLHFResponse,
    SlimeRequest,
    SlimeReward,
)
from rewardsvc.server.wire.errors import ErrorDetail
from rewardsvc.server.wire.rewards import (
    RUN_NAME_MAX,
    RUN_NAME_PATTERN,
    RewardOptions,
    RewardResponse,
    RewardResult,
)


class Scorer(Protocol):
    """What the compatibility routes need from the service (``api.Service`` provides it)."""

    async def score_rubric(
        self,
        rubric_id: str,
        items: list[dict[str, Any]],
        options: RewardOptions,
        field_name: str = "items",
        *,
        run: str | None = None,
    ) -> RewardResponse: ...


ScorerDep = Annotated[Scorer, Depends(running_service)]


class Attempts:
    """How often each request body was seen recently: a trainer's retry re-sends the same
    body, so its count tells which try of the trainer's retry loop this is. Bounded."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self.seen: OrderedDict[str, int] = OrderedDict()

    @staticmethod
    def _key(route: str, rubric: str, body: Any) -> str:
        text = json.dumps([route, rubric, body], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def count(self, route: str, rubric: str, body: Any) -> int:
        """Record one more try of this body; the number of tries so far (1 for the first)."""
        key = self._key(route, rubric, body)
        n = self.seen.pop(key, 0) + 1
        self.seen[key] = n
        while len(self.seen) > self.size:
            self.seen.popitem(last=False)
        return n

    def forget(self, route: str, rubric: str, body: Any) -> None:
        """The body got its answer: a later identical request is a new sample."""
        self.seen.pop(self._key(route, rubric, body), None)


async def get_attempts(request: Request) -> Attempts:
    """The app's try counter (created on first use)."""
    attempts = getattr(request.app.state, "compat_attempts", None)
    if attempts is None:
        attempts = request.app.state.compat_attempts = Attempts()
    return attempts  # type: ignore[no-any-return]


AttemptsDep = Annotated[Attempts, Depends(get_attempts)]

OPENRLHF_HOLD_S = 150.0
"""Longest hold of one OpenRLHF request (its client times a try out after 180 s)."""
OPENRLHF_TRIES = 5
SLIME_HOLD_S = 100.0
"""Longest hold of one slime request (its client times a try out after 120 s)."""
SLIME_TRIES = 10
_PAUSE_CAP_S = 10.0


def _hold_query(limit: float) -> Any:
    return Query(
        ge=0,
        le=limit,
        description=f"Seconds to hold a request while judges recover (at most {limit:g}).",
    )


RunQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=RUN_NAME_MAX,
        pattern=RUN_NAME_PATTERN,
        description="The training run these rewards belong to (the same names as `/v1/rewards`).",
    ),
]


async def score_holding(
    scorer: Scorer,
    rubric: str,
    items: list[dict[str, Any]],
    field_name: str,
    run: str | None,
    hold_s: float,
) -> list[RewardResult]:
    """Score ``items``; score the ``judge_error`` ones again, with growing pauses, until
    they have rewards or ``hold_s`` seconds have passed."""

    async def score(batch: list[dict[str, Any]]) -> list[RewardResult]:
        response = await scorer.score_rubric(rubric, batch, RewardOptions(), field_name, run=run)
        return list(response.results)

    results = await score(items)
    deadline = time.monotonic() + hold_s
    attempt = 0
    while True:
        failed = [i for i, r in enumerate(results) if r.status == "judge_error"]
        remaining = deadline - time.monotonic()
        if not failed or remaining <= 0:
            return results
        await asyncio.sleep(min(2.0**attempt, _PAUSE_CAP_S, remaining))
        attempt += 1
        for index, result in zip(failed, await score([items[i] for i in failed]), strict=True):
            results[index] = result


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


_PROMPT_TAIL = 32
"""Characters of the prompt's end searched for in a query whose prompt was cut."""


def _after_prompt_tail(query: str, prompt: str) -> int | None:
    """Where the response starts in a query holding only the end of ``prompt`` (OpenRLHF cuts
    over-long prompts from the left): the end of the longest suffix of the prompt that the
    query starts with."""
    tail = prompt[-_PROMPT_TAIL:]
    start = query.find(tail)
    while start != -1:
        end = start + len(tail)
        if prompt.endswith(query[:end]):
            return end
        start = query.find(tail, start + 1)
    return None


def response_from_query(query: str, prompt: str | None) -> str:
    """The policy's response inside an OpenRLHF ``query`` (templated prompt + response).

    ``query[len(prompt):]`` when the prompt is a prefix of the query; the text after the
    prompt when something (a BOS token) precedes it; the text after the prompt's end when
    OpenRLHF cut the prompt from the left; otherwise (the tokenizer round trip changed the
    prompt text) the text after the longest common prefix. Trailing end-of-text tokens are
    stripped.
    """
    if prompt and query.startswith(prompt):
        response = query[len(prompt) :]
    elif prompt and prompt in query:
        response = query[query.rindex(prompt) + len(prompt) :]
    elif prompt and (cut := _after_prompt_tail(query, prompt)) is not None:
        response = query[cut:]
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


def _outage(results: list[RewardResult], fields: list[str], last_try: bool) -> None:
    """503 (with the first failed field) while judges failed and the trainer will try again;
    nothing on its last try, which gets flagged failure rewards instead."""
    failed = [(f, r) for f, r in zip(fields, results, strict=True) if r.status == "judge_error"]
    if not failed or last_try:
        return
    field, r = failed[0]
    raise ApiError(
        503,
        "judge_error",
        f"{len(failed)} of {len(results)} rewards could not be produced (first, "
        f"{field}: {r.error or r.status}); retry later",
        field=field,
        headers={"Retry-After": "1"},
    )


def _reward(result: RewardResult) -> float:
    """The reward, or the failure reward 0.0 (flagged by the caller) when there is none."""
    return float(result.reward) if result.reward is not None else 0.0


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorDetail, "description": text}
    for code, text in {
        401: "Missing or invalid API key.",
        404: "Unknown rubric.",
        413: "Body larger than max_body_bytes, or more samples than max_items.",
        422: "Malformed request (a malformed sample gets a flagged 0.0 instead).",
        429: "Too many items in flight (max_inflight); see Retry-After.",
        503: "Judges failed for the whole hold; retry (the trainer's last try gets a "
        "flagged 0.0 instead).",
    }.items()
}

router = APIRouter(tags=["trainer compatibility"])


# ------------------------------------------------------------------ OpenRLHF


@router.post(
    "/openrlhf/{rubric}",
    response_model=OpenRLHFResponse,
    responses=_ERRORS,
    summary="Rewards in OpenRLHF's remote reward model protocol",
)
async def openrlhf(
    rubric: str,
    body: OpenRLHFRequest,
    scorer: ScorerDep,
    attempts: AttemptsDep,
    run: RunQuery = None,
    hold: Annotated[float, _hold_query(OPENRLHF_HOLD_S)] = OPENRLHF_HOLD_S,
) -> OpenRLHFResponse:
    """Score OpenRLHF samples against the library rubric ``rubric``.

    The response text is recovered from each query by removing its prompt (see
    ``response_from_query``); the label is the reference. During a judge outage the
    request is held (``hold``), then answered 503 unless this is OpenRLHF's last try.
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
        return OpenRLHFResponse(rewards=[], scores=[], extra_logs=OpenRLHFExtraLogs.of([]))
    raw = body.model_dump()
    tries = attempts.count("openrlhf", rubric, raw)
    results = await score_holding(scorer, rubric, items, "query", run, hold)
    _outage(results, [f"query[{i}]" for i in range(n)], last_try=tries >= OPENRLHF_TRIES)
    attempts.forget("openrlhf", rubric, raw)
    rewards = [_reward(r) for r in results]
    return OpenRLHFResponse(
        rewards=rewards, scores=list(rewards), extra_logs=OpenRLHFExtraLogs.of(results)
    )


# ------------------------------------------------------------------ slime


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
    attempts: AttemptsDep,
    format: Annotated[
        Literal["number", "dict"],
        Query(description="number: a bare JSON number; dict: a SlimeReward object."),
    ] = "number",
    run: RunQuery = None,
    hold: Annotated[float, _hold_query(SLIME_HOLD_S)] = SLIME_HOLD_S,
) -> JSONResponse:
    """Score one slime sample against the library rubric ``rubric``; held during a judge
    outage, then 503 unless this is slime's last try."""
    prompt: Any = body.prompt
    if isinstance(prompt, list):
        prompt = [m.model_dump(exclude_none=True) for m in prompt]
    item = {
        "id": "0",
        "prompt": prompt,
        "completion": strip_trailing_special_tokens(body.response),
        "reference": _label_text(body.label),
    }
    raw = body.model_dump()
    tries = attempts.count("slime", rubric, raw)
    results = await score_holding(scorer, rubric, [item], "items", run, hold)
    _outage(results, ["response"], last_try=tries >= SLIME_TRIES)
    attempts.forget("slime", rubric, raw)
    result = results[0]
    if format == "number":
        return JSONResponse(_reward(result))
    reply = SlimeReward(
        reward=_reward(result),
        valid=result.reward is not None,
        uncertainty=result.uncertainty or 0.0,
        status=result.status,
        flags=result.flags,
        cached=result.cached,
    )
    return JSONResponse(reply.model_dump())
