"""Hostile judge replies (issue 36, "Integrity 3"): a damaged logprob is no score, a
hostile usage count breaks nothing, and a cached comparison is no judge call.

The rate-limit headers' bound is tested beside the limiter (``test_ratelimit.py``); the
invariant across every surface is ``test_invariant_hostile_judges.py``.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from hypothesis import assume, given
from hypothesis import strategies as st
from test_api_support import app_client, fake_pool, settings_for, write_library

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.results import Usage
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import pricing, prompts, questions
from rewardsvc.judges.answers import Unparseable, distribution
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.batching import read_positions
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.methods import method_for
from rewardsvc.judges.reasoning import Thinking
from rewardsvc.judges.shapes import CHAT, COMPLETION, shape_for, usage
from rewardsvc.server.metrics import PrometheusObserver

RUBRIC = Rubric.model_validate(
    {
        "id": "hostile",
        "criteria": [
            {"id": "correct", "text": "The answer is correct."},
            {"id": "clear", "text": "The answer is clear.", "scale": "likert"},
        ],
        "judges": ["primary"],
    }
)
BINARY = questions.criterion_question(
    RUBRIC, RUBRIC.criteria[0], method_for("logprob"), shape_for("chat")
)
ROLLOUT = Rollout("What is 2 + 2?", "4", "4")

# ------------------------------------------------------------------ item 5: logprobs

MISSING = object()
"""The logprob's key left out of the reply."""
# What a judge (or a proxy in front of it) may put where a logprob belongs. -inf is a
# real logprob (probability 0) on an alternative, never on the token that was decoded.
DAMAGED = st.sampled_from([math.nan, math.inf, 1e308, 0.5, None, "-0.1", True, {}, MISSING])
DECODED_ONLY = st.just(-math.inf)


def damage(entry: dict[str, Any], key: str, value: Any) -> None:
    """Put ``value`` at ``entry[key]`` (or leave the key out)."""
    if value is MISSING:
        entry.pop(key, None)
    else:
        entry[key] = value


def chat_reply(decoded: Any, yes: Any, lead: list[str] = ()) -> dict[str, Any]:
    """A chat reply that decoded "yes" (logprob ``decoded``; ``yes`` among the top ones,
    "no" at log 0.2), after the decoded tokens ``lead`` (a reasoning judge's)."""
    top = [{"token": "yes", "logprob": math.log(0.8)}, {"token": "no", "logprob": math.log(0.2)}]
    damage(top[0], "logprob", yes)
    answer = {"token": "yes", "logprob": math.log(0.8), "top_logprobs": top}
    damage(answer, "logprob", decoded)
    before = [{"token": t, "logprob": -0.1, "top_logprobs": []} for t in lead]
    choice = {
        "message": {"role": "assistant", "content": "yes"},
        "logprobs": {"content": [*before, answer]},
        "finish_reason": "stop",
    }
    return {"choices": [choice]}


def completion_reply(decoded: Any, yes: Any) -> dict[str, Any]:
    """The same answer from /completions (``top_logprobs`` keyed by token text)."""
    top: dict[str, Any] = {"yes": math.log(0.8), "no": math.log(0.2)}
    damage(top, "yes", yes)
    logprobs: dict[str, Any] = {"tokens": ["yes"], "top_logprobs": [top]}
    if decoded is not MISSING:
        logprobs["token_logprobs"] = [decoded]
    return {"choices": [{"text": "yes", "logprobs": logprobs, "finish_reason": "stop"}]}


def read_chat(reply: dict[str, Any]) -> Any:
    return distribution(BINARY, CHAT.first_top_logprobs(reply["choices"][0]))


def read_completion(reply: dict[str, Any]) -> Any:
    return distribution(BINARY, COMPLETION.first_top_logprobs(reply["choices"][0]))


def read_batched(reply: dict[str, Any]) -> Any:
    (read,) = read_positions([BINARY], CHAT.positions(reply["choices"][0]))
    if isinstance(read, Unparseable):
        raise read
    return read


THINKING = Thinking(budget=8, start="<think>", marker="</think>")


def read_thinking(reply: dict[str, Any]) -> Any:
    top, _ = THINKING.first(CHAT, reply["choices"][0], reply)
    return distribution(BINARY, top)


READERS = {
    "chat": (chat_reply, read_chat),
    "completion": (completion_reply, read_completion),
    "batched": (chat_reply, read_batched),
    "reasoning": (lambda d, y: chat_reply(d, y, ["<think>", "hm", "</think>"]), read_thinking),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_healthy_answer_reads_as_its_distribution(reader: str) -> None:
    build, read = READERS[reader]
    probs, mean, _ = read(build(HEALTHY, HEALTHY))
    assert probs == pytest.approx({"yes": 0.8, "no": 0.2}) and mean == pytest.approx(0.8)


HEALTHY = math.log(0.8)


@pytest.mark.parametrize("reader", sorted(READERS))
@given(
    decoded=st.one_of(st.just(HEALTHY), DAMAGED, DECODED_ONLY),
    top=st.one_of(st.just(HEALTHY), DAMAGED),
)
def test_a_damaged_logprob_of_the_answer_is_unparseable_never_a_score(
    reader: str, decoded: Any, top: Any
) -> None:
    """Before: the entry was dropped and the rest renormalised (reward 0.0, p(no) = 1)."""
    assume(decoded is not HEALTHY or top is not HEALTHY)
    # A completion's top map without the answer: the decoded token's logprob still has it.
    assume(not (reader == "completion" and top is MISSING and decoded is HEALTHY))
    build, read = READERS[reader]
    with pytest.raises(Unparseable):
        read(build(decoded, top))


def test_a_zero_probability_alternative_is_still_a_reading() -> None:
    top = [("yes", -math.inf), ("no", math.log(0.5)), ("no", math.log(0.5))]
    probs, mean, _ = distribution(BINARY, top)
    assert probs == {"yes": 0.0, "no": 1.0} and mean == 0.0


def nan_on_the_answer(reply: dict[str, Any]) -> None:
    """The fake's rewrite: the decoded answer's logprob (and its top entry's) is NaN."""
    for choice in reply["choices"]:
        logprobs = choice.get("logprobs") or {}
        if "content" in logprobs:
            answer = logprobs["content"][0]
            answer["logprob"] = math.nan
            for entry in answer["top_logprobs"]:
                if entry["token"] == answer["token"]:
                    entry["logprob"] = math.nan
        elif "tokens" in logprobs:
            logprobs["token_logprobs"][0] = math.nan
            logprobs["top_logprobs"][0][logprobs["tokens"][0]] = math.nan


@pytest.mark.parametrize("api", ["chat", "completion"])
async def test_a_nan_logprob_from_the_judge_is_an_unparseable_verdict(
    fake: FakeJudge, judges: list[Judge], api: prompts.Api
) -> None:
    fake.script.rewrite = nan_on_the_answer
    config = JudgeConfig(model="fake", base_urls=[fake.url], api=api, retries=0)
    judge = Judge("primary", config)
    judges.append(judge)
    for criterion in RUBRIC.criteria:
        verdict = await judge.ask(CriterionOnItem(RUBRIC, criterion, ROLLOUT))
        assert verdict.score is None and verdict.error_kind == "unparseable", verdict


# ------------------------------------------------------------------ item 20: usage counts

HOSTILE_COUNTS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
STORABLE = 2**32
"""The verdict cache stores counts below this (``storage.codec``)."""


def usage_reply(prompt: Any, cached: Any, completion: Any) -> dict[str, Any]:
    counts = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": completion},
    }
    return {"choices": [{"message": {"content": "yes"}}], "usage": counts}


@given(prompt=HOSTILE_COUNTS, cached=HOSTILE_COUNTS, completion=HOSTILE_COUNTS)
def test_hostile_usage_counts_are_read_as_counts_and_break_nothing(
    prompt: Any, cached: Any, completion: Any
) -> None:
    """Before: a negative count went on (the metrics observer raised on it, so every call
    of the judge became ``internal``); NaN, an infinity or a string raised at once."""
    reply = usage_reply(prompt, cached, completion)
    counts = [*usage(reply), *pricing.reply_tokens(reply)]
    assert all(type(c) is int and 0 <= c < STORABLE for c in counts), counts
    sent = (prompt, completion, prompt, cached, completion)
    for given_count, read in zip(sent, counts, strict=True):
        if type(given_count) is int and 0 <= given_count < 2**31:
            assert read == given_count  # a real count is read as it is
    verdict = Verdict(0.5, prompt_tokens=counts[0], completion_tokens=counts[1])
    PrometheusObserver().judge_call("hostile-usage", verdict)
    total = Usage()
    total.called(verdict)
    assert total.prompt_tokens == counts[0]


def negative_prompt_tokens(reply: dict[str, Any]) -> None:
    reply["usage"]["prompt_tokens"] = -5


async def test_a_negative_prompt_token_count_still_scores(fake: FakeJudge, tmp_path: Path) -> None:
    fake.script.rewrite = negative_prompt_tokens
    settings = settings_for(write_library(tmp_path / "rubrics"))
    item = {"id": "a", "prompt": "What is 2+2?", "completion": "4"}
    async with app_client(settings, fake_pool(fake.url, fake.url)) as (http, _, _):
        reply = await http.post("/v1/rewards", json={"rubric": "tiny", "items": [item]})
        metrics = await http.get("/metrics")
    assert reply.status_code == 200, reply.text
    (result,) = reply.json()["results"]
    assert result["status"] == "ok" and result["reward"] is not None, result
    assert reply.json()["usage"]["prompt_tokens"] == 0
    assert metrics.status_code == 200


# ------------------------------------------------------------------ item 21: cached comparisons

GROUP = {"id": "g", "prompt": "What is 2+2?", "completions": ["4", "5", "four"]}
PAIR = {"id": "p", "prompt": "What is 2+2?", "a": "4.0", "b": "22"}


REPEATED = [
    ("/v1/groups", {"rubric": "tiny", "groups": [GROUP]}),
    ("/v1/groups", {"rubric": "tiny", "groups": [GROUP], "options": {"method": "pairwise"}}),
    ("/v1/preferences", {"rubric": "tiny", "pairs": [PAIR]}),
]


async def test_a_repeated_comparison_counts_cache_hits_not_judge_calls(
    fake: FakeJudge, tmp_path: Path
) -> None:
    """Before: the repeat of a group asked the judges nothing and reported 8 judge_calls."""
    settings = settings_for(write_library(tmp_path / "rubrics"))
    async with app_client(settings, fake_pool(fake.url, fake.url)) as (http, _, _):
        for path, body in REPEATED:
            before = fake.script.requests
            first = await http.post(path, json=body)
            sent = fake.script.requests - before
            again = await http.post(path, json=copy.deepcopy(body))
            assert first.status_code == again.status_code == 200, (first.text, again.text)
            calls = first.json()["usage"]["judge_calls"]
            assert calls == sent > 0 and first.json()["usage"].get("cache_hits", 0) == 0
            assert fake.script.requests == before + sent  # the repeat asked the judges nothing
            repeat = again.json()["usage"]
            assert (repeat["judge_calls"], repeat.get("cache_hits")) == (0, calls), (path, repeat)
            assert repeat["calls_by_order"] == {} and repeat["prompt_tokens"] == 0
