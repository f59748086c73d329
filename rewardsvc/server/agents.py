"""Trainer routes for agents: NeMo Gym's resources-server ``verify``.

``POST /nemo-gym/{rubric}/verify`` speaks NeMo Gym's verify protocol, so a NeMo Gym
environment (and NeMo-RL behind it) can use a rubric as its reward: the request is NeMo
Gym's ``BaseVerifyRequest`` (``responses_create_params``, whose ``input`` and
``instructions`` are the task, and ``response``, whose ``output`` is the policy's
Responses-API items: messages, function calls, function call outputs, reasoning), and
the reply is the same body plus ``reward``, as ``BaseVerifyResponse`` reads it.

Failures follow NeMo Gym's own judge fail-safe, so that NeMo-RL masks the sample rather
than learning from a reward that measures nothing: when too few judges answer, the reply
is still 200, with ``reward: 0.0``, ``mask_sample: true``, ``failure_kind:
"judge_failed"`` and a ``failure_reason`` (and ``instance_config.mask_sample`` for older
NeMo-RL readers); an item the rubric cannot score (no reference for a rubric that needs
one, malformed items) gets the same with ``failure_kind: "verifier_error"``. A
``degraded`` reward (fewer judges than all, at least ``min_judges``) is a valid
measurement: not masked, its ``failure_reason`` says why it degraded.

Text the judges cannot be sent (a lone UTF-16 surrogate, which has no UTF-8 encoding, or a
NUL) in the task, the output, the reference or the criteria is an item the rubric cannot
score: masked, ``verifier_error``, its ``failure_reason`` naming the field
(``response.output[0].content[0].text: contains a lone surrogate ...``). Anywhere else in
the body it is echoed with each lone surrogate written as its escape (``\\ud800``), so
that the reply can always be encoded.

The reference answer, for rubrics that need one, is read from the request's top-level
field named by ``?reference_field=`` (default ``expected_answer``, as NeMo Gym datasets
name it); anything but a string is sent as its JSON. A sample's own rubric (a per-prompt
rubric column of the dataset) is read from the top-level field named by
``?criteria_field=`` (default ``criteria``); ``?criteria_mode=`` and ``?criteria_format=``
as on the other trainer routes.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query

from rewardsvc.application.items import unreadable_text
from rewardsvc.core.errors import FieldProblem
from rewardsvc.protocol.agents import NemoGymVerifyRequest, NemoGymVerifyResponse
from rewardsvc.protocol.errors import ErrorDetail
from rewardsvc.protocol.rejections import nemo_gym_fields, their_field
from rewardsvc.server.compat import CriteriaOptionsDep
from rewardsvc.server.service import ServiceDep

FAILURE_REASON_CHARS = 2000


def verify_item(
    body: NemoGymVerifyRequest, reference_field: str, criteria_field: str = "criteria"
) -> dict[str, Any]:
    """The rewardsvc item of a verify request: the task as prompt, the output as
    completion, the reference from ``reference_field`` and the sample's own criteria
    from ``criteria_field`` when present."""
    params = body.responses_create_params
    task: list[dict[str, Any]] = []
    if params.instructions:
        task.append({"role": "system", "content": params.instructions})
    if isinstance(params.input, str):
        task.append({"role": "user", "content": params.input})
    else:
        task.extend(params.input)
    item: dict[str, Any] = {"prompt": task, "completion": body.response.output}
    extra = body.model_extra or {}
    if reference_field in extra and extra[reference_field] is not None:
        value = extra[reference_field]
        item["reference"] = value if isinstance(value, str) else json.dumps(value)
    if extra.get(criteria_field) is not None:
        item["criteria"] = extra[criteria_field]
    return item


def unreadable(
    body: NemoGymVerifyRequest, reference_field: str, criteria_field: str = "criteria"
) -> FieldProblem | None:
    """The first text of the scored parts of ``body`` (task, output, reference, criteria)
    that the judges cannot be sent, named by its place in the request."""
    params = body.responses_create_params
    extra = body.model_extra or {}
    parts: list[tuple[tuple[str | int, ...], Any]] = [
        (("responses_create_params", "instructions"), params.instructions),
        (("responses_create_params", "input"), params.input),
        (("response", "output"), body.response.output),
        ((reference_field,), extra.get(reference_field)),
        ((criteria_field,), extra.get(criteria_field)),
    ]
    return next(
        (bad for loc, value in parts if (bad := unreadable_text(value, loc)) is not None), None
    )


def escaped(value: Any) -> Any:
    """``value`` with each lone surrogate of its strings (keys included) written as its
    escape, ``\\ud800``: an echo that can always be encoded as UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {escaped(k): escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escaped(v) for v in value]
    return value


def masked(data: dict[str, Any], kind: str, reason: str) -> dict[str, Any]:
    """``data`` as a masked failure, the way NeMo Gym's judge fail-safe writes it."""
    config = data.get("instance_config")
    return data | {
        "reward": 0.0,
        "mask_sample": True,
        "failure_kind": kind,
        "failure_reason": reason[:FAILURE_REASON_CHARS],
        "instance_config": {**(config if isinstance(config, dict) else {}), "mask_sample": True},
    }


router = APIRouter(tags=["trainers"])


@router.post(
    "/nemo-gym/{rubric}/verify",
    response_model=NemoGymVerifyResponse,
    responses={404: {"model": ErrorDetail}, 422: {"model": ErrorDetail}},
    summary="NeMo Gym resources-server verify",
)
async def nemo_gym_verify(
    rubric: str,
    body: NemoGymVerifyRequest,
    scorer: ServiceDep,
    options: CriteriaOptionsDep,
    reference_field: Annotated[
        str, Query(description="Top-level request field holding the reference answer.")
    ] = "expected_answer",
    criteria_field: Annotated[
        str,
        Query(description="Top-level request field holding the sample's own criteria."),
    ] = "criteria",
) -> dict[str, Any]:
    """Score a NeMo Gym rollout against a library rubric; never fails a sample loudly."""
    # Python mode: the body is parsed JSON already, and JSON mode refuses a key that
    # holds a lone surrogate before it could be escaped.
    data: dict[str, Any] = escaped(body.model_dump(exclude_unset=True))
    bad = unreadable(body, reference_field, criteria_field)
    if bad is not None:
        return masked(data, "verifier_error", str(bad))
    item = verify_item(body, reference_field, criteria_field)
    response = await scorer.score_rubric(rubric, [item], options, "response")
    result = response.results[0]
    if result.status == "judge_error" or result.reward is None:
        if result.status == "rejected":
            fields = nemo_gym_fields(reference_field, criteria_field)
            return masked(data, "verifier_error", their_field(result, fields, "response")[1])
        return masked(data, "judge_failed", result.error or result.status)
    out = data | {"reward": result.reward, "mask_sample": False}
    if result.status == "degraded":
        out["failure_reason"] = (result.error or "degraded")[:FAILURE_REASON_CHARS]
    return out
