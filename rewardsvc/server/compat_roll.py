"""ROLL's remote reward system: a submit / poll route pair.

ROLL (alibaba/ROLL, ``roll/pipeline/rlvr/rewards/remote_reward_system_worker.py`` at commit
8eb27cc2dc34c4d1310b169d9b86d339004d811a) scores each sample as a job on a remote reward
system: its ``RewardSystemHandler`` POSTs ``submit_url`` with ``{priority, project_id,
experiment_id, global_step, data_id, rollout_id, prompt, response, reward_info,
reward_manager, timeout}`` (a 20 s timeout, 5 tries 1 s apart) and reads ``errcode`` (0:
accepted) and ``reward_request_id``; then it GETs ``get_result_url`` with the JSON body
``{reward_request_id}`` every 2 s until ``errcode`` 0 (it reads ``reward_score``) or the job's
``timeout`` (300 s) plus 5 s have passed, ``errcode`` 1 meaning "still running" (any other
code is logged and polled again). A job without a score is submitted again, 5 times; after
the 5th ROLL writes 0 into its score tensor with a warning in its log.

Point its ``reward_system_config`` at ``submit_url: http://host:8000/roll/<rubric>/submit_task``
and ``get_result_url: http://host:8000/roll/<rubric>/task_result`` (``?run=``, and the
criteria options, on the submit URL). The reference is ``reward_info["ground_truth"]`` (ROLL
builds it from a dataset's ``ground_truth`` column), or a rubric label there; the sample's
own rubric may also be ``reward_info["criteria"]``.

A job scores its sample in the background, held through a judge outage (``judge_error``
re-scored with growing pauses) until 15 s before its ``timeout``, so that ROLL's last poll
still finds the answer. Its poll then answers ``errcode`` 0 with ``reward_score`` and
``dimention_reward_score`` (the service's status, uncertainty and named objectives), or, if
the judges never came back, ``errcode`` 2 with ``errmsg`` ``judge_error``: ROLL polls on to its
deadline and submits the sample again, so a sample only reaches ROLL's 0 after five jobs of
five minutes each failed. A sample the rubric cannot score (e.g. no reference) is ``errcode``
3 at once. Jobs live in the process that took them (finished ones for 15 minutes): run the
service with one worker for ROLL, since a poll that reaches another worker finds no job
(``errcode`` 4).

A submit that the service refuses is refused at once, never accepted and failed later: an
unknown rubric (404), a rubric or run outside the key's scope (403), a run over its budget
(402), a sample planning too much work or too large to hold (413), held work full (429),
each with the usual ``ErrorDetail``. ROLL's client counts any answer that is not a 2xx as a
failed submit (it tries 5 times, 1 s apart, then submits the sample again later), so the
refusal reaches its log at once instead of after five jobs. A job is admitted as held work
(``rewardsvc.server.ledger``) until it ends; a finished job keeps only its answer (never an
exception), and only its key may poll it.

ROLL submits a sample again after a job without a reward, up to 5 times: a job without a
reward (its judges failed, or the sample was rejected) is recorded in the reward log and the
monitor only when it is the sample's 5th, and a job with a reward always is, so a sample makes
one line however often it is sent (the jobs of one sample are counted like the trainer routes'
tries, by their body, for as long as ROLL may take to send it again).
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
import uuid
from collections import OrderedDict
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from rewardsvc.application.targets import RequestPlan
from rewardsvc.core.errors import ErrorKind, ServiceError
from rewardsvc.protocol.rejections import ROLL_FIELDS, their_field
from rewardsvc.protocol.rewards import RewardOptions, RewardResult
from rewardsvc.server.access import current_holder
from rewardsvc.server.compat import CriteriaOptionsDep, RunQuery, score_holding
from rewardsvc.server.errors import SCORING_REFUSALS, error_responses, one_line
from rewardsvc.server.holding import Attempts
from rewardsvc.server.ledger import Holding
from rewardsvc.server.service import Service, ServiceDep
from rewardsvc.server.trainer_text import label_fields, strip_trailing_special_tokens

log = logging.getLogger(__name__)

ROLL_TIMEOUT_S = 300.0
"""ROLL's default job timeout (``reward_server_task_timeout``)."""
ROLL_TRIES = 5
"""Jobs ROLL submits for one sample before it writes its own 0."""
ANSWER_MARGIN_S = 15.0
"""A job's hold ends this long before its timeout (ROLL polls every 2 s, to timeout + 5 s)."""
FINISHED_TTL_S = 900.0
"""How long a finished job stays pollable."""
FINISHED_KEPT = 20_000
"""Most finished jobs kept for their polls (the oldest are forgotten first); each keeps its
answer only, well under 1 KiB."""
ROLL_RETRY_WITHIN_S = ROLL_TIMEOUT_S + 60.0
"""How long after a job without a reward ROLL's next job for the sample may come: it polls
to the job's timeout plus 5 s, then submits again."""
ERRMSG_CHARS = 500
"""Longest ``errmsg`` a job keeps (an error's message may quote the sample)."""

RUNNING, DONE, FAILED, REJECTED, UNKNOWN = 1, 0, 2, 3, 4


class RollSubmit(BaseModel):
    """The body of ROLL's ``submit_task`` (fields it sends that scoring does not read are
    accepted and ignored)."""

    model_config = ConfigDict(extra="allow")

    prompt: str = Field(description="The prompt text, decoded by ROLL's tokenizer.")
    response: str = Field(description="The policy's response text.")
    reward_info: dict[str, Any] | None = Field(
        None, description="``ground_truth`` (the reference or a rubric label), ``criteria``."
    )
    data_id: Any = Field(None, description="The dataset row's id.")
    rollout_id: Any = Field(None, description="The rollout's id.")
    global_step: Any = Field(None, description="The training step.")
    timeout: float | None = Field(None, ge=0, description="Seconds the job may take (default 300).")


class RollSubmitted(BaseModel):
    """What ``submit_task`` answers."""

    errcode: int = Field(description="0: the job is accepted.")
    errmsg: str = ""
    reward_request_id: str | None = Field(None, description="The job's id, to poll.")


class RollPoll(BaseModel):
    """The body of ROLL's ``task_result`` request."""

    reward_request_id: str


class RollTaskResult(BaseModel):
    """What ``task_result`` answers: ``errcode`` 0 done, 1 running, 2 judges failed, 3 the
    sample cannot be scored, 4 no such job."""

    errcode: int
    errmsg: str = ""
    reward_score: float | None = Field(None, description="The reward, when errcode is 0.")
    dimention_reward_score: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="ROLL's per-dimension scores (its spelling): ``rewardsvc`` (status, "
        "uncertainty, flags) and each named objective.",
    )
    start_time: str | None = None
    end_time: str | None = None


@dataclass
class _Job:
    """A job: its key's holder name, and its answer once it finished."""

    holder: str
    start_time: str
    answer: RollTaskResult | None = None
    finished_at: float | None = None
    task: asyncio.Task[None] | None = None


@dataclass
class RollJobs:
    """The jobs of this process, by id: running ones until they end, finished ones (their
    answers) for FINISHED_TTL_S, at most FINISHED_KEPT of them."""

    jobs: dict[str, _Job] = field(default_factory=dict)
    finished: OrderedDict[str, None] = field(default_factory=OrderedDict)

    def add(self, scoring: Awaitable[RewardResult], holding: Holding) -> str:
        """Start ``scoring`` as a job of the request's key, holding ``holding`` until it
        ends; its id."""
        self._forget_old()
        job_id = uuid.uuid4().hex
        job = self.jobs[job_id] = _Job(current_holder(), datetime.now(UTC).isoformat())
        job.task = asyncio.get_running_loop().create_task(self._run(job_id, scoring, holding))
        return job_id

    def get(self, job_id: str) -> _Job | None:
        """Job ``job_id`` when the request's key started it (others are not told it exists)."""
        job = self.jobs.get(job_id)
        return job if job is not None and job.holder == current_holder() else None

    async def _run(self, job_id: str, scoring: Awaitable[RewardResult], holding: Holding) -> None:
        job = self.jobs[job_id]
        try:
            answer = _answer(await scoring)
        except ServiceError as exc:
            answer = RollTaskResult(errcode=FAILED, errmsg=one_line(exc)[:ERRMSG_CHARS])
        except Exception:  # the job's answer is the failure; the log keeps the traceback
            # As text: a log record holding the exception would keep the job's frames (and
            # the sample in them) for as long as a handler keeps the record.
            log.error("ROLL job %s failed:\n%s", job_id, traceback.format_exc())
            answer = RollTaskResult(errcode=FAILED, errmsg="internal_error: see the service log")
        finally:
            holding.release()
        answer.start_time, answer.end_time = job.start_time, datetime.now(UTC).isoformat()
        job.answer, job.finished_at, job.task = answer, time.monotonic(), None
        self.finished[job_id] = None

    def _forget_old(self) -> None:
        now = time.monotonic()
        while self.finished:
            oldest = next(iter(self.finished))
            done_at = self.jobs[oldest].finished_at or now
            if len(self.finished) < FINISHED_KEPT and now - done_at <= FINISHED_TTL_S:
                break
            del self.finished[oldest], self.jobs[oldest]


def _jobs(request: Request) -> RollJobs:
    jobs = getattr(request.app.state, "roll_jobs", None)
    if jobs is None:
        jobs = request.app.state.roll_jobs = RollJobs()
    return jobs


async def _score(
    scorer: Service, rubric: str, item: dict[str, Any], run: str | None, hold_s: float,
    options: RewardOptions, holding: Holding, last_try: bool, planned: RequestPlan,
) -> RewardResult:  # fmt: skip
    """The job: the sample scored (by ``planned``, the submit's plan) and held through an
    outage; recorded unless it has no reward and ROLL will submit it again (``last_try``
    false)."""
    with scorer.held(holding) as held:
        (result,) = await score_holding(
            scorer, rubric, [item], "response", run, hold_s, options, planned
        )
        if result.reward is not None or last_try:
            held.record()
    return result


def _attempts(request: Request) -> Attempts:
    """The app's count of ROLL's jobs per sample: a sample comes back after its job's
    timeout and ROLL's last poll, so a token lasts that long."""
    attempts = getattr(request.app.state, "roll_attempts", None)
    if attempts is None:
        attempts = request.app.state.roll_attempts = Attempts(retry_within_s=ROLL_RETRY_WITHIN_S)
    return attempts


router = APIRouter(tags=["trainer compatibility"])


@router.post(
    "/roll/{rubric}/submit_task",
    response_model=RollSubmitted,
    responses=error_responses(*SCORING_REFUSALS, ErrorKind.FORBIDDEN, trainer=True),
    summary="Submit a reward job in ROLL's remote reward system protocol",
)
async def roll_submit(
    rubric: str,
    body: RollSubmit,
    request: Request,
    scorer: ServiceDep,
    options: CriteriaOptionsDep,
    run: RunQuery = None,
) -> RollSubmitted:
    """Start scoring one ROLL sample against the library rubric ``rubric``, polled at
    ``task_result``; a refusal is answered at once (its status and ``ErrorDetail``)."""
    info = body.reward_info or {}
    item = {
        "id": "0",
        "prompt": body.prompt,
        "completion": strip_trailing_special_tokens(body.response),
        "metadata": {"trainer": "roll", "global_step": body.global_step,
                     "data_id": body.data_id, "rollout_id": body.rollout_id},
        **label_fields(info.get("ground_truth")),
    }  # fmt: skip
    if info.get("criteria") is not None:
        item["criteria"] = info["criteria"]
    timeout = min(body.timeout if body.timeout is not None else ROLL_TIMEOUT_S, ROLL_TIMEOUT_S)
    hold = max(0.0, timeout - ANSWER_MARGIN_S)
    where, raw = str(request.url), body.model_dump()
    # Planned here, so that a refusal is answered at once; the job runs this plan.
    planned = await scorer.plan(scorer.target(rubric), [item], options, "response", run)
    holding = scorer.hold(item, "the ROLL job")
    attempts = _attempts(request)
    tries = attempts.begin(where, raw)

    async def scoring() -> RewardResult:
        last_try = tries >= ROLL_TRIES
        result = await _score(scorer, rubric, item, run, hold, options, holding, last_try, planned)
        if result.reward is None:
            attempts.refused(where, raw, tries)  # ROLL's next job for it is its next try
        return result

    return RollSubmitted(errcode=0, reward_request_id=_jobs(request).add(scoring(), holding))


def _dimensions(result: RewardResult) -> dict[str, dict[str, Any]]:
    """ROLL's per-dimension scores: the verdict, and each named objective the result has."""
    out: dict[str, dict[str, Any]] = {
        "rewardsvc": {"status": result.status, "uncertainty": result.uncertainty,
                      "flags": list(result.flags), "debug_info": {}},
    }  # fmt: skip
    for name, value in (getattr(result, "objectives", None) or {}).items():
        out[name] = {"score": value, "debug_info": {}}
    return out


def _answer(result: RewardResult) -> RollTaskResult:
    """The poll answer of a job that scored its sample."""
    answer = RollTaskResult(errcode=FAILED, dimention_reward_score=_dimensions(result))
    if result.reward is not None:
        answer.errcode, answer.reward_score = DONE, result.reward
    else:
        answer.errcode = REJECTED if result.status == "rejected" else FAILED
        why = result.error or "no reward"
        if result.status == "rejected":
            _, why = their_field(result, ROLL_FIELDS, "response")
        answer.errmsg = f"{result.status}: {why}"[:ERRMSG_CHARS]
    return answer


@router.get(
    "/roll/{rubric}/task_result",
    response_model=RollTaskResult,
    summary="Poll a reward job in ROLL's remote reward system protocol",
)
async def roll_result(
    rubric: str,
    request: Request,
    reward_request_id: Annotated[
        str | None, Query(description="The job's id (ROLL sends it in a JSON body instead).")
    ] = None,
) -> RollTaskResult:
    """The job's state: running (1), done with its reward (0), or failed (2, 3); 4 for an
    id this process does not hold for the request's key."""
    if reward_request_id is None:
        try:
            reward_request_id = RollPoll.model_validate_json(await request.body()).reward_request_id
        except ValueError:
            return RollTaskResult(errcode=UNKNOWN, errmsg="no reward_request_id in the request")
    job = _jobs(request).get(reward_request_id)
    if job is None:
        return RollTaskResult(errcode=UNKNOWN, errmsg=f"no job {reward_request_id!r} here")
    if job.answer is None:
        return RollTaskResult(errcode=RUNNING, errmsg="running", start_time=job.start_time)
    return job.answer


__all__ = ["RollJobs", "RollSubmit", "RollSubmitted", "RollTaskResult", "router"]
