"""Reasoning judges' failure paths and request fields, against a scripted vLLM-shaped server.

The replies are shaped as vLLM 0.32 sends them for a server with ``--reasoning-parser``:
``message.reasoning`` beside ``message.content``, ``logprobs.content`` over every decoded
token (reasoning, ``</think>`` and answer), ``finish_reason`` ``length`` when ``max_tokens``
cut the reply. The happy paths run against real vLLM in ``test_judge_kinds_reasoning.py``.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fakejudge import free_port
from fastapi import FastAPI, Request
from pydantic import ValidationError
from test_api_support import INLINE_RUBRIC, ITEM, app_client, settings_for, write_library

from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import BatchedCriteria, CriterionOnItem
from rewardsvc.judges.judge import Judge

RUBRIC = Rubric(
    id="think",
    criteria=[
        {"id": "correct", "text": "The final answer is correct."},
        {"id": "shown", "text": "The response shows its working."},
    ],
    judges=["thinker"],
)
ROLLOUT = Rollout("What is 2 + 2?", "The answer is 4.", "4")
BUDGET = 8


def entry(token: str, top: dict[str, float] | None = None) -> dict[str, Any]:
    """One ``logprobs.content`` entry; ``top`` gives its alternatives' probabilities."""
    alternatives = top or {token: 1.0}
    return {
        "token": token,
        "logprob": math.log(alternatives.get(token, 1.0)),
        "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in alternatives.items()],
    }


def reply(
    thinking: list[str],
    answer: list[dict[str, Any]],
    *,
    ended: bool = True,
    finish: str = "stop",
    reasoning_tokens: int = 0,
) -> dict[str, Any]:
    """A chat reply: ``thinking`` tokens, ``</think>`` if ``ended``, then ``answer``."""
    tokens = [entry(t) for t in thinking] + ([entry("</think>")] if ended else []) + answer
    content = "".join(e["token"] for e in answer) or None
    return {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "reasoning": "".join(thinking),
                },
                "logprobs": {"content": tokens},
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": 50,
            "completion_tokens": len(tokens),
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
        },
    }


YES = entry("yes", {"yes": 0.75, "no": 0.25})
NO = entry("no", {"no": 0.6, "yes": 0.4})


class Scripted:
    """A judge server answering each request with the next scripted reply (the last one
    again when the script is spent), recording the request bodies."""

    def __init__(self, *replies: dict[str, Any]):
        self.replies = deque(replies)
        self.bodies: list[dict[str, Any]] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> dict[str, Any]:
            self.bodies.append(await request.json())
            return self.replies.popleft() if len(self.replies) > 1 else self.replies[0]

        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> Scripted:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "scripted judge did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def config(url: str, **fields: Any) -> JudgeConfig:
    base: dict[str, Any] = {
        "model": "fake",
        "base_urls": [url],
        "reasoning": {"budget_tokens": BUDGET},
        "retries": 3,
    }
    return JudgeConfig.model_validate({**base, **fields})


async def scored(server: Scripted, **fields: Any) -> Any:
    judge = Judge("thinker", config(server.url, **fields))
    try:
        return await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], ROLLOUT))
    finally:
        await judge.aclose()


@pytest.fixture
def overrun() -> Iterator[Scripted]:
    """A server that ignores the budget: the reply runs out of tokens inside its thinking."""
    with Scripted(reply(["hmm"] * 25, [], ended=False, finish="length")) as server:
        yield server


async def test_reasoning_that_runs_out_of_tokens_is_a_typed_failure_with_its_cost(
    overrun: Scripted,
) -> None:
    verdict = await scored(overrun)
    assert verdict.score is None and verdict.error_kind == "reasoning_budget"
    assert "budget of 8 tokens" in (verdict.error or "")
    # What the call cost is still counted; and it was not retried (it would think again).
    assert verdict.prompt_tokens == 50 and verdict.completion_tokens == 25
    assert len(overrun.bodies) == 1


async def test_reasoning_request_carries_the_budget_and_room_for_the_answer(
    overrun: Scripted,
) -> None:
    await scored(overrun)
    body = overrun.bodies[0]
    assert body["thinking_token_budget"] == BUDGET
    # The budget, room for a forced end of reasoning, and the one answer token.
    assert body["max_tokens"] == BUDGET + 16 + 1
    assert body["structured_outputs"] == {"choice": ["yes", "no"]}


async def test_batched_overrun_fails_every_criterion_with_the_kind(overrun: Scripted) -> None:
    judge = Judge("thinker", config(overrun.url, method="batched"))
    try:
        verdicts = await judge.ask(BatchedCriteria.of(RUBRIC, RUBRIC.criteria, ROLLOUT))
    finally:
        await judge.aclose()
    assert {v.error_kind for v in verdicts.values()} == {"reasoning_budget"}
    assert all(v.score is None for v in verdicts.values())


async def test_structured_overrun_is_the_same_typed_failure(overrun: Scripted) -> None:
    verdict = await scored(overrun, method="structured")
    assert verdict.score is None and verdict.error_kind == "reasoning_budget"


async def test_reasoning_longer_than_the_budget_is_an_overrun_even_if_it_ended() -> None:
    with Scripted(reply(["x"] * (BUDGET + 1), [YES])) as server:
        verdict = await scored(server)
    assert verdict.error_kind == "reasoning_budget"
    assert "9 tokens of reasoning" in (verdict.error or "")


async def test_a_judge_that_stops_inside_its_reasoning_has_no_answer() -> None:
    with Scripted(reply(["I", " think"], [], ended=False, finish="stop")) as server:
        verdict = await scored(server)
    assert verdict.score is None and verdict.error_kind == "unparseable"
    assert "stopped without an answer" in (verdict.error or "")


async def test_an_answer_glued_to_the_end_marker_is_not_read() -> None:
    glued = reply(["x"], [], ended=False)
    glued["choices"][0]["logprobs"]["content"].append(entry("</think>yes"))
    with Scripted(glued) as server:
        verdict = await scored(server)
    assert verdict.error_kind == "unparseable"


async def test_answer_is_read_after_the_reasoning_and_the_reasoning_returned() -> None:
    with Scripted(reply(["Let", " me", " see"], [YES], reasoning_tokens=3)) as server:
        verdict = await scored(server)
    assert verdict.ok, verdict.error
    assert verdict.score == pytest.approx(0.75)
    assert verdict.raw == "yes"
    assert verdict.reasoning == "Let me see" and verdict.reasoning_tokens == 3
    assert verdict.completion_tokens == 5


async def test_batched_answers_after_the_reasoning() -> None:
    answer = [YES, entry(" "), NO]
    with Scripted(reply(["a", "b"], answer)) as server:
        judge = Judge("thinker", config(server.url, method="batched"))
        try:
            verdicts = await judge.ask(BatchedCriteria.of(RUBRIC, RUBRIC.criteria, ROLLOUT))
        finally:
            await judge.aclose()
    assert verdicts["correct"].score == pytest.approx(0.75)
    assert verdicts["shown"].score == pytest.approx(0.4)
    # No server count of reasoning tokens: the positions before </think> are counted.
    assert {v.reasoning_tokens for v in verdicts.values()} == {2}
    assert {v.reasoning for v in verdicts.values()} == {"ab"}


async def test_judge_fields_are_sent_under_rewardsvc_own() -> None:
    with Scripted(reply([], [YES])) as server:
        await scored(
            server,
            reasoning=None,
            extra_body={"top_k": 5, "max_tokens": 999, "chat_template_kwargs": {"x": 1}},
            chat_template_kwargs={"enable_thinking": False},
        )
        body = server.bodies[0]
    assert body["top_k"] == 5
    assert body["max_tokens"] == 1  # rewardsvc's own field wins
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert "thinking_token_budget" not in body


async def test_a_plain_judge_sends_what_it_sent_before() -> None:
    with Scripted(reply([], [YES], ended=False)) as server:
        verdict = await scored(server, reasoning=None)
        body = server.bodies[0]
    assert verdict.ok and verdict.reasoning == "" and verdict.reasoning_tokens == 0
    assert set(body) == {
        "model",
        "messages",
        "max_tokens",
        "temperature",
        "logprobs",
        "top_logprobs",
        "structured_outputs",
    }


def test_cache_identity_holds_the_reasoning_settings() -> None:
    url = "http://127.0.0.1:9/v1"
    plain = Judge("j", config(url, reasoning=None)).cache_identity()
    eight = Judge("j", config(url)).cache_identity()
    sixteen = Judge("j", config(url, reasoning={"budget_tokens": 16})).cache_identity()
    kwargs = Judge("j", config(url, chat_template_kwargs={"enable_thinking": False}))
    extra = Judge("j", config(url, extra_body={"top_k": 5}))
    identities = {plain, eight, sixteen, kwargs.cache_identity(), extra.cache_identity()}
    assert len(identities) == 5
    assert set(json.loads(plain)) == {"judge", "model", "api", "method", "sampling", "prompts"}
    assert json.loads(sixteen)["reasoning"] == {"budget_tokens": 16, "parser": "deepseek_r1"}


def test_reasoning_needs_the_chat_api() -> None:
    with pytest.raises(ValidationError, match="need api: chat"):
        config("http://127.0.0.1:9/v1", api="completion")
    with pytest.raises(ValidationError, match="parser"):
        config("http://127.0.0.1:9/v1", reasoning={"budget_tokens": 8, "parser": "nope"})


async def test_the_reasoning_reaches_the_response_with_options_explain_only(
    tmp_path: Path,
) -> None:
    """Through the service: the criterion's reasoning under options.explain, none without
    it; the reasoning tokens are in the request's completion tokens either way."""
    with Scripted(reply(["Let", " me", " see"], [YES])) as server:
        pool = JudgePool.model_validate({"judges": {"primary": config(server.url).model_dump()}})
        settings = settings_for(write_library(tmp_path / "rubrics"))
        async with app_client(settings, pool) as (client, _, _):
            for explain in (True, False):
                body = {
                    "rubric": INLINE_RUBRIC,
                    "items": [ITEM],
                    "options": {"explain": explain, "use_cache": False},
                }
                reply_ = (await client.post("/v1/rewards", json=body)).json()
                result = reply_["results"][0]
                assert result["status"] == "ok", result
                criterion = result["judges"]["primary"]["criteria"]["short"]
                assert criterion["reasoning"] == ("Let me see" if explain else None)
                assert reply_["usage"]["completion_tokens"] == 5


async def test_the_thinking_budget_must_fit_the_context_beside_the_prompt() -> None:
    """A prompt that fits a plain judge's context but not with the reasoning budget is
    refused before the call (context_overflow), not sent to overflow on the server."""
    with Scripted(reply([], [YES], ended=False)) as server:
        fits = await scored(server, reasoning=None, max_context_tokens=300)
        refused = await scored(server, reasoning={"budget_tokens": 300}, max_context_tokens=300)
        sent = len(server.bodies)
    assert fits.ok, fits.error
    assert refused.error_kind == "context_overflow" and "(317 tokens)" in (refused.error or "")
    assert sent == 1
