"""Reasoning judges against real vLLM: the optional CPU judge ``smollm2-think``.

SmolLM2 with ``<think>``/``</think>`` in its vocabulary and a chat template that opens
thinking (``deploy/cpu-judge/derive.py``), served with ``--reasoning-parser deepseek_r1``.
The tiny model reasons badly and rarely closes its thinking: vLLM's thinking budget ends
it, which is what is proven here (the budget, the answer read after the reasoning and still
constrained, the reasoning returned and counted), not the model's judgement.
"""

from __future__ import annotations

from typing import Any

import pytest

from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import BatchedCriteria, CriterionOnItem
from rewardsvc.judges.judge import Judge

pytestmark = pytest.mark.judges

URL = "http://127.0.0.1:8103/v1"
BUDGET = 16
RUBRIC = Rubric(
    id="think",
    criteria=[
        {"id": "correct", "text": "The final answer is correct."},
        {"id": "shown", "text": "The response shows its working."},
        {"id": "short", "text": "The response is at most two sentences."},
    ],
    judges=["thinker"],
)
ROLLOUT = Rollout("What is 2 + 2?", "2 + 2 = 4. The answer is 4.", "4")


def thinker(**fields: Any) -> JudgeConfig:
    """The reasoning judge on smollm2-think. ``min_tokens`` (vLLM, through extra_body)
    keeps the tiny model from ending its turn inside its thinking: the budget then ends it."""
    config: dict[str, Any] = {
        "model": "smollm2-135m-think",
        "base_urls": [URL],
        "reasoning": {"budget_tokens": BUDGET, "parser": "deepseek_r1"},
        "extra_body": {"min_tokens": BUDGET},
        "retries": 0,
        "timeout_s": 120,
    }
    config.update(fields)
    return JudgeConfig.model_validate(config)


def spied(judge: Judge) -> list[dict[str, Any]]:
    """The request bodies ``judge`` sends, kept as they go."""
    bodies: list[dict[str, Any]] = []
    send = judge.backend.send

    async def spy(shape: Any, body: dict[str, Any], *args: Any, **kw: Any) -> Any:
        bodies.append(body)
        return await send(shape, body, *args, **kw)

    judge.backend.send = spy  # type: ignore[method-assign]
    return bodies


async def test_real_logprob_answer_is_read_after_the_reasoning_within_the_budget(
    think_server: None,
) -> None:
    judge = Judge("thinker", thinker())
    bodies = spied(judge)
    try:
        verdict = await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], ROLLOUT))
    finally:
        await judge.aclose()
    assert verdict.ok, verdict.error
    assert bodies[0]["thinking_token_budget"] == BUDGET
    assert bodies[0]["min_tokens"] == BUDGET
    assert bodies[0]["structured_outputs"] == {"choice": ["yes", "no"]}
    # The answer is the constrained one after </think>, the probabilities over the scale.
    assert verdict.raw in ("yes", "no")
    assert verdict.probs is not None and set(verdict.probs) == {"yes", "no"}
    assert sum(verdict.probs.values()) == pytest.approx(1.0)
    # The template opens thinking in the prompt (one token of the budget): the rest is
    # spent in the reply, and counted in its completion tokens with the answer.
    assert verdict.reasoning and "</think>" not in verdict.reasoning
    assert 0 < verdict.reasoning_tokens <= BUDGET
    assert verdict.completion_tokens >= verdict.reasoning_tokens + 2


async def test_real_batched_criteria_are_read_after_one_reasoning(think_server: None) -> None:
    judge = Judge("thinker", thinker(method="batched"))
    try:
        verdicts = await judge.ask(BatchedCriteria.of(RUBRIC, RUBRIC.criteria, ROLLOUT))
    finally:
        await judge.aclose()
    assert set(verdicts) == {"correct", "shown", "short"}
    for verdict in verdicts.values():
        assert verdict.ok, verdict.error
        assert verdict.raw in ("yes", "no")
        assert verdict.probs is not None and sum(verdict.probs.values()) == pytest.approx(1.0)
    reasonings = {v.reasoning for v in verdicts.values()}
    assert len(reasonings) == 1 and reasonings.pop()
    assert 0 < verdicts["correct"].reasoning_tokens <= BUDGET


async def test_real_zero_budget_ends_the_reasoning_at_once(think_server: None) -> None:
    judge = Judge("thinker", thinker(reasoning={"budget_tokens": 0}, extra_body={}))
    try:
        verdict = await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], ROLLOUT))
    finally:
        await judge.aclose()
    assert verdict.ok, verdict.error
    assert verdict.reasoning == "" and verdict.reasoning_tokens == 0
    assert verdict.raw in ("yes", "no")


async def test_real_chat_template_kwargs_turn_thinking_off(think_server: None) -> None:
    """enable_thinking false: the template closes the thinking in the prompt, so the judge
    answers at its first token and is read as a plain logprob judge."""
    config = thinker(reasoning=None, extra_body={}, chat_template_kwargs={"enable_thinking": False})
    judge = Judge("thinker", config)
    bodies = spied(judge)
    try:
        verdict = await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], ROLLOUT))
    finally:
        await judge.aclose()
    assert verdict.ok, verdict.error
    assert bodies[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert bodies[0]["max_tokens"] == 1 and "thinking_token_budget" not in bodies[0]
    assert verdict.completion_tokens == 1 and verdict.reasoning_tokens == 0


async def test_real_budget_on_a_server_without_a_reasoning_parser_is_a_typed_4xx(
    cpu_pool: JudgePool,
) -> None:
    """The plain SmolLM2 server has no --reasoning-parser: vLLM refuses the budget (400),
    and the verdict says so rather than scoring."""
    plain = cpu_pool.judges["primary"]
    config = plain.model_copy(update={"reasoning": thinker().reasoning, "retries": 0})
    judge = Judge("primary", config)
    try:
        verdict = await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], ROLLOUT))
    finally:
        await judge.aclose()
    assert verdict.score is None
    assert verdict.error_kind == "http_4xx"
    assert "thinking_token_budget" in (verdict.error or "")


@pytest.mark.parametrize("method", ["structured", "sampled"])
async def test_real_text_methods_answer_after_the_reasoning(
    think_server: None, method: str
) -> None:
    """The JSON (structured) or the sampled answers come after the reasoning, held to their
    schema or scale; the reasoning is counted from the decoded tokens (vLLM counts none
    when the template opened the thinking in the prompt)."""
    sampling = {"max_tokens": 64, "n": 3, "temperature": 0.7, "seed": 1}
    judge = Judge("thinker", thinker(method=method, sampling=sampling))
    bodies = spied(judge)
    try:
        verdict = await judge.ask(CriterionOnItem(RUBRIC, RUBRIC.criteria[0], ROLLOUT))
    finally:
        await judge.aclose()
    assert verdict.ok, verdict.error
    assert bodies[0]["thinking_token_budget"] == BUDGET
    assert bodies[0]["max_tokens"] == BUDGET + 16 + (64 if method == "structured" else 8)
    assert verdict.reasoning and "</think>" not in verdict.raw
    assert 0 < verdict.reasoning_tokens <= BUDGET
