"""One invariant across every way a reward leaves the service: a number is a real score or a
flagged stand-in, under every failure kind.

The cases are the product of every **surface** (the routes ``/v1/rewards``, ``/v1/groups``,
``/v1/preferences``, ``/openrlhf``, ``/slime`` (one row per reply format), ``/nemo-gym``,
ROLL's submit and poll, an ORS episode's answer tool, and every trainer adapter of
``clients/python``, called the way its trainer calls it) and every **failure kind** (judge
timeout, judge 5xx, judge garbage, grader deadline, grader worker busy, code grader's sandbox
unavailable, sandbox busy, Redis down, Redis slow, request deadline, drain; and ``healthy``,
the control). Each case scores two samples
of one prompt and reads back what the trainer would read: one :class:`Outcome` per sample,
its value and whether the trainer is told that the value is a stand-in (TRL: ``None``;
native routes: ``null``; OpenRLHF and veRL: ``rewardsvc_valid = 0``; slime:
``remove_sample`` or the reply format's own flag; NeMo Gym: ``mask_sample``; ROLL: no
``reward_score`` until its last job, after which ROLL writes its own 0 with a warning; ORS:
the stream's ``error`` event, which the ``openreward`` client raises; verifiers: the verdict
in ``state["rewardsvc"]``; ART: the trajectory left out). The invariant: every value that is
not flagged is a real score, i.e. the value the same surface gives for the same samples with
nothing failing (measured once per surface on a healthy rig; the fake judges answer every
prompt alike, so the prompt's case tag does not change it). A request the trainer sees fail
(an error status its retry handles, an exception) sends no number at all; an internal error
(500) never happens.

Every failure kind is crossed with every surface, the comparative ones included (they grade
a grader criterion per completion since issue 37). Under the two sandbox kinds no sample can
be scored (the sandbox is off, or its queue has no room): every sample must be flagged; a
null of a comparative route names its ``error_kind`` (that one under these two), and
``test_a_sandbox_failure_names_its_kind`` checks that every native route says which kind.

The objectives of a rubric (several rewards per sample) are crossed the same way in
``test_invariant_objectives``, which reuses this module's machinery.

The service runs in process under uvicorn (``faults.ServedApp``) with fake judges
(``fakejudge.py``); the Redis cases use a real ``redis-server`` (``redis_server.py``),
killed, or behind a proxy that delays every chunk (``faults.DelayProxy``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from fakejudge import FakeJudge, Script
from faults import DelayProxy, ServedApp
from redis_server import RedisServer
from test_api_support import fake_pool, settings_for, write_library

from rewardsvc.library.registry import Registry
from rewardsvc.server.app import create_app
from rewardsvc_client._adapt import Settings
from rewardsvc_client.agent import AgentRewarder
from rewardsvc_client.art import make_group_scorer
from rewardsvc_client.groups import (
    make_comparative_group_scorer,
    make_group_rm,
    trl_group_reward_func,
    verifiers_comparative_reward_func,
)
from rewardsvc_client.openrlhf import make_reward_func
from rewardsvc_client.slime import make_rm
from rewardsvc_client.trl import trl_reward_func
from rewardsvc_client.verifiers import verifiers_group_reward_func, verifiers_reward_func
from rewardsvc_client.verl import make_compute_score

# ------------------------------------------------------------------ the library

# The exponential schema: each nesting level doubles the validation work (anyOf
# tries the first branch, whose items recurse, and fails it on minItems). "pattern" applies
# to strings only, so it changes no verdict; it sends the schema to the service's schema
# worker, whose deadline is what this failure kind exercises.
EXPONENTIAL_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "items": {"$ref": "#"}, "minItems": 2},
        {"type": "array", "items": {"$ref": "#"}},
    ],
    "pattern": "^",
}
GRADED_JSON = {
    "id": "graded-json",
    "description": "Nested arrays, checked by a JSON Schema grader.",
    "criteria": [
        {
            "id": "nested",
            "text": "The reply is a nest of arrays.",
            "grader": {"type": "json", "extract": "none", "schema": EXPONENTIAL_SCHEMA},
        }
    ],
    "judges": ["primary"],
    "combine": "explicit",
}
GRADED_MATH = {
    "id": "graded-math",
    "description": "The boxed answer, checked by math-verify.",
    "criteria": [
        {
            "id": "answer",
            "text": "The boxed answer equals the reference.",
            "grader": {"type": "math", "extract": "boxed", "timeout_s": 1},
        }
    ],
    "requires_reference": True,
    "judges": ["primary"],
    "combine": "explicit",
}
# Two cases of competitive-programming style, inline: the items need no reference.
ADD_CASES = [{"input": "2 2\n", "output": "4\n"}, {"input": "5 7\n", "output": "12\n"}]
GRADED_CODE = {
    "id": "graded-code",
    "description": "The program, run in the sandbox on hidden cases.",
    "criteria": [
        {
            "id": "passes",
            "text": "The program prints the sum of the two integers it reads.",
            "grader": {"type": "io_cases", "cases": ADD_CASES, "wall_s": 5, "cpu_s": 2},
        }
    ],
    "judges": ["primary"],
    "combine": "explicit",
}
# Every nest of arrays conforms, at any depth: a shallow nest's score is the deep one's.
DEEP_NEST = "[" * 24 + "]" * 24
SHALLOW_NEST = "[[[]]]"
# math-verify works on this until its deadline (the hostile math answer).
HOSTILE_MATH = "\\boxed{9^{9^{9^{9}}}}"


def write_rubrics(folder: Path) -> Path:
    """tiny and strict (``test_api_support``) and the three grader rubrics."""
    write_library(folder)
    for rubric in (GRADED_JSON, GRADED_MATH, GRADED_CODE):
        (folder / f"{rubric['id']}.yaml").write_text(json.dumps(rubric))
    return folder


def write_ors_environments(folder: Path) -> list[Path]:
    """An ORS environment per rubric a probe names, its one task with the probe's
    reference; uncached, so that each case's answers reach its fault."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for probe in (judged(""), graded_json("", ""), graded_math(""), graded_code("")):
        name = ors_env_name(probe.rubric)
        (folder / f"{name}.jsonl").write_text(
            json.dumps({"prompt": probe.prompt, "reference": probe.reference}) + "\n"
        )
        env = {"name": name, "target": probe.rubric, "tasks": f"{name}.jsonl",
               "options": {"use_cache": False}}  # fmt: skip
        (folder / f"{name}.yaml").write_text(json.dumps(env))
        files.append(folder / f"{name}.yaml")
    return files


# ------------------------------------------------------------------ what a case scores


@dataclass(frozen=True)
class Probe:
    """Two samples of one prompt, scored against ``rubric``."""

    rubric: str
    prompt: str
    completions: tuple[str, str]
    reference: str


def judged(tag: str) -> Probe:
    """Samples for the judges; ``tag`` keeps them out of every other case's cache."""
    return Probe("tiny", f"What is 2+2? (case {tag})", ("4", "It is 4."), "4")


def graded_json(tag: str, completion: str) -> Probe:
    """Samples for the JSON Schema grader."""
    return Probe("graded-json", f"Nest some arrays (case {tag}).", (completion, completion), "-")


def graded_math(tag: str) -> Probe:
    """Right answers for the math grader."""
    return Probe("graded-math", f"What is 2+2? (case {tag})", ("\\boxed{4}", "So \\boxed{4}."), "4")


def graded_code(tag: str) -> Probe:
    """A right program (scores 1) and a wrong one (right on one case of two: 0.5, so that
    a 0 put in place of a failure is not a real score) for the sandboxed grader."""
    right = f"```python\n# case {tag}\nprint(sum(map(int, input().split())))\n```"
    wrong = f"```python\n# case {tag}\nprint(4)\n```"
    return Probe("graded-code", f"Add two integers (case {tag}).", (right, wrong), "-")


@dataclass
class Outcome:
    """One sample as the trainer reads it: its value, and whether it is flagged as a
    stand-in in the trainer's own way."""

    value: float | None
    flagged: bool


@dataclass
class Answer:
    """What a surface gave for a probe: the outcomes (none when the trainer saw the
    request fail) and, when it failed, how."""

    outcomes: list[Outcome]
    failure: str | None = None
    kinds: list[str | None] | None = None
    """The comparative routes: the ``error_kind`` their result gives each null sample."""


RETRYABLE = {408, 429, 502, 503, 504}
"""Error statuses a trainer's retry (or the client's) handles: the documented failures."""


def no_answer(why: str, status: int | None = None) -> Answer:
    """A request the trainer sees fail (its error path runs; no number reaches it). An HTTP
    failure must be one a retry handles: a 500 is a crash, a 4xx a broken case."""
    assert status is None or status in RETRYABLE, f"HTTP {status}: {why}"
    return Answer([], why)


# ------------------------------------------------------------------ the surfaces

REQUEST_DEADLINE_S = 10.0
"""request_timeout_s of the rigs (the request-deadline kind sets its own, shorter)."""
ANSWER_WITHIN_S = REQUEST_DEADLINE_S + 20.0
"""How long a route's client waits for an answer."""
HOLD_S = 0.0
"""?hold= of the trainer routes: their trainer's retry loop (simulated) does the waiting."""
RESEND_WAIT_S = 0.3
"""judge_error_wait of the adapters (their defaults, 100-150 s, are for real outages); with
judge_error_retries 0 where an adapter takes it, so that they re-send within it only."""
RETRY_AFTER_S = (0, 0)
"""retry_after_s of the rigs: a draining rig's 503 says "come back at once" (the adapters
floor a wait at 0.1 s) instead of 1 to 4 s. The adapters still re-send until their own
timeout (``CLIENT_TIMEOUT_S``) has passed, so a drain case's time is that and its fresh rig's
start, not the Retry-After."""
CLIENT_TIMEOUT_S = "5"
"""REWARDSVC_TIMEOUT of the adapters: their HTTP timeout and how long they wait out a
saturated service (a draining one answers 503 to their re-sends)."""

Call = Callable[[str, Probe], Awaitable[Answer]]


@dataclass(frozen=True)
class Surface:
    """A way rewards leave the service."""

    name: str
    call: Call


async def _post(url: str, path: str, body: Any, **params: Any) -> httpx.Response:
    """POST as a trainer's client does; a request the service leaves unanswered well past
    its own deadline fails the case (no trainer waits for ever)."""
    async with httpx.AsyncClient(base_url=url, timeout=ANSWER_WITHIN_S) as http:
        try:
            return await http.post(path, json=body, params=params)
        except httpx.TimeoutException:
            pytest.fail(
                f"{path}: no answer within {ANSWER_WITHIN_S:g} s "
                f"(the request deadline is {REQUEST_DEADLINE_S:g} s)"
            )


async def native_rewards(url: str, probe: Probe) -> Answer:
    items = [
        {"id": str(i), "prompt": probe.prompt, "completion": c, "reference": probe.reference}
        for i, c in enumerate(probe.completions)
    ]
    reply = await _post(url, "/v1/rewards", {"rubric": probe.rubric, "items": items})
    if reply.status_code != 200:
        return no_answer(f"HTTP {reply.status_code}: {reply.text[:300]}", reply.status_code)
    results = reply.json()["results"]
    return Answer([Outcome(r["reward"], r["reward"] is None) for r in results])


async def native_groups(url: str, probe: Probe) -> Answer:
    group = {
        "id": "g",
        "prompt": probe.prompt,
        "completions": list(probe.completions),
        "reference": probe.reference,
    }
    reply = await _post(url, "/v1/groups", {"rubric": probe.rubric, "groups": [group]})
    if reply.status_code != 200:
        return no_answer(f"HTTP {reply.status_code}: {reply.text[:300]}", reply.status_code)
    (result,) = reply.json()["results"]
    rewards = result["rewards"] or [None] * len(probe.completions)
    kinds = [result.get("error_kind") for r in rewards if r is None]
    return Answer([Outcome(r, r is None) for r in rewards], kinds=kinds)


async def native_preferences(url: str, probe: Probe) -> Answer:
    a, b = probe.completions
    pair = {"id": "p", "prompt": probe.prompt, "a": a, "b": b, "reference": probe.reference}
    reply = await _post(url, "/v1/preferences", {"rubric": probe.rubric, "pairs": [pair]})
    if reply.status_code != 200:
        return no_answer(f"HTTP {reply.status_code}: {reply.text[:300]}", reply.status_code)
    (result,) = reply.json()["results"]
    p = result["p_a_better"]
    kinds = [result.get("error_kind")] if p is None else []
    return Answer([Outcome(p, p is None)], kinds=kinds)


OPENRLHF_TRIES = 5  # OpenRLHF's _fetch_rewards_via_http: 5 tries, then it raises


async def openrlhf_route(url: str, probe: Probe) -> Answer:
    """OpenRLHF's HTTP reward fetch, one sample per request: up to 5 tries (an error status
    makes it try again), then it raises; it reads rewards and extra_logs."""

    async def sample(completion: str) -> Outcome | Answer:
        body = {
            "query": [probe.prompt + completion],
            "prompts": [probe.prompt],
            "labels": [probe.reference],
        }
        for _ in range(OPENRLHF_TRIES):
            reply = await _post(url, f"/openrlhf/{probe.rubric}", body, hold=HOLD_S)
            if reply.status_code == 200:
                data = reply.json()
                valid = data["extra_logs"]["rewardsvc_valid"][0]
                return Outcome(data["rewards"][0], valid == 0)
            assert reply.status_code in RETRYABLE, (reply.status_code, reply.text)
        return no_answer(f"OpenRLHF raised after {OPENRLHF_TRIES} tries: {reply.text[:300]}")

    return per_sample(await asyncio.gather(*(sample(c) for c in probe.completions)))


SLIME_TRIES = 10  # slime's remote_rm: 10 tries, then it raises (the rollout ends)


@dataclass(frozen=True)
class SlimeRow:
    """How slime reads one reply format of /slime: the query that asks for it, and the
    value and flag slime takes from the reply body. A bare number carries no flag, so any
    number in it must be a real score."""

    query: dict[str, str]
    read: Callable[[Any], Outcome | Answer]


def _slime_number(body: Any) -> Outcome:
    return Outcome(float(body), False)


def _slime_dict(body: Any) -> Outcome | Answer:
    # --reward-key reward; rewardsvc's dict format says valid: false for a stand-in, and
    # on the last try leaves the key out, so that slime's own lookup raises.
    if "reward" not in body:
        return no_answer(f"slime raised: no 'reward' key in {str(body)[:200]}")
    return Outcome(body["reward"], not body["valid"])


# One row per reply format of /slime (the service's default first); what a row reads is
# what the route documents for it (rewardsvc/server/compat.py): when the route changes a
# format (or its default), its row changes here, and every failure kind follows.
SLIME_ROWS: dict[str, SlimeRow] = {
    "default": SlimeRow({}, _slime_number),
    "number": SlimeRow({"format": "number"}, _slime_number),
    "dict": SlimeRow({"format": "dict"}, _slime_dict),
}


def slime_route(row: SlimeRow) -> Call:
    """slime's remote_rm for one reply format: up to 10 tries, then it raises."""

    async def call(url: str, probe: Probe) -> Answer:
        async def sample(completion: str) -> Outcome | Answer:
            body = {"prompt": probe.prompt, "response": completion, "label": probe.reference}
            for _ in range(SLIME_TRIES):
                reply = await _post(url, f"/slime/{probe.rubric}", body, hold=HOLD_S, **row.query)
                if reply.status_code == 200:
                    return row.read(reply.json())
                assert reply.status_code in RETRYABLE, (reply.status_code, reply.text)
            return no_answer(f"slime raised after {SLIME_TRIES} tries: {reply.text[:300]}")

        return per_sample(await asyncio.gather(*(sample(c) for c in probe.completions)))

    return call


async def nemo_gym_route(url: str, probe: Probe) -> Answer:
    async def sample(completion: str) -> Outcome | Answer:
        body = {
            "responses_create_params": {"input": probe.prompt},
            "response": {
                "output": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": completion}],
                    }
                ]
            },
            "expected_answer": probe.reference,
        }
        reply = await _post(url, f"/nemo-gym/{probe.rubric}/verify", body)
        if reply.status_code != 200:
            return no_answer(f"HTTP {reply.status_code}: {reply.text[:300]}", reply.status_code)
        data = reply.json()
        return Outcome(data["reward"], bool(data["mask_sample"]))

    return per_sample(await asyncio.gather(*(sample(c) for c in probe.completions)))


ROLL_TRIES = 5  # ROLL's multi_thread_request_reward_system: 5 jobs, then its own 0


async def roll_route(url: str, probe: Probe) -> Answer:
    """ROLL's remote reward loop: submit (5 tries) and poll a job; a job without a score is
    submitted again, 5 times, then ROLL writes its own 0 (a failure it logs)."""

    async def job(http: httpx.AsyncClient, body: dict[str, Any]) -> float | None:
        base = f"/roll/{probe.rubric}"
        for _ in range(5):
            reply = await http.post(f"{base}/submit_task", json=body)
            assert reply.status_code < 500 or reply.status_code in RETRYABLE, reply.text
            if reply.status_code == 200 and reply.json()["errcode"] == 0:
                break
        else:
            return None
        while True:
            answer = (await http.get(f"{base}/task_result", params=reply.json())).json()
            if answer["errcode"] == 0:
                return float(answer["reward_score"])
            if answer["errcode"] != 1:
                return None  # ROLL polls on to its deadline; this job gives no score
            await asyncio.sleep(0.05)

    async def sample(completion: str) -> Outcome | Answer:
        # timeout 15: a job holds 0 s, its judges' first failure ends it.
        body = {"prompt": probe.prompt, "response": completion, "timeout": 15,
                "reward_info": {"ground_truth": probe.reference}}  # fmt: skip
        async with httpx.AsyncClient(base_url=url, timeout=ANSWER_WITHIN_S) as http:
            for _ in range(ROLL_TRIES):
                reward = await job(http, body)
                if reward is not None:
                    return Outcome(reward, False)
        return no_answer(f"ROLL wrote its own 0 after {ROLL_TRIES} jobs without a score")

    return per_sample(await asyncio.gather(*(sample(c) for c in probe.completions)))


def ors_env_name(rubric: str) -> str:
    """The ORS environment of the rigs that scores with ``rubric``."""
    return f"ors-{rubric}"


async def ors_route(url: str, probe: Probe) -> Answer:
    """An ORS episode per sample, as the ``openreward`` client plays it: a session on the
    environment's task, the answer tool called with the sample; an ``error`` event is
    ``ToolFailed`` (no reward), a tool error no reward either."""

    async def sample(completion: str) -> Outcome | Answer:
        async with httpx.AsyncClient(base_url=url, timeout=ANSWER_WITHIN_S) as http:
            sid = _sse((await http.post("/create_session")).text)[0][1]
            env, headers = ors_env_name(probe.rubric), {"X-Session-ID": sid}
            where = {"split": "train", "index": 0, "env_name": env}
            opened = await http.post("/create", json=where, headers=headers)
            if opened.status_code != 200:
                return no_answer(
                    f"HTTP {opened.status_code}: {opened.text[:300]}", opened.status_code
                )
            body = {"name": "answer", "input": {"answer": completion}}
            reply = await http.post(f"/{env}/call", json=body, headers=headers)
            if reply.status_code != 200:
                return no_answer(f"HTTP {reply.status_code}: {reply.text[:300]}", reply.status_code)
        event, data = _sse(reply.text)[-1]
        if event == "error":
            return no_answer(f"ToolFailed: {data[:300]}")
        outcome = json.loads(data)
        if not outcome["ok"]:
            return no_answer(f"tool error: {outcome['error'][:300]}")
        return Outcome(outcome["output"]["reward"], False)

    return per_sample(await asyncio.gather(*(sample(c) for c in probe.completions)))


def _sse(text: str) -> list[tuple[str, str]]:
    """The events of an SSE stream."""
    found = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        if "event" in lines:
            found.append((lines["event"], lines.get("data", "")))
    return found


def per_sample(outcomes: list[Outcome | Answer]) -> Answer:
    """The answer of a surface called once per sample (concurrently, as trainers do): it
    failed when one of its requests failed (the trainer's error path ran for it)."""
    failed = [o for o in outcomes if isinstance(o, Answer)]
    if failed:
        return failed[0]
    return Answer([o for o in outcomes if isinstance(o, Outcome)])


async def raised(call: Awaitable[Answer]) -> Answer:
    """The adapter's answer; an exception is the trainer's error path (no number)."""
    try:
        return await call
    except Exception as exc:  # the trainer sees the exception: that is the failure path
        return no_answer(f"{type(exc).__name__}: {exc}", getattr(exc, "status_code", None))


async def trl_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        reward = trl_reward_func(url, probe.rubric, reference_column="answer")
        rewards = await reward(
            prompts=[probe.prompt] * 2,
            completions=list(probe.completions),
            answer=[probe.reference] * 2,
        )
        return Answer([Outcome(r, r is None) for r in rewards])  # TRL masks None

    return await raised(run())


async def trl_group_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        reward = trl_group_reward_func(url, probe.rubric, "answer", num_generations=2)
        rewards = await reward(
            prompts=[probe.prompt] * 2,
            completions=list(probe.completions),
            answer=[probe.reference] * 2,
        )
        return Answer([Outcome(r, r is None) for r in rewards])

    return await raised(run())


def _verl_outcome(result: dict[str, float]) -> Outcome:
    return Outcome(result["score"], result["rewardsvc_valid"] == 0.0)


async def verl_async_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        score = make_compute_score(
            url, probe.rubric, judge_error_retries=0, judge_error_wait=RESEND_WAIT_S
        )
        results = await asyncio.gather(
            *(
                score("src", c, probe.reference, {"question": probe.prompt})
                for c in probe.completions
            )
        )
        return Answer([_verl_outcome(r) for r in results])

    return await raised(run())


async def verl_batch_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        score = make_compute_score(
            url, probe.rubric, kind="batch", judge_error_retries=0, judge_error_wait=RESEND_WAIT_S
        )
        results = await asyncio.to_thread(
            score,
            ["src"] * 2,
            list(probe.completions),
            [probe.reference] * 2,
            [{"question": probe.prompt}] * 2,
        )
        return Answer([_verl_outcome(r) for r in results])

    return await raised(run())


async def openrlhf_file_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        reward_func = make_reward_func(
            url, probe.rubric, judge_error_retries=0, judge_error_wait=RESEND_WAIT_S
        )

        async def sample(completion: str) -> Outcome:  # one sample per call, in a thread
            info = await asyncio.to_thread(
                reward_func, [probe.prompt + completion], [probe.prompt], [probe.reference]
            )
            valid = info["extra_logs"]["rewardsvc_valid"][0]
            return Outcome(info["rewards"][0], valid == 0.0)

        return Answer(list(await asyncio.gather(*(sample(c) for c in probe.completions))))

    return await raised(run())


def _number(value: Any) -> float:
    return float(value.item()) if hasattr(value, "item") else float(value)


async def openrlhf_agent_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        async def sample(completion: str) -> Outcome:  # one agent instance per sample
            rewarder = AgentRewarder(
                Settings.resolve(url, probe.rubric), judge_error_wait=RESEND_WAIT_S
            )
            states = {
                "observation_text": probe.prompt,
                "action_text": completion,
                "label": probe.reference,
            }
            step = await rewarder.step(states)
            valid = step["extra_logs"]["rewardsvc_valid"]
            return Outcome(_number(step["rewards"]), valid == 0.0)

        return Answer(list(await asyncio.gather(*(sample(c) for c in probe.completions))))

    return await raised(run())


def slime_samples(probe: Probe) -> list[SimpleNamespace]:
    """slime ``Sample`` stand-ins: the attributes the adapters read and write."""
    return [
        SimpleNamespace(
            prompt=probe.prompt,
            response=c,
            label=probe.reference,
            metadata={},
            remove_sample=False,
        )
        for c in probe.completions
    ]


async def slime_rm_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        scorer = make_rm(url, probe.rubric, judge_error_wait=RESEND_WAIT_S)
        samples = slime_samples(probe)
        rewards = await asyncio.gather(*(scorer.rm(None, s) for s in samples))
        return Answer([Outcome(r, s.remove_sample) for r, s in zip(rewards, samples, strict=True)])

    return await raised(run())


async def slime_group_rm_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        scorer = make_group_rm(url, probe.rubric, judge_error_wait=RESEND_WAIT_S)
        samples = slime_samples(probe)
        rewards = await scorer.group_rm(None, samples)
        return Answer([Outcome(r, s.remove_sample) for r, s in zip(rewards, samples, strict=True)])

    return await raised(run())


def _verifiers_states(probe: Probe) -> list[dict[str, Any]]:
    return [{"answer": probe.reference} for _ in probe.completions]


def _verifiers_outcomes(rewards: list[float], states: list[dict[str, Any]]) -> Answer:
    # verifiers cannot mask: the stand-in is flagged in the rollout state it keeps.
    return Answer(
        [
            Outcome(r, s.get("rewardsvc", {}).get("reward") is None)
            for r, s in zip(rewards, states, strict=True)
        ]
    )


async def verifiers_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        reward = verifiers_reward_func(
            url, probe.rubric, judge_error_retries=0, judge_error_wait=RESEND_WAIT_S
        )
        states = _verifiers_states(probe)
        rewards = await asyncio.gather(
            *(
                reward(probe.prompt, c, probe.reference, s)
                for c, s in zip(probe.completions, states, strict=True)
            )
        )
        return _verifiers_outcomes(rewards, states)

    return await raised(run())


async def verifiers_group_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        reward = verifiers_group_reward_func(
            url, probe.rubric, judge_error_retries=0, judge_error_wait=RESEND_WAIT_S
        )
        states = _verifiers_states(probe)
        rewards = await reward(
            [probe.prompt] * 2, list(probe.completions), [probe.reference] * 2, states
        )
        return _verifiers_outcomes(rewards, states)

    return await raised(run())


async def verifiers_comparative_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        reward = verifiers_comparative_reward_func(
            url, probe.rubric, judge_error_wait=RESEND_WAIT_S
        )
        states = _verifiers_states(probe)
        rewards = await reward(
            [probe.prompt] * 2, list(probe.completions), [probe.reference] * 2, states
        )
        return _verifiers_outcomes(rewards, states)

    return await raised(run())


class Trajectory:
    """An ``art.Trajectory`` stand-in: what the ART adapters read and write."""

    def __init__(self, prompt: str, completion: str, reference: str) -> None:
        self.messages_and_choices = [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": completion},
        ]
        self.reward = math.nan  # ART's own default is 0.0; NaN shows an unset reward
        self.metrics: dict[str, float] = {}
        self.metadata = {"reference": reference}

    def messages(self) -> list[dict[str, str]]:
        return self.messages_and_choices


class TrajectoryGroup:
    """An ``art.TrajectoryGroup`` stand-in: exceptions are split from trajectories."""

    def __init__(
        self,
        trajectories: list[Any],
        *,
        metadata: Any = None,
        metrics: Any = None,
        logs: Any = None,
    ) -> None:
        self.trajectories = [t for t in trajectories if not isinstance(t, BaseException)]
        self.exceptions = [t for t in trajectories if isinstance(t, BaseException)]
        self.metadata, self.metrics, self.logs = metadata or {}, metrics or {}, logs or []


def art(make: Callable[[str, str], Callable[[Any], Awaitable[Any]]]) -> Call:
    """An ART ``after_each`` scorer: ART trains on the trajectories of the group it gets
    back; one left out (or a dropped group) is flagged."""

    async def call(url: str, probe: Probe) -> Answer:
        async def run() -> Answer:
            score = make(url, probe.rubric)
            trajectories = [Trajectory(probe.prompt, c, probe.reference) for c in probe.completions]
            scored = await score(TrajectoryGroup(list(trajectories)))
            kept = [] if scored is None else scored.trajectories
            return Answer(
                [
                    Outcome(t.reward, False) if any(t is k for k in kept) else Outcome(None, True)
                    for t in trajectories
                ]
            )

        return await raised(run())

    return call


SURFACES = [
    Surface("v1-rewards", native_rewards),
    Surface("v1-groups", native_groups),
    Surface("v1-preferences", native_preferences),
    Surface("openrlhf-route", openrlhf_route),
    *(Surface(f"slime-route-{name}", slime_route(row)) for name, row in SLIME_ROWS.items()),
    Surface("nemo-gym-route", nemo_gym_route),
    Surface("roll-route", roll_route),
    Surface("ors-route", ors_route),
    Surface("trl", trl_adapter),
    Surface("trl-group", trl_group_adapter),
    Surface("verl-async", verl_async_adapter),
    Surface("verl-batch", verl_batch_adapter),
    Surface("openrlhf-file", openrlhf_file_adapter),
    Surface("openrlhf-agent", openrlhf_agent_adapter),
    Surface("slime-rm", slime_rm_adapter),
    Surface("slime-group-rm", slime_group_rm_adapter),
    Surface("verifiers", verifiers_adapter),
    Surface("verifiers-group", verifiers_group_adapter),
    Surface("verifiers-comparative", verifiers_comparative_adapter),
    Surface("art", art(lambda u, r: make_group_scorer(u, r, judge_error_wait=RESEND_WAIT_S))),
    Surface(
        "art-comparative",
        art(lambda u, r: make_comparative_group_scorer(u, r, judge_error_wait=RESEND_WAIT_S)),
    ),
]

# ------------------------------------------------------------------ the failure kinds

JUDGE_TIMEOUT_S = 10.0
"""The fake judges' timeout in the pool (retries 0): room for a loaded machine."""


@dataclass
class Rig:
    """A running service over fake judges, and the script the judges follow."""

    served: ServedApp
    script: Script

    @property
    def url(self) -> str:
        """The service's base URL."""
        return self.served.url


@dataclass(frozen=True)
class Fault:
    """A failure kind: the service it needs, what it does to the rig for a case, and the
    samples a case scores under it (``healthy``: the same surface's samples with nothing
    failing, whose scores are the real ones)."""

    name: str
    probe: Callable[[str], Probe] = judged
    healthy: Callable[[str], Probe] = judged
    judge_behaviour: str = "ok"
    judge_delay_s: float = 0.0
    judge_timeout_s: float = JUDGE_TIMEOUT_S
    settings: dict[str, Any] = field(default_factory=dict)
    redis: str | None = None  # "down" or "slow"
    hostile_math: bool = False  # hostile answers keep the math worker busy meanwhile
    drain: bool = False  # the service drains mid-case (so each case needs its own)
    judge_settings: dict[str, Any] = field(default_factory=dict)  # for both fake judges
    rubrics: tuple[dict[str, Any], ...] = ()  # more rubrics in the library of its rig
    secondary_url: str | None = None  # the judge "secondary" there instead of the fake
    kind: str | None = None  # no sample can score: each is null with this error kind


FAULTS = [
    Fault("healthy"),
    Fault("judge-timeout", judge_behaviour="timeout", judge_delay_s=3.0, judge_timeout_s=0.5),
    Fault("judge-5xx", judge_behaviour="500"),
    Fault("judge-garbage", judge_behaviour="garbage"),
    Fault(
        "grader-deadline",
        probe=lambda tag: graded_json(tag, DEEP_NEST),
        healthy=lambda tag: graded_json(tag, SHALLOW_NEST),
        # The deep nest takes its worker far past any limit: a short one reaches the same
        # grader_timeout in a quarter of the default's time, on every retry of a surface.
        settings={"grader_timeout_s": 0.5},
    ),
    Fault("grader-busy", probe=graded_math, healthy=graded_math, hostile_math=True),
    # The code grader's sandbox: turned off, or a lane with no room to queue (every run is
    # refused, so the case's own runs are, deterministically).
    Fault(
        "sandbox-unavailable",
        probe=graded_code,
        healthy=graded_code,
        settings={"sandbox_backend": "none"},
        kind="sandbox_unavailable",
    ),
    Fault(
        "sandbox-busy",
        probe=graded_code,
        healthy=graded_code,
        settings={"sandbox_lanes": 1, "sandbox_queue": 0},
        kind="sandbox_busy",
    ),
    Fault("redis-down", redis="down"),
    Fault("redis-slow", redis="slow"),
    # Judges slower than the request's deadline, with timeouts longer than it.
    Fault(
        "request-deadline",
        judge_behaviour="timeout",
        judge_delay_s=3.0,
        settings={"request_timeout_s": 0.8},
    ),
    # SIGTERM's drain while the judges are still working on the case's samples.
    Fault(
        "drain",
        judge_behaviour="timeout",
        judge_delay_s=2.0,
        drain=True,
    ),
]


@contextlib.contextmanager
def running_rig(fault: Fault, folder: Path) -> Iterator[Rig]:
    """A service for ``fault``: fake judges (healthy until a case starts), the library,
    and a real Redis killed or slowed when the fault says so."""
    folder.mkdir(parents=True, exist_ok=True)
    script = Script(record_bodies=False)
    with contextlib.ExitStack() as stack:
        fake = stack.enter_context(FakeJudge(script))
        library = write_rubrics(folder / "rubrics")
        for rubric in fault.rubrics:
            (library / f"{rubric['id']}.yaml").write_text(json.dumps(rubric))
        secondary = fault.secondary_url or fake.url
        pool = fake_pool(fake.url, secondary, fault.judge_timeout_s, **fault.judge_settings)
        settings: dict[str, Any] = {
            "request_timeout_s": REQUEST_DEADLINE_S,
            "retry_after_s": RETRY_AFTER_S,
            "ors_environments": write_ors_environments(folder / "ors"),
            **fault.settings,
        }
        redis = None
        if fault.redis is not None:
            redis = RedisServer(folder / "redis")
            redis.start()
            stack.callback(redis.stop)
            url = redis.url
            if fault.redis == "slow":
                # 0.1 s each way: a round trip of 0.2 s, inside the 0.25 s deadline of one
                # Redis operation; commands that queue behind others miss it (a loaded
                # Redis: slow, and now and then too slow).
                url = stack.enter_context(DelayProxy(redis.port, 0.1)).url
            settings["redis_url"] = url
        app = create_app(settings_for(library, **settings), registry=Registry(library, pool))
        served = stack.enter_context(ServedApp(app))
        # A refused rubric would turn its cases into 404s: every file must be served.
        listed = httpx.get(f"{served.url}/v1/rubrics", timeout=30).json()
        assert not listed["errors"], listed["errors"]
        if fault.redis == "down" and redis is not None:
            redis.kill()
        yield Rig(served, script)


class Rigs:
    """The services of the cases: one per failure kind, kept while the cases after it (the
    cases run fault by fault) need the same one (:meth:`get`), and a fresh one for each
    case that drains its service for good (:meth:`fresh`).

    Starting a service takes seconds (its grader workers' imports, its routes), stopping
    one a second or two: ``plan``, the services the module's cases will ask for in order
    (:func:`planned_rigs`), lets the next one start in a thread while the current one
    serves, and a service no longer needed stops in a thread. A service that fails to start
    fails the case that asks for it; one that fails to stop fails :meth:`close`."""

    def __init__(self, root: Path, plan: Sequence[Fault] = ()) -> None:
        self.root = root
        self.plan = list(plan)
        self.fault: Fault | None = None
        self.rig: Rig | None = None
        self._stack = contextlib.ExitStack()
        self._made = 0
        self._ahead: tuple[Fault, Future[tuple[Rig, contextlib.ExitStack]]] | None = None
        self._stopping: list[Future[None]] = []
        self._threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="rigs")

    def get(self, fault: Fault) -> Rig:
        """The running rig of ``fault`` (the previous kind's is stopped first)."""
        if self.fault is not fault or self.rig is None:
            self._stop_shared()
            self.rig, self._stack = self._take(fault)
            self.fault = fault
        return self.rig

    @contextlib.contextmanager
    def fresh(self, fault: Fault) -> Iterator[Rig]:
        """A rig of ``fault`` that no other case used, stopped after the block."""
        rig, stack = self._take(fault)
        try:
            yield rig
        finally:
            self._stopping.append(self._threads.submit(stack.close))

    def _take(self, fault: Fault) -> tuple[Rig, contextlib.ExitStack]:
        """A started rig of ``fault`` (the one started ahead, if it is of ``fault``); then
        the next planned rig starts."""
        if self._ahead is not None and self._ahead[0] is fault:
            starting, self._ahead = self._ahead[1], None
        else:
            starting = self._start(fault)
        if self.plan and self.plan[0] is fault:
            self.plan.pop(0)
        started = starting.result()
        if self.plan and self._ahead is None:
            self._ahead = (self.plan[0], self._start(self.plan[0]))
        return started

    def _start(self, fault: Fault) -> Future[tuple[Rig, contextlib.ExitStack]]:
        self._made += 1
        folder = self.root / f"{fault.name}-{self._made}"

        def start() -> tuple[Rig, contextlib.ExitStack]:
            stack = contextlib.ExitStack()
            return stack.enter_context(running_rig(fault, folder)), stack

        return self._threads.submit(start)

    def _stop_shared(self) -> None:
        stack, self._stack = self._stack, contextlib.ExitStack()
        self._stopping.append(self._threads.submit(stack.close))
        self.fault = self.rig = None

    def close(self) -> None:
        """Stop every rig (one started ahead that no case took as well)."""
        self._stop_shared()
        if self._ahead is not None:
            self._stopping.append(self._threads.submit(self._ahead[1].result()[1].close))
            self._ahead = None
        stopping, self._stopping = self._stopping, []
        self._threads.shutdown(wait=True)
        for stopped in stopping:
            stopped.result()


def planned_rigs(request: pytest.FixtureRequest) -> list[Fault]:
    """The rigs the session's cases in the requesting module will ask :class:`Rigs` for, in
    order: one per run of cases of a failure kind, one per case of a kind that drains."""
    plan: list[Fault] = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        fault = callspec.params.get("fault") if callspec is not None else None
        if getattr(item, "module", None) is not request.module or not isinstance(fault, Fault):
            continue
        if fault.drain or not plan or plan[-1] is not fault:
            plan.append(fault)
    return plan


@pytest.fixture(scope="module")
def rigs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Rigs]:
    """The services of the failure kinds, and the drain cases' own (:class:`Rigs`)."""
    kept = Rigs(tmp_path_factory.mktemp("rigs"), planned_rigs(request))
    yield kept
    kept.close()


@pytest.fixture(scope="module")
def healthy_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """A service with nothing failing, for the real scores."""
    with running_rig(FAULTS[0], tmp_path_factory.mktemp("healthy-reference")) as running:
        yield running


_real: dict[tuple[str, str], list[float]] = {}


async def real_scores(rig: Rig, surface: Surface, probe: Probe) -> list[float]:
    """What ``surface`` gives for ``probe``'s samples on a healthy service (every one a
    number, none flagged); measured once per surface and rubric."""
    key = (surface.name, probe.rubric)
    if key not in _real:
        answer = await surface.call(rig.url, probe)
        assert answer.failure is None, answer.failure
        assert answer.outcomes and not any(o.flagged for o in answer.outcomes), answer
        assert all(isinstance(o.value, float) for o in answer.outcomes), answer
        _real[key] = [float(o.value) for o in answer.outcomes]  # type: ignore[arg-type]
    return _real[key]


# ------------------------------------------------------------------ running a case


async def _hostile_math(url: str, tag: str, requests: int = 3) -> None:
    """Requests whose answers keep the math worker busy until their deadline."""
    items = [
        {
            "id": str(i),
            "prompt": f"Compute ({tag} {i})",
            "completion": HOSTILE_MATH,
            "reference": "1",
        }
        for i in range(2)
    ]
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        await asyncio.gather(
            *(
                http.post("/v1/rewards", json={"rubric": "graded-math", "items": items})
                for _ in range(requests)
            )
        )


async def _judge_calls(script: Script, more_than: int) -> None:
    while script.requests <= more_than:
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def faulted(fault: Fault, rig: Rig, tag: str) -> AsyncIterator[None]:
    """The fault in force around one case (judge behaviour, hostile grader load)."""
    rig.script.default = fault.judge_behaviour
    rig.script.delay_s = fault.judge_delay_s
    hostile = None
    if fault.hostile_math:
        hostile = asyncio.ensure_future(_hostile_math(rig.url, tag))
        await asyncio.sleep(0.3)  # let the hostile answers reach the worker first
    try:
        yield
    finally:
        rig.script.default = "ok"
        rig.script.delay_s = 0.0
        if hostile is not None:
            await hostile


async def run_case(fault: Fault, rig: Rig, surface: Surface, probe: Probe) -> Answer:
    """The surface's answer for ``probe`` with ``fault`` in force."""
    async with faulted(fault, rig, probe.prompt):
        if not fault.drain:
            return await surface.call(rig.url, probe)
        before = rig.script.requests
        pending = asyncio.ensure_future(surface.call(rig.url, probe))
        await asyncio.wait_for(_judge_calls(rig.script, before), 30)
        drained = asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(
                rig.served.service.drain(0.2, answer_s=10.0), rig.served.loop
            )
        )
        answer = await asyncio.wait_for(pending, 60)
        await drained
        return answer


CASES = [
    pytest.param(fault, surface, id=f"{surface.name}-{fault.name}")
    for fault in FAULTS
    for surface in SURFACES
]


@pytest.fixture(autouse=True)
def _client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REWARDSVC_URL", "REWARDSVC_RUBRIC", "REWARDSVC_RUN", "REWARDSVC_FAILURE_SCORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REWARDSVC_TIMEOUT", CLIENT_TIMEOUT_S)


@pytest.mark.parametrize(("fault", "surface"), CASES)
async def test_no_number_unless_real(
    rigs: Rigs, healthy_rig: Rig, fault: Fault, surface: Surface
) -> None:
    tag = f"{surface.name}-{fault.name}-{uuid.uuid4().hex[:8]}"
    real = await real_scores(healthy_rig, surface, fault.healthy(tag))
    probe = fault.probe(tag)
    if fault.drain:
        with rigs.fresh(fault) as own:
            answer = await run_case(fault, own, surface, probe)
    else:
        answer = await run_case(fault, rigs.get(fault), surface, probe)

    if answer.failure is None:
        assert len(answer.outcomes) == len(real), answer
    if fault.kind is not None:
        scored = [o for o in answer.outcomes if not o.flagged]
        assert not scored, f"a number where the service could not score ({fault.kind}): {answer}"
    if answer.kinds is not None:  # a comparative route: each null names its kind
        assert None not in answer.kinds, f"a null without its error_kind: {answer}"
        assert set(answer.kinds) <= {fault.kind} or fault.kind is None, answer
    for index, outcome in enumerate(answer.outcomes):
        if outcome.flagged:
            continue  # a stand-in the trainer is told about
        assert outcome.value is not None, (index, answer)
        assert outcome.value == pytest.approx(real[index], abs=1e-9), (
            f"sample {index}: {outcome.value} is not a real score ({real[index]}) "
            "and is not flagged",
            answer,
        )


@pytest.mark.parametrize("fault", [pytest.param(f, id=f.name) for f in FAULTS if f.kind])
async def test_a_sandbox_failure_names_its_kind(rigs: Rigs, fault: Fault) -> None:
    """The nulls of the sandbox kinds say why: the criterion's ``error_kind`` on
    ``/v1/rewards``; the result's and each judge's ``error_kind`` (and the kind in the
    error's text) on ``/v1/groups`` and ``/v1/preferences``."""
    probe = fault.probe(f"kind-{uuid.uuid4().hex[:8]}")
    url = rigs.get(fault).url
    items = [{"id": str(i), "prompt": probe.prompt, "completion": c}
             for i, c in enumerate(probe.completions)]  # fmt: skip
    reply = await _post(url, "/v1/rewards", {"rubric": probe.rubric, "items": items})
    for result in reply.json()["results"]:
        assert result["reward"] is None, result
        criterion = result["judges"]["primary"]["criteria"]["passes"]
        assert criterion["error_kind"] == fault.kind, result
    group = {"id": "g", "prompt": probe.prompt, "completions": list(probe.completions)}
    reply = await _post(url, "/v1/groups", {"rubric": probe.rubric, "groups": [group]})
    (result,) = reply.json()["results"]
    assert result["rewards"] == [None, None] and fault.kind in result["error"], result
    assert result["error_kind"] == fault.kind, result
    assert {j["error_kind"] for j in result["judges"].values()} == {fault.kind}, result
    pair = {"id": "p", "prompt": probe.prompt, "a": probe.completions[0], "b": probe.completions[1]}
    reply = await _post(url, "/v1/preferences", {"rubric": probe.rubric, "pairs": [pair]})
    (result,) = reply.json()["results"]
    assert result["p_a_better"] is None and fault.kind in result["error"], result
    assert result["error_kind"] == fault.kind, result
    assert {j["error_kind"] for j in result["judges"].values()} == {fault.kind}, result
