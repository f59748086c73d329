"""Compatibility routes that speak trainers' own reward-server protocols.

* OpenRLHF (``--reward.remote_url http://host:8000/openrlhf/<rubric>``): its single-turn
  agent executor POSTs ``{"query": [str], "prompts": [str], "labels": [str]}`` (one
  sample per request in current versions) and reads ``rewards``, ``scores`` and
  ``extra_logs`` from the reply; each value is a list as long as ``query``, and
  ``extra_logs`` is turned into per-sample tensors, so its keys must never change
  and its values must be numbers. Its client tries a request 5 times, 1 s apart, with
  a 180 s timeout per try, ignores Retry-After, and then gives the sample no reward.
* slime (``--rm-type remote_rm --rm-url http://host:8000/slime/<rubric>``): POSTs
  ``{"prompt", "response", "label"}`` per sample (prompt a string or a message list),
  calls ``raise_for_status()`` and stores the JSON reply as ``sample.reward``: a bare
  number, or a dict read with ``--reward-key reward`` (``?format=dict``). Any failed try
  (any status >= 400) is tried again, 10 times with exponential backoff (a 120 s timeout
  per try); then it raises, which ends the rollout.

Neither trainer can carry a null reward, and both give up after a few quick retries, so
during a judge outage these routes *hold* the request: items that came back
``judge_error`` are scored again, with pauses of 1, 2, 4 ... 10 s, for up to ``hold``
seconds (OpenRLHF 150 s, slime 100 s: inside each trainer's own timeout per try;
``?hold=`` lowers it). Judges that recover within the hold give real rewards. When they
do not, the route answers 503 (with the first failed field) so that the trainer's own
retry runs and holds again. A drain for shutdown ends a hold at once (the request is
answered, and counted active until it is). Only the answer is recorded: the reward log
and the monitor see each item once, with its final result, and nothing for a 503.

What the trainer's last try gets (the try is counted per request, see :class:`Attempts`):

* OpenRLHF: a flagged failure, reward 0.0 with ``rewardsvc_valid = 0`` and
  ``rewardsvc_judge_error = 1`` in ``extra_logs`` (a non-200 would leave the sample
  without any reward). A rejected sample (malformed, e.g. no reference for a rubric that
  needs one) gets the same flagged 0.0 at once, with ``rewardsvc_rejected = 1``.
* slime, default ``format=number``: a bare number is always a real reward. A judge
  failure is a 503 on every try, the last included, so slime raises after its 10th (the
  rollout stops loudly instead of training on a made-up 0). A rejected sample is a 422
  naming slime's field (``response``, ``label``, ``prompt``), which slime raises on too.
* slime ``format=dict``: 503 up to slime's 10th try, which gets ``valid: false`` and
  ``status: "judge_error"`` with *no* ``reward`` key, so that ``--reward-key reward``
  raises (KeyError) unless a custom reward post-processing reads ``valid``; rejected
  samples are a 422 as above.

``?run=NAME`` names the training run. Neither client sends headers: when API keys are
set, put the key in the URL's user info (``http://k:KEY@host:8000/...``), which their HTTP
client sends as Basic credentials.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Annotated, Any, Literal, Protocol

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from rewardsvc.protocol.compat import (
    OpenRLHFExtraLogs,
    OpenRLHFRequest,
    OpenRLHFResponse,
    SlimeRequest,
    SlimeReward,
)
from rewardsvc.protocol.errors import ErrorDetail
from rewardsvc.protocol.rewards import (
    RUN_NAME_MAX,
    RUN_NAME_PATTERN,
    RewardOptions,
    RewardResponse,
    RewardResult,
)
from rewardsvc.server.errors import ApiError
from rewardsvc.server.holding import HeldTries
from rewardsvc.server.state import running_service


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

    def held(self) -> AbstractContextManager[HeldTries]:
        """Count a held request active for the whole hold; keep its records back."""
        ...

    async def pause(self, seconds: float) -> bool:
        """Wait between two tries; False when a drain begins (stop holding)."""
        ...


ScorerDep = Annotated[Scorer, Depends(running_service)]


RETRY_WITHIN_S = 120.0
"""How long after a refused try the trainer's retry may come (OpenRLHF waits 1 s, slime at
most 31 s between tries)."""


class Attempts:
    """Which try of the trainer's retry loop a request is.

    Neither trainer marks a retry: it sends the same body again after a try that got no
    reward. So every answer that is not a reward (a 503 after the hold, a 429, a 422)
    leaves a token for its body with its try number, and a request of that body takes the
    token with the highest number: its try is the next one; with no token it is a first
    try. Identical samples in flight at once (the copies of one prompt and completion in a
    GRPO group) are separate requests with their own counts, never one shared count.
    Tokens last ``retry_within_s``; at most ``size`` bodies are remembered.
    """

    def __init__(
        self,
        size: int = 10_000,
        retry_within_s: float = RETRY_WITHIN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.size = size
        self.retry_within_s = retry_within_s
        self.clock = clock
        self.refusals: OrderedDict[str, list[tuple[float, int]]] = OrderedDict()

    @staticmethod
    def _key(where: str, body: Any) -> str:
        text = json.dumps([where, body], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def begin(self, where: str, body: Any) -> int:
        """The try number of a request of ``body`` to ``where`` (1 for a first try)."""
        key = self._key(where, body)
        now = self.clock()
        tokens = [t for t in self.refusals.pop(key, []) if t[0] > now]
        if not tokens:
            return 1
        latest = max(tokens, key=lambda t: t[1])
        tokens.remove(latest)
        if tokens:
            self.refusals[key] = tokens
        return latest[1] + 1

    def refused(self, where: str, body: Any, tries: int) -> None:
        """The request of try ``tries`` was answered without a reward: its retry is next."""
        key = self._key(where, body)
        self.refusals.setdefault(key, []).append((self.clock() + self.retry_within_s, tries))
        self.refusals.move_to_end(key)
        while len(self.refusals) > self.size:
            self.refusals.popitem(last=False)


async def get_attempts(request: Request) -> Attempts:
    """The app's try counter (created on first use)."""
    attempts = getattr(request.app.state, "compat_attempts", None)
    if attempts is None:
        attempts = request.app.state.compat_attempts = Attempts()
    return attempts


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
    they have rewards, ``hold_s`` seconds have passed or a drain begins. Call it inside
    ``scorer.held()``."""

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
        if not await scorer.pause(min(2.0**attempt, _PAUSE_CAP_S, remaining)):
            return results
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
    prompt's first occurrence when something (a BOS token) precedes it; the text after the
    prompt's end when OpenRLHF cut the prompt from the left; otherwise (the tokenizer round
    trip changed the prompt text) the text after the longest common prefix. Trailing
    end-of-text tokens are stripped.
    """
    if prompt and query.startswith(prompt):
        response = query[len(prompt) :]
    elif prompt and prompt in query:
        # The first occurrence: a policy that repeats its prompt must not hide what it
        # wrote before the repeat.
        response = query[query.index(prompt) + len(prompt) :]
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
    nothing on its last try (``last_try``), which the caller answers in its own way."""
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
    """The reward, or OpenRLHF's failure reward 0.0 (flagged in its ``extra_logs``)."""
    return float(result.reward) if result.reward is not None else 0.0


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorDetail, "description": text}
    for code, text in {
        401: "Missing or invalid API key.",
        404: "Unknown rubric.",
        413: "Body larger than max_body_bytes, or more samples than max_items.",
        422: "Malformed request; for slime also a sample that cannot be scored (OpenRLHF "
        "gets a flagged 0.0 for it instead).",
        429: "Too many items in flight (max_inflight); see Retry-After.",
        503: "Judges failed for the whole hold; retry (OpenRLHF's last try gets a flagged "
        "0.0 and slime's dict format a reply without `reward` instead).",
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
    request: Request,
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
    where, raw = str(request.url), body.model_dump()
    tries = attempts.begin(where, raw)
    try:
        with scorer.held() as held:
            results = await score_holding(scorer, rubric, items, "query", run, hold)
            _outage(results, [f"query[{i}]" for i in range(n)], tries >= OPENRLHF_TRIES)
            held.record()
    except ApiError:
        attempts.refused(where, raw, tries)
        raise
    rewards = [_reward(r) for r in results]
    return OpenRLHFResponse(
        rewards=rewards, scores=list(rewards), extra_logs=OpenRLHFExtraLogs.of(results)
    )


# ------------------------------------------------------------------ slime


_SLIME_FIELDS = {"completion": "response", "reference": "label", "prompt": "prompt"}
"""slime's name of each item field a rejection can name."""


def _rejected(result: RewardResult) -> ApiError:
    """The 422 of a sample that cannot be scored, naming slime's field."""
    error = result.error or "the sample cannot be scored"
    for ours, theirs in _SLIME_FIELDS.items():
        prefix = f"items[0].{ours}"
        if error.startswith(prefix):
            return ApiError(422, "invalid_request", theirs + error[len(prefix) :], field=theirs)
    return ApiError(422, "invalid_request", error, field="response")


def _slime_reply(result: RewardResult, format: str) -> JSONResponse:
    """slime's answer for a result that is not a 503: the reward, or (rejected) a 422, or
    (``format=dict`` on the last try of an outage) a dict without ``reward``."""
    if result.status == "rejected":
        raise _rejected(result)
    if format == "number":
        # _outage let a judge_error through only on the last try, which number never uses.
        assert result.reward is not None
        return JSONResponse(float(result.reward))
    reply = SlimeReward(
        reward=result.reward,
        valid=result.reward is not None,
        uncertainty=result.uncertainty or 0.0,
        status=result.status,
        flags=result.flags,
        cached=result.cached,
        error=result.error,
    )
    return JSONResponse(reply.model_dump(exclude_none=True))


@router.post(
    "/slime/{rubric}",
    response_model=float | SlimeReward,
    responses=_ERRORS,
    summary="A reward in slime's remote reward model protocol",
)
async def slime(
    rubric: str,
    body: SlimeRequest,
    request: Request,
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
    outage, then 503 (on every try for ``format=number``; for ``format=dict`` until
    slime's last try, which gets a reply without ``reward``). A sample that cannot be
    scored is a 422 naming its field."""
    prompt: Any = body.prompt
    if isinstance(prompt, list):
        prompt = [m.model_dump(exclude_none=True) for m in prompt]
    item = {
        "id": "0",
        "prompt": prompt,
        "completion": strip_trailing_special_tokens(body.response),
        "reference": _label_text(body.label),
    }
    where, raw = str(request.url), body.model_dump()
    tries = attempts.begin(where, raw)
    try:
        with scorer.held() as held:
            results = await score_holding(scorer, rubric, [item], "items", run, hold)
            last_try = format == "dict" and tries >= SLIME_TRIES
            _outage(results, ["response"], last_try)
            reply = _slime_reply(results[0], format)
            held.record()
    except ApiError:
        attempts.refused(where, raw, tries)
        raise
    return reply
