"""Trainer compatibility routes: OpenRLHF and slime contracts.

The contract tests serve the app with a real uvicorn and call it the way each trainer's
current source does (read from OpenRLHF ``openrlhf/utils/agent.py``,
``SingleTurnAgentExecutor._fetch_rewards_via_http``, and slime
``slime/rollout/rm_hub/__init__.py``, ``remote_rm``): the same HTTP client (aiohttp),
the same JSON payload, ``raise_for_status`` then ``json()``, and the same reading of
the reply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from fakejudge import FakeJudge
from fastapi import FastAPI
from test_api_support import app_client, fake_pool, settings_for, uvicorn_server, write_library

from rewardsvc.core.pool import JudgePool
from rewardsvc.library.registry import Registry
from rewardsvc.protocol.rewards import (
    RewardOptions,
    RewardResponse,
    RewardResult,
    RubricRef,
    Usage,
)
from rewardsvc.server import compat
from rewardsvc.server.app import create_app
from rewardsvc.server.holding import HeldTries, kept_back
from rewardsvc.server.ledger import Holding, Ledger, held_size
from rewardsvc.server.trainer_text import response_from_query, strip_trailing_special_tokens
from rewardsvc_client._adapt import status_numbers

KEY = "trainer-key-42"

# A Qwen-style chat-templated prompt, as OpenRLHF's dataset renders it.
PROMPT = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
)


# ------------------------------------------------------------------ text extraction


@pytest.mark.parametrize(
    ("query", "prompt", "response"),
    [
        (PROMPT + "4<|im_end|>", PROMPT, "4"),
        (PROMPT + "4<|im_end|>\n<|endoftext|>", PROMPT, "4"),
        (PROMPT + "It is 4.</s>", PROMPT, "It is 4."),
        ("<bos>Q: hi\nA: hello<end_of_turn>\n<eos>", "<bos>Q: hi\nA: ", "hello"),
        ("Q: hi A: yes<|eot_id|>", "Q: hi A: ", "yes"),
        ("Q: 2+2? A: 4<｜end▁of▁sentence｜>", "Q: 2+2? A: ", "4"),
        # The round trip through the tokenizer changed the prompt: strip the common prefix.
        ("Q:  hi A: 4", "Q: hi A: ", " hi A: 4"),
        ("User: x\nAssistant: done", "User: x\nAssistant: ", "done"),
        ("no prompt given", "", "no prompt given"),
        # OpenRLHF cut the prompt from the left: only its end is in the query.
        (PROMPT[40:] + "4<|im_end|>", PROMPT, "4"),
        # Text that merely looks like a token inside the response stays.
        (PROMPT + "use <|im_end|> to end a turn.", PROMPT, "use <|im_end|> to end a turn."),
        # A BOS before the prompt, and a policy that repeats the prompt: everything after
        # the prompt's first occurrence is the response, the text before the repeat too.
        ("<s>" + PROMPT + "Sure. " + PROMPT + "5", PROMPT, "Sure. " + PROMPT + "5"),
    ],
)
def test_response_from_query(query: str, prompt: str, response: str) -> None:
    assert response_from_query(query, prompt) == response


def test_strip_special_tokens_on_hostile_text() -> None:
    # A backtracking pattern would take hours on this input; the loop takes milliseconds.
    hostile = " " * 200_000 + "x" + "<|a|>" * 10_000
    assert strip_trailing_special_tokens(hostile) == " " * 200_000 + "x"


# ------------------------------------------------------------------ fixtures


@pytest.fixture
def pool(fake: FakeJudge) -> JudgePool:
    # Both judges on one fake, so a scripted failure hits both.
    return fake_pool(fake.url, fake.url)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path / "rubrics")


@pytest.fixture
def served(library: Path, pool: JudgePool) -> Iterator[str]:
    """The service on a real uvicorn, with API keys set; yields its base URL with the key
    in the user info, which is how a trainer that only takes a URL authenticates."""
    settings = settings_for(library, api_keys=KEY)
    app = create_app(settings, registry=Registry(library, pool))
    with uvicorn_server(app) as url:
        yield url.replace("http://", f"http://trainer:{KEY}@")


# ------------------------------------------------------------------ OpenRLHF


async def openrlhf_remote_reward(
    url: str, queries: list[str], prompts: list[str], labels: list[str], pause_s: float = 1.0
) -> tuple[dict[str, Any], int]:
    """OpenRLHF's HTTP reward fetch: 5 tries, 1 s apart, aiohttp with a 180 s timeout; the
    reply JSON and how many tries it took (it raises after 5 failures)."""
    payload = {"query": queries, "prompts": prompts, "labels": labels}
    timeout = aiohttp.ClientTimeout(total=180)
    for attempt in range(1, 6):
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.post(url, json=payload) as response,
            ):
                response.raise_for_status()
                return await response.json(), attempt
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(pause_s)
    raise RuntimeError("Request error for 5 times")


def read_like_openrlhf(reply: dict[str, Any], n: int) -> dict[str, Any]:
    """What OpenRLHF's executor and experience builder take from the reply."""
    score = reply.get("scores")
    if score is None:
        score = reply.get("rewards")
    reward = reply.get("rewards")
    extra_logs = reply.get("extra_logs") or {}
    # Every value is a list as long as the query list; extra_logs values become tensors.
    assert isinstance(reward, list) and len(reward) == n
    assert isinstance(score, list) and len(score) == n
    for key, values in extra_logs.items():
        assert isinstance(values, list) and len(values) == n, key
        assert all(isinstance(v, int | float) and not isinstance(v, bool) for v in values), key
    assert all(isinstance(r, float) and 0.0 <= r <= 1.0 for r in reward)
    return {"reward": reward, "scores": score, "extra_logs": extra_logs}


async def test_openrlhf_contract_one_sample_per_request(served: str, fake: FakeJudge) -> None:
    keys: set[tuple[str, ...]] = set()
    for question, answer, label in [
        ("What is 2+2?", "4", "4"),
        ("Name a color.", "Blue, obviously!", ""),  # "" is OpenRLHF's label without a label key
        ("Say hi.", "hi", "hello"),
    ]:
        prompt = PROMPT.replace("What is 2+2?", question)
        query = prompt + answer + "<|im_end|>"
        reply, tries = await openrlhf_remote_reward(
            f"{served}/openrlhf/tiny", [query], [prompt], [label]
        )
        assert tries == 1
        read = read_like_openrlhf(reply, 1)
        keys.add(tuple(sorted(read["extra_logs"])))
    assert keys == {tuple(sorted(status_numbers(None)))}  # the python-file hook's keys
    assert fake.script.requests == 3 * 2 * 2  # samples x judges x criteria
    # The judge saw the response without the end-of-turn token.
    assert not any("Blue, obviously!<|im_end|>" in str(b) for b in fake.script.bodies)


async def test_openrlhf_contract_batched_request(served: str) -> None:
    prompts = [PROMPT, PROMPT.replace("2+2", "3+3"), PROMPT.replace("2+2", "1+1")]
    queries = [p + a + "<|im_end|>" for p, a in zip(prompts, ["4", "6", "3"], strict=True)]
    reply, _ = await openrlhf_remote_reward(
        f"{served}/openrlhf/tiny", queries, prompts, ["4", "6", "2"]
    )
    read_like_openrlhf(reply, 3)


async def test_openrlhf_judge_failure_is_held_until_judges_recover(
    served: str, fake: FakeJudge
) -> None:
    # The first scoring's 4 judge calls fail (a 400 is not retried by the backend and does
    # not open the circuit breaker): the route scores again after a pause, within the same
    # request, so OpenRLHF's first try gets the rewards.
    fake.script.queue.extend(["400"] * 4)
    query = PROMPT + "4<|im_end|>"
    reply, tries = await openrlhf_remote_reward(
        f"{served}/openrlhf/tiny", [query], [PROMPT], ["4"], pause_s=0.2
    )
    assert tries == 1
    read = read_like_openrlhf(reply, 1)
    assert read["extra_logs"]["rewardsvc_valid"] == [1.0]
    assert fake.script.requests == 8


async def test_openrlhf_503_body_then_flagged_on_the_last_try(
    library: Path, pool: JudgePool, fake: FakeJudge
) -> None:
    fake.script.default = "400"
    body = {"query": [PROMPT + "4"], "prompts": [PROMPT], "labels": [""]}
    async with app_client(settings_for(library), pool) as (http, _, _):
        for _ in range(4):  # OpenRLHF's tries 1 to 4: 503, so that it tries again
            reply = await http.post("/openrlhf/tiny?hold=0", json=body)
            assert reply.status_code == 503
        error = reply.json()
        assert error["error"] == "judge_error" and error["field"] == "query[0]"
        assert "retry" in error["message"]
        assert reply.headers["Retry-After"] == "1"
        # Its 5th and last try: a flagged failure reward instead of an error that would
        # leave the sample without any reward.
        reply = await http.post("/openrlhf/tiny?hold=0", json=body)
        assert reply.status_code == 200
        read = read_like_openrlhf(reply.json(), 1)
        assert read["reward"] == [0.0]
        assert read["extra_logs"]["rewardsvc_valid"] == [0.0]
        assert read["extra_logs"]["rewardsvc_judge_error"] == [1.0]
        # The count starts again for the same sample sent later.
        reply = await http.post("/openrlhf/tiny?hold=0", json=body)
        assert reply.status_code == 503


async def test_openrlhf_bad_requests(library: Path, pool: JudgePool, fake: FakeJudge) -> None:
    settings = settings_for(library, max_text_chars=100)
    async with app_client(settings, pool) as (http, _, _):
        reply = await http.post(
            "/openrlhf/tiny", json={"query": ["a", "b"], "prompts": ["a"], "labels": ["", ""]}
        )
        assert reply.status_code == 422 and reply.json()["field"] == "prompts"
        reply = await http.post("/openrlhf/tiny", json={"query": "a"})
        assert reply.status_code == 422 and reply.json()["field"] == "query"
        reply = await http.post("/openrlhf/nope", json={"query": ["a"]})
        assert reply.status_code == 404 and reply.json()["error"] == "unknown_rubric"
        # A malformed sample cannot be fixed by retrying, and a 422 would stop OpenRLHF: it
        # gets a flagged 0.0 at once.
        reply = await http.post(
            "/openrlhf/tiny", json={"query": ["q" + "x" * 200], "prompts": ["q"], "labels": [""]}
        )
        assert reply.status_code == 200
        read = read_like_openrlhf(reply.json(), 1)
        assert read["reward"] == [0.0]
        assert read["extra_logs"]["rewardsvc_rejected"] == [1.0]
        assert read["extra_logs"]["rewardsvc_valid"] == [0.0]
        reply = await http.post("/openrlhf/tiny", json={"query": [], "prompts": [], "labels": []})
        assert reply.status_code == 200 and reply.json()["rewards"] == []
    assert fake.script.requests == 0


# ------------------------------------------------------------------ slime


async def slime_remote_rm(url: str, sample: dict[str, Any]) -> Any:
    """slime's remote_rm: aiohttp, 120 s timeout, raise_for_status, the JSON is the reward."""
    payload = {"prompt": sample["prompt"], "response": sample["response"], "label": sample["label"]}
    connector = aiohttp.TCPConnector(limit=64, enable_cleanup_closed=True)
    timeout = aiohttp.ClientTimeout(total=120)
    async with (
        aiohttp.ClientSession(connector=connector, timeout=timeout) as session,
        session.post(url, json=payload) as resp,
    ):
        resp.raise_for_status()
        return await resp.json()


async def test_slime_contract_number(served: str) -> None:
    samples = [
        {"prompt": "What is 2+2?", "response": "4", "label": "4"},
        {
            "prompt": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is 2+2?"},
            ],
            "response": "4",
            "label": None,
        },
        {"prompt": "", "response": "anything", "label": None},  # slime's defaults
    ]
    for sample in samples:
        reward = await slime_remote_rm(f"{served}/slime/tiny", sample)
        # slime stores the reply as sample.reward; without --reward-key it must be a number.
        assert isinstance(reward, float) and 0.0 <= reward <= 1.0


async def test_slime_contract_dict_with_reward_key(served: str) -> None:
    sample = {"prompt": "What is 2+2?", "response": "4", "label": "4"}
    reward = await slime_remote_rm(f"{served}/slime/tiny?format=dict", sample)
    # slime reads it with --reward-key reward: sample.reward["reward"].
    assert isinstance(reward["reward"], float)
    assert set(reward) == {"reward", "valid", "uncertainty", "status", "flags", "cached"}
    assert reward["status"] == "ok" and reward["valid"] is True


async def test_slime_dict_judge_error_is_503_then_keyless_on_the_last_try(
    served: str, fake: FakeJudge
) -> None:
    fake.script.default = "400"
    sample = {"prompt": "What is 2+2?", "response": "4", "label": "4"}
    for _ in range(9):  # slime's tries 1 to 9
        with pytest.raises(aiohttp.ClientResponseError) as raised:
            await slime_remote_rm(f"{served}/slime/tiny?format=dict&hold=0", sample)
        assert raised.value.status == 503
    # The 10th: the verdict without a reward (it used to carry a flagged 0.0, which
    # --reward-key reward read as a real reward), so slime's reward lookup raises.
    reward = await slime_remote_rm(f"{served}/slime/tiny?format=dict&hold=0", sample)
    assert "reward" not in reward and reward["valid"] is False
    assert reward["status"] == "judge_error" and reward["error"]
    with pytest.raises(KeyError):
        reward["reward"]  # what slime's Sample.get_reward_value does with --reward-key


async def test_slime_bad_requests(library: Path, pool: JudgePool) -> None:
    async with app_client(settings_for(library), pool) as (http, _, _):
        reply = await http.post("/slime/tiny", json={"prompt": "x", "label": None})
        assert reply.status_code == 422 and reply.json()["field"] == "response"
        reply = await http.post("/slime/tiny", json={"prompt": 3, "response": "x"})
        assert reply.status_code == 422 and reply.json()["field"] == "prompt"
        reply = await http.post("/slime/tiny?format=xml", json={"response": "x"})
        assert reply.status_code == 422 and reply.json()["field"] == "format"
        reply = await http.post("/slime/nope", json={"response": "x"})
        assert reply.status_code == 404


async def test_compat_requires_the_key_when_keys_are_set(served: str, fake: FakeJudge) -> None:
    bare = served.replace(f"trainer:{KEY}@", "")
    with pytest.raises(aiohttp.ClientResponseError) as raised:
        await slime_remote_rm(f"{bare}/slime/tiny", {"prompt": "", "response": "x", "label": None})
    assert raised.value.status == 401
    assert fake.script.requests == 0


# ------------------------------------------------------------------ run, with a stub scorer


class RecordingScorer:
    """A Scorer that records each call's run and answers ok with reward 0.5."""

    def __init__(self) -> None:
        self.runs: list[str | None] = []
        self.ledger = Ledger(max_bytes=1 << 30, max_per_holder=100)

    def hold(self, value: Any, what: str) -> Holding:
        return self.ledger.hold(held_size(value), what)

    def held(self, holding: Holding) -> AbstractContextManager[HeldTries]:
        return kept_back()

    async def pause(self, seconds: float) -> bool:
        return True

    async def score_rubric(
        self,
        rubric_id: str,
        items: list[dict[str, Any]],
        options: RewardOptions,
        field_name: str = "items",
        *,
        run: str | None = None,
        planned: Any = None,
    ) -> RewardResponse:
        self.runs.append(run)
        return RewardResponse(
            rubric=RubricRef(id=rubric_id, version="v"),
            results=[RewardResult(id=str(i), reward=0.5, status="ok") for i in range(len(items))],
            usage=Usage(),
        )


def recording_app() -> tuple[httpx.AsyncClient, RecordingScorer]:
    """A client of the compat routes alone, on an app whose service records runs."""
    app = FastAPI()
    app.include_router(compat.router)
    scorer = RecordingScorer()
    app.state.service = scorer
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t"), scorer


async def test_compat_routes_pass_the_run_to_the_scorer() -> None:
    client, scorer = recording_app()
    async with client as http:
        body = {"query": [PROMPT + "4"], "prompts": [PROMPT], "labels": ["4"]}
        reply = await http.post("/openrlhf/tiny?run=exp-7", json=body)
        assert reply.json()["rewards"] == [0.5]
        reply = await http.post("/slime/tiny?run=exp-8", json={"response": "4"})
        assert reply.json() == 0.5
        await http.post("/slime/tiny", json={"response": "4"})
    assert scorer.runs == ["exp-7", "exp-8", None]


async def test_compat_routes_refuse_a_run_name_that_rewards_would_refuse() -> None:
    client, scorer = recording_app()
    async with client as http:
        reply = await http.post("/slime/tiny?run=exp 7;drop", json={"response": "4"})
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"] == ["query", "run"]
    assert scorer.runs == []
