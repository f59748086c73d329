"""A judge that judges, against real vLLM: the optional CPU judge ``qwen-1.5b``.

Qwen2.5-Coder-1.5B-Instruct, joined from its 22 PyPI parts (sha256-checked), converted
once in bfloat16 and served by ``deploy/cpu-judge/cpujudge.sh`` as the ``primary`` of
``deploy/cpu-judge/judges.qwen.yaml``. Unlike the tiny default judges it tells a right
short answer from a wrong one, which is checked here through rewardsvc's own logprob judge
and library rubric; and its tool calls come back parsed by vLLM's ``hermes`` parser, which
the agentic judges need.

Cost: the server starts before the first test here and stops after the last
(:class:`conftest.ExtraJudges`), about 1 min, plus about 2 min to fetch and convert the
model on a machine that never did; the tests themselves took 17 s on 2 shared cores (the
first constrained call builds the grammar over the 151k-token vocabulary, 5-25 s; a tool
call decodes ~25 tokens at ~0.35 s each): 76 s in all. The server holds 6-8 GB of RAM.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from test_api_support import app_client, settings_for

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.judge import Judge
from rewardsvc.library.registry import load_pool
from rewardsvc.library.yamlfile import load_file

pytestmark = [pytest.mark.judges, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
POOL = ROOT / "deploy" / "cpu-judge" / "judges.qwen.yaml"
RUBRIC = ROOT / "rubrics" / "short-answer-correctness.yaml"
SERVE_POOL = ROOT / "deploy" / "cpu-judge" / "judges.serve.yaml"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture
def qwen(qwen_server: None) -> JudgeConfig:
    """The pool entry that names the 1.5B (the server up)."""
    return load_pool(POOL).judges["primary"]


def test_serves_the_model_its_pool_entry_names(qwen: JudgeConfig) -> None:
    reply = httpx.get(f"{qwen.base_urls[0]}/models", timeout=30).json()
    (model,) = reply["data"]
    assert model["id"] == qwen.model == "qwen2.5-coder-1.5b-instruct"
    assert model["max_model_len"] == qwen.max_context_tokens == 4096


@pytest.mark.parametrize(
    ("question", "right", "wrong", "reference"),
    [
        ("What is 7 * 8?", "7 * 8 = 56.", "7 * 8 = 54.", "56"),
        (
            "What is the capital of France?",
            "The capital is Paris.",
            "The capital is Lyon.",
            "Paris",
        ),
    ],
)
async def test_logprob_verdict_says_yes_to_a_right_answer_and_no_to_a_wrong_one(
    qwen: JudgeConfig, question: str, right: str, wrong: str, reference: str
) -> None:
    rubric = load_file(RUBRIC, Rubric)
    (matches,) = [c for c in rubric.criteria if c.id == "final-answer-matches"]
    judge = Judge("primary", qwen)
    try:
        verdicts = [
            await judge.ask(CriterionOnItem(rubric, matches, Rollout(question, answer, reference)))
            for answer in (right, wrong)
        ]
    finally:
        await judge.aclose()
    for verdict in verdicts:
        assert verdict.ok, verdict.error
        assert verdict.probs is not None and set(verdict.probs) == {"yes", "no"}
    said_right, said_wrong = (v.probs for v in verdicts if v.probs is not None)
    assert said_right["yes"] > said_right["no"], said_right
    assert said_wrong["no"] > said_wrong["yes"], said_wrong


def test_tool_call_comes_back_parsed_by_the_hermes_parser(qwen: JudgeConfig) -> None:
    """``required``: vLLM constrains the reply to the parser's ``<tool_call>`` envelope and
    the parser turns it into ``tool_calls``; with ``auto`` this small model tends to write
    the call as a fenced JSON block instead, which stays text."""
    body = {
        "model": qwen.model,
        "messages": [{"role": "user", "content": "What is the weather in Paris right now?"}],
        "tools": [WEATHER],
        "tool_choice": "required",
        "temperature": 0,
        "max_tokens": 64,
    }
    reply = httpx.post(f"{qwen.base_urls[0]}/chat/completions", json=body, timeout=300)
    assert reply.status_code == 200, reply.text
    choice = reply.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert not choice["message"]["content"]
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["id"]
    assert call["function"]["name"] == "get_weather"
    assert "paris" in json.loads(call["function"]["arguments"])["city"].lower()


def readme_first_request() -> dict[str, object]:
    """The body of the README's first ``curl .../v1/rewards -d '...'`` example."""
    text = (ROOT / "README.md").read_text()
    found = re.search(r"curl -s localhost:8000/v1/rewards [^\n]*-d '(\{.*?\})'", text, re.S)
    assert found, "README.md has no curl example of /v1/rewards"
    return json.loads(found.group(1))


async def test_readme_first_example_follows_correctness(qwen_server: None) -> None:
    """What a newcomer sees first, on make serve's pool (the 1.5B beside Gemma): the right
    answer earns a reward, the wrong one and the injection almost none."""
    body = readme_first_request()
    async with app_client(settings_for(ROOT / "rubrics"), load_pool(SERVE_POOL)) as (http, *_):
        reply = await http.post("/v1/rewards", json=body, timeout=600)
    assert reply.status_code == 200, reply.text
    results = {r["id"]: r for r in reply.json()["results"]}
    assert all(r["status"] == "ok" for r in results.values()), results
    right, wrong, injection = (results[k]["reward"] for k in ("a", "w", "b"))
    assert right >= 0.6 and wrong <= 0.2 and injection <= 0.2, (right, wrong, injection)
    assert "injection_suspected" in results["b"]["flags"]
