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
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from rewardsvc.protocol.rewards import RewardOptions, RewardResult
from rewardsvc.server.compat import CriteriaOptionsDep, RunQuery, score_holding
from rewardsvc.server.errors import error_responses
from rewardsvc.server.service import Service, ServiceDep
from rewardsvc.server.trainer_text import label_fields, strip_trailing_special_tokens

ROLL_TIMEOUT_S = 300.0
"""ROLL's default job timeout (``reward_server_task_timeout``)."""
ANSWER_MARGIN_S = 15.0
"""A job's hold ends this long before its timeout (ROLL polls every 2 s, to timeout + 5 s)."""
FINISHED_TTL_S = 900.0
"""How long a finished job stays pollable."""

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
    task: asyncio.Task[RewardResult]
    start_time: str
    end_time: str | None = None
    finished_at: float | None = None

    def finish(self, _: object) -> None:
        """The task's done callback: when it ended."""
        self.end_time = datetime.now(UTC).isoformat()
        self.finished_at = time.monotonic()


@dataclass
class RollJobs:
    """The jobs of this process, by id."""

    jobs: dict[str, _Job] = field(default_factory=dict)

    def add(self, coroutine: Any) -> str:
        """Start scoring as a job; its id."""
        self._forget_old()
        job_id = uuid.uuid4().hex
        task = asyncio.get_running_loop().create_task(coroutine)
        job = _Job(task, datetime.now(UTC).isoformat())
        task.add_done_callback(job.finish)
        self.jobs[job_id] = job
        return job_id

    def _forget_old(self) -> None:
        now = time.monotonic()
        for job_id, job in list(self.jobs.items()):
            if job.finished_at is not None and now - job.finished_at > FINISHED_TTL_S:
                del self.jobs[job_id]


def _jobs(request: Request) -> RollJobs:
    jobs = getattr(request.app.state, "roll_jobs", None)
    if jobs is None:
        jobs = request.app.state.roll_jobs = RollJobs()
    return jobs


async def _score(
    scorer: Service, rubric: str, item: dict[str, Any], run: str | None, hold_s: float,
    options: RewardOptions,
) -> RewardResult:  # fmt: skip
    with scorer.held() as held:
        (result,) = await score_holding(scorer, rubric, [item], "response", run, hold_s, options)
        held.record()
    return result


router = APIRouter(tags=["trainer compatibility"])


@router.post(
    "/roll/{rubric}/submit_task",
    response_model=RollSubmitted,
    responses=error_responses(401, 402, 404, 413, 422, 429, trainer=True),
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
    """Start scoring one ROLL sample against the library rubric ``rubric`` (an unknown
    rubric is a 404 at once); the job is polled at ``task_result``."""
    scorer.target(rubric)
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
    job_id = _jobs(request).add(_score(scorer, rubric, item, run, hold, options))
    return RollSubmitted(errcode=0, reward_request_id=job_id)


def _dimensions(result: RewardResult) -> dict[str, dict[str, Any]]:
    """ROLL's per-dimension scores: the verdict, and each named objective the result has."""
    out: dict[str, dict[str, Any]] = {
        "rewardsvc": {"status": result.status, "uncertainty": result.uncertainty,
                      "flags": list(result.flags), "debug_info": {}},
    }  # fmt: skip
    for name, value in (getattr(result, "objectives", None) or {}).items():
        out[name] = {"score": value, "debug_info": {}}
    return out


def _answer(job: _Job) -> RollTaskResult:
    """The poll answer of a finished job."""
    answer = RollTaskResult(errcode=FAILED, start_time=job.start_time, end_time=job.end_time)
    error = job.task.exception()
    if error is not None:
        answer.errmsg = f"scoring failed: {error}"
        return answer
    result = job.task.result()
    answer.dimention_reward_score = _dimensions(result)
    if result.reward is not None:
        answer.errcode, answer.reward_score = DONE, result.reward
    else:
        answer.errcode = REJECTED if result.status == "rejected" else FAILED
        answer.errmsg = f"{result.status}: {result.error or 'no reward'}"
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
    id this process does not hold."""
    if reward_request_id is None:
        try:
            reward_request_id = RollPoll.model_validate_json(await request.body()).reward_request_id
        except ValueError:
            return RollTaskResult(errcode=UNKNOWN, errmsg="no reward_request_id in the request")
    job = _jobs(request).jobs.get(reward_request_id)
    if job is None:
        return RollTaskResult(errcode=UNKNOWN, errmsg=f"no job {reward_request_id!r} here")
    if not job.task.done():
        return RollTaskResult(errcode=RUNNING, errmsg="running", start_time=job.start_time)
    return _answer(job)


__all__ = ["RollJobs", "RollSubmit", "RollSubmitted", "RollTaskResult", "router"]
