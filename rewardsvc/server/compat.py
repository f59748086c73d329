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

A sample may bring its own rubric (a per-prompt rubric column of the dataset) in its
label: ``{"criteria": [...], "reference": "..."}``, as an object or as its JSON text
(OpenRLHF's labels are strings); ``?criteria_mode=`` says whether its criteria replace
the route's rubric's (the default) or extend them, ``?criteria_format=`` the dataset
format they are written in (``healthbench``, ``rar``, ...).

``?run=NAME`` names the training run. Neither client sends headers: when API keys are
set, put the key in the URL's user info (``http://k:KEY@host:8000/...``), which their HTTP
client sends as Basic credentials.

The policy's text is read out of what the trainers send by :mod:`.trainer_text`; the
try count is :class:`~rewardsvc.server.holding.Attempts`. Errors are answered by the
app's handlers (:mod:`.errors`); these routes only note the refusal for the retry count.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from rewardsvc.application.targets import RequestPlan
from rewardsvc.core.criteria_formats import CriteriaFormatName
from rewardsvc.core.errors import ErrorKind, RequestError, ServiceError, Unavailable
from rewardsvc.core.item_rubric import CriteriaMode
from rewardsvc.protocol.compat import (
    OpenRLHFExtraLogs,
    OpenRLHFRequest,
    OpenRLHFResponse,
    SlimeRequest,
    SlimeReward,
)
from rewardsvc.protocol.rejections import SLIME_FIELDS, placed_at, their_field
from rewardsvc.protocol.rewards import (
    RewardOptions,
    RewardResult,
    RunName,
)
from rewardsvc.server.errors import SCORING_REFUSALS, error_responses
from rewardsvc.server.holding import Attempts
from rewardsvc.server.service import Service, ServiceDep
from rewardsvc.server.trainer_text import (
    label_fields,
    response_from_query,
    strip_trailing_special_tokens,
)


async def get_attempts(request: Request) -> Attempts:
    """The app's try counter (created on first use)."""
    attempts = getattr(request.app.state, "compat_attempts", None)
    if attempts is None:
        attempts = request.app.state.compat_attempts = Attempts()
    return attempts


AttemptsDep = Annotated[Attempts, Depends(get_attempts)]


@contextlib.contextmanager
def _try_of(attempts: Attempts, request: Request, body: BaseModel) -> Iterator[int]:
    """The try number of this request; a refusal raised inside (the route's own, or a
    request error from scoring, which the app's handler answers) leaves the token that
    makes the trainer's retry of the same body its next try."""
    where, raw = str(request.url), body.model_dump()
    tries = attempts.begin(where, raw)
    try:
        yield tries
    except ServiceError:
        attempts.refused(where, raw, tries)
        raise


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
    RunName | None,
    Query(
        description="The training run these rewards belong to (the same names as `/v1/rewards`)."
    ),
]


def criteria_options(
    criteria_mode: Annotated[
        CriteriaMode,
        Query(
            description="What a sample's own criteria (in its label, or NeMo Gym's criteria "
            "field) do to the rubric's: replace them or extend them."
        ),
    ] = "replace",
    criteria_format: Annotated[
        CriteriaFormatName,
        Query(description="The dataset format a sample's own criteria are written in."),
    ] = "rewardsvc",
) -> RewardOptions:
    """A trainer route's options: how a sample's own criteria meet the route's rubric."""
    return RewardOptions(criteria_mode=criteria_mode, criteria_format=criteria_format)


CriteriaOptionsDep = Annotated[RewardOptions, Depends(criteria_options)]


async def score_holding(
    scorer: Service,
    rubric: str,
    items: list[dict[str, Any]],
    field_name: str,
    run: str | None,
    hold_s: float,
    options: RewardOptions,
    planned: RequestPlan | None = None,
) -> list[RewardResult]:
    """Score ``items`` (with ``planned``, their plan, when the caller made it); score the
    ``judge_error`` ones again, with growing pauses, until they have rewards, ``hold_s``
    seconds have passed or a drain begins. Call it inside ``scorer.held()``."""

    async def score(
        batch: list[dict[str, Any]], planned: RequestPlan | None = None
    ) -> list[RewardResult]:
        response = await scorer.score_rubric(
            rubric, batch, options, field_name, run=run, planned=planned
        )
        return list(response.results)

    results = await score(items, planned)
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
            results[index] = placed_at(result, index)  # scored again as a part of the batch


def _outage(results: list[RewardResult], fields: list[str], last_try: bool) -> None:
    """503 (with the first failed field) while judges failed and the trainer will try again;
    nothing on its last try (``last_try``), which the caller answers in its own way."""
    failed = [(f, r) for f, r in zip(fields, results, strict=True) if r.status == "judge_error"]
    if not failed or last_try:
        return
    field, r = failed[0]
    raise Unavailable(
        f"{len(failed)} of {len(results)} rewards could not be produced (first, "
        f"{field}: {r.error or r.status}); retry later",
        kind=ErrorKind.JUDGE_ERROR,
        field=field,
        retry_after=1,
    )


def _reward(result: RewardResult) -> float:
    """The reward, or OpenRLHF's failure reward 0.0 (flagged in its ``extra_logs``)."""
    return float(result.reward) if result.reward is not None else 0.0


_ERRORS = error_responses(*SCORING_REFUSALS, ErrorKind.JUDGE_ERROR, trainer=True)

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
    scorer: ServiceDep,
    attempts: AttemptsDep,
    options: CriteriaOptionsDep,
    run: RunQuery = None,
    hold: Annotated[float, _hold_query(OPENRLHF_HOLD_S)] = OPENRLHF_HOLD_S,
) -> OpenRLHFResponse:
    """Score OpenRLHF samples against the library rubric ``rubric``.

    The response text is recovered from each query by removing its prompt (see
    ``response_from_query``); the label is the reference, or the sample's own rubric
    (see :func:`~.trainer_text.label_fields`). During a judge outage the
    request is held (``hold``), then answered 503 unless this is OpenRLHF's last try.
    """
    n = len(body.query)
    for name, values in (("prompts", body.prompts), ("labels", body.labels)):
        if values is not None and len(values) != n:
            message = f"{name} has {len(values)} entries but query has {n}"
            raise RequestError(message, field=name)
    prompts = body.prompts or [""] * n
    labels = body.labels or [None] * n
    items = [
        {
            "id": str(i),
            "prompt": prompts[i],
            "completion": response_from_query(body.query[i], prompts[i]),
            **label_fields(labels[i]),
        }
        for i in range(n)
    ]
    if not items:
        return OpenRLHFResponse(rewards=[], scores=[], extra_logs=OpenRLHFExtraLogs.of([]))
    with (
        _try_of(attempts, request, body) as tries,
        scorer.held(scorer.hold(items, "the OpenRLHF request")) as held,
    ):
        results = await score_holding(scorer, rubric, items, "query", run, hold, options)
        _outage(results, [f"query[{i}]" for i in range(n)], tries >= OPENRLHF_TRIES)
        held.record()
    rewards = [_reward(r) for r in results]
    return OpenRLHFResponse(
        rewards=rewards, scores=list(rewards), extra_logs=OpenRLHFExtraLogs.of(results)
    )


# ------------------------------------------------------------------ slime


def _rejected(result: RewardResult) -> RequestError:
    """The refusal of a sample that cannot be scored (a 422), naming slime's field from
    the result's problems (``response`` when they name none slime sends)."""
    field, message = their_field(result, SLIME_FIELDS, "response")
    return RequestError(message, field=field)


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
    scorer: ServiceDep,
    attempts: AttemptsDep,
    options: CriteriaOptionsDep,
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
        **label_fields(body.label),
    }
    with (
        _try_of(attempts, request, body) as tries,
        scorer.held(scorer.hold(item, "the slime request")) as held,
    ):
        results = await score_holding(scorer, rubric, [item], "items", run, hold, options)
        last_try = format == "dict" and tries >= SLIME_TRIES
        _outage(results, ["response"], last_try)
        reply = _slime_reply(results[0], format)
        held.record()
    return reply
