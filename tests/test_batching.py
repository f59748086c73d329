"""Criteria batching (method ``batched``): one judge call answers all criteria of an item.

- pure: the prompt (prefix-cache order, numbered questions before the item), the reply grammar, and
  reading each criterion's probabilities at its answer position (a position that cannot be
  read fails that criterion only), then pitfalls and essential gates through assembly;
- the engine with an in-process batching judge, for failure paths, cache and dedup;
- the real CPU judges (``judges`` marker), chat and completion: one call per item, K
  criterion probabilities in (0, 1), the wire body accepted by vLLM.
"""

from __future__ import annotations

import asyncio
import math
import re
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from explaining import explain
from fakejudge import FakeJudge, RecordingObserver, Script

from rewardsvc.application.items import read_item
from rewardsvc.core import aggregate
from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import prompts
from rewardsvc.judges.answers import Unparseable, distribution
from rewardsvc.judges.asks import BatchedCriteria
from rewardsvc.judges.batching import Batch, batch_prompt, read_positions
from rewardsvc.judges.items import item_block
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.judges.methods import method_for
from rewardsvc.judges.questions import Question
from rewardsvc.judges.shapes import CHAT, shape_for
from rewardsvc.scoring.assemble import judge_outcome
from rewardsvc.scoring.engine import Engine
from rewardsvc.storage.cache import VerdictCache

ITEM = {
    "id": "i0",
    "prompt": "What is the capital of France?",
    "completion": "Paris is the capital of France.",
}


def rubric(judges: Sequence[str] = ("primary",), tag: str = "") -> Rubric:
    """Essential (gated), Likert, pitfall: every kind of criterion a batch must carry."""
    return Rubric.model_validate(
        {
            "id": "batching-test",
            "instructions": f"Grade the answer to the user's question.{tag}",
            "criteria": [
                {
                    "id": "correct",
                    "text": "The answer is factually correct.",
                    "category": "essential",
                    "gate": 0.5,
                },
                {
                    "id": "clear",
                    "text": "The answer is clear.",
                    "scale": "likert",
                    "likert_range": [1, 5],
                    "category": "important",
                },
                {"id": "rude", "text": "The answer is rude to the user.", "category": "pitfall"},
            ],
            "judges": list(judges),
        }
    )


def rollout(item: dict[str, Any] = ITEM) -> Rollout:
    got = read_item(0, item).rollout
    assert got is not None
    return got


def position(token: str, **alternatives: float) -> tuple[str, list[tuple[str, float]]]:
    """A decoded position: the token and its alternatives as ``token=probability``."""
    top = [(t, math.log(p)) for t, p in alternatives.items()]
    return token, [*top, (token, math.log(alternatives.get(token, 1.0)))]


def reply(*lines: list[tuple[str, list[tuple[str, float]]]]) -> list:
    """Positions of a reply: each answer's positions, joined by separator positions."""
    out: list = []
    for n, answer in enumerate(lines):
        if n:
            out.append(position(" "))
        out += answer
    return out


# ------------------------------------------------------------------ the prompt


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_prompt_asks_the_numbered_questions_before_the_item_in_the_rubric_prefix(
    api: str,
) -> None:
    rub = rubric()
    other = {**ITEM, "completion": "Lyon is the capital of France."}

    def text_of(batch: Batch) -> str:
        prompt = batch.prompt
        return prompt.messages[-1]["content"] if api == "chat" else prompt.text  # type: ignore[index,return-value]

    batch = batch_prompt(rub, rub.criteria, rollout(), shape_for(api))
    text, second = (
        text_of(batch),
        text_of(batch_prompt(rub, rub.criteria, rollout(other), shape_for(api))),
    )
    single = prompts.criterion_prompt(
        rub, rub.criteria[0], rollout(), prompts.Asking(method_for("logprob"), shape_for(api))
    )
    assert batch.prompt.messages is None or batch.prompt.messages[0] == single.messages[0]
    # Everything before the item is the same for every item of the rubric: the prefix cache
    # keeps the questions, and only the item and the instruction are computed per call.
    item = item_block(rollout())
    head = text[: text.index(item)]
    assert second.startswith(head) and not second.startswith(text[: len(head) + len(item)])
    places = [head.index(f"\n{k}. ") for k in (1, 2, 3)]
    assert places == sorted(places)
    assert "1. Criterion: The answer is factually correct." in head
    assert "2. Criterion: The answer is clear." in head and "from 1 (not at all) to 5" in head
    # A pitfall is asked as presence of the problem: yes means the problem is there.
    assert "3. Problem: The answer is rude to the user." in head
    assert "Does the response have this problem?" in head
    # One answer instruction for the batch, after the item, not one per question.
    tail = text[len(head) + len(item) :]
    assert "3 numbered questions above" in tail and "separated by single spaces" in head
    assert "Answer with yes or no only." not in text and "Answer (yes or no):" not in text
    assert batch.ids == ("correct", "clear", "rude")
    assert [q.choices for q in batch.questions] == [
        ("yes", "no"),
        ("1", "2", "3", "4", "5"),
        ("yes", "no"),
    ]
    if api == "completion":
        assert text.endswith("questions above, in order, on one line:\n")


def test_reply_pattern_admits_exactly_one_answer_per_question_in_order() -> None:
    rub = rubric()
    batch = batch_prompt(rub, rub.criteria, rollout(), CHAT)
    pattern = re.compile(batch.reply_pattern())
    assert pattern.fullmatch("yes 4 no")
    for wrong in ("yes 6 no", "yes no 4", " yes 4 no", "yes 4", "1:yes 4 no", "yes\n4\nno"):
        assert pattern.fullmatch(wrong) is None
    longest = "yes 5 yes"
    assert batch.reply_tokens() > len(longest)  # one token spells at least one character
    assert batch.alternatives(20) == 5  # the prefixes of the widest scale: 1..5


# ------------------------------------------------------------------ reading the reply


@pytest.mark.parametrize("api", ["chat", "completion"])
async def test_explain_shows_a_batched_judge_its_one_call(api: str) -> None:
    rub, item = rubric(), rollout()
    config = JudgeConfig(model="m", base_urls=["http://127.0.0.1:9/v1"], api=api)
    shown = await explain(rub, item, {"primary": config.model_copy(update={"method": "batched"})})
    batch = batch_prompt(rub, rub.criteria, item, shape_for(api))  # type: ignore[arg-type]
    seen = batch.prompt.messages if api == "chat" else batch.prompt.text
    assert shown == {"primary": {"correct+clear+rude": seen}}
    per_criterion = (await explain(rub, item, {"primary": config}))["primary"]
    assert list(per_criterion) == ["correct", "clear", "rude"]


def questions(batch: Batch) -> tuple[Question, ...]:
    return batch.questions


def test_each_answer_is_read_at_its_own_position_as_the_logprob_method_reads_it() -> None:
    rub = rubric()
    qs = questions(batch_prompt(rub, rub.criteria, rollout(), CHAT))
    first = position("yes", yes=0.7, no=0.2, y=0.05)
    second = position("4", **{"4": 0.5, "5": 0.3, "3": 0.2})
    third = position("no", no=0.9, yes=0.1)
    got = read_positions(qs, reply([first], [second], [third]))
    assert got[0] == distribution(qs[0], first[1])
    assert got[1] == distribution(qs[1], second[1])
    assert got[2] == distribution(qs[2], third[1])
    probs, _, _ = got[0]
    assert probs["yes"] == pytest.approx(0.7 / 0.9)  # renormalized over the scale
    assert got[1][1] == pytest.approx((0.5 * 3 + 0.3 * 4 + 0.2 * 2) / 4)


def test_a_token_that_spans_the_separator_is_read_without_it() -> None:
    rub = rubric()
    qs = questions(batch_prompt(rub, rub.criteria[::2], rollout(), CHAT))
    merged = [
        position("no", no=0.9, yes=0.1),
        (" yes", [(" yes", math.log(0.6)), (" no", math.log(0.4)), ("yes", math.log(0.3))]),
    ]
    first, second = read_positions(qs, merged)
    assert not isinstance(first, Unparseable) and not isinstance(second, Unparseable)
    assert first[0]["no"] == pytest.approx(0.9)
    assert second[0]["yes"] == pytest.approx(0.6)


def test_an_unreadable_position_fails_that_criterion_only() -> None:
    rub = rubric()
    qs = questions(batch_prompt(rub, rub.criteria, rollout(), CHAT))
    got = read_positions(
        qs,
        reply(
            [position("yes", yes=0.8, no=0.2)],
            # No scale token among the alternatives (e.g. logprobs cut short).
            [("7", [("7", 0.0)])],
            [position("no", no=0.6, yes=0.4)],
        ),
    )
    assert isinstance(got[1], Unparseable)
    assert not isinstance(got[0], Unparseable) and not isinstance(got[2], Unparseable)


def test_a_truncated_reply_fails_the_missing_criteria_only() -> None:
    rub = rubric()
    qs = questions(batch_prompt(rub, rub.criteria, rollout(), CHAT))
    got = read_positions(
        qs,
        reply([position("yes", yes=0.8, no=0.2)], []),
    )
    assert not isinstance(got[0], Unparseable)
    assert isinstance(got[1], Unparseable) and "answer 2" in str(got[1])
    assert isinstance(got[2], Unparseable) and "answer 3" in str(got[2])


def verdicts_of(results: list, ids: Sequence[str]) -> dict[str, tuple[Verdict, str]]:
    out: dict[str, tuple[Verdict, str]] = {}
    for cid, r in zip(ids, results, strict=True):
        if isinstance(r, Unparseable):
            out[cid] = (Verdict.failed(f"unparseable: {r}", kind="unparseable"), "call")
        else:
            out[cid] = (Verdict(score=r[1], variance=r[2], probs=r[0]), "call")
    return out


def test_pitfalls_and_essential_gates_apply_to_batched_answers() -> None:
    rub = rubric()
    batch = batch_prompt(rub, rub.criteria, rollout(), CHAT)

    def outcome(correct: float, rude: float) -> float | None:
        got = read_positions(
            batch.questions,
            reply(
                [position("yes", yes=correct, no=1 - correct)],
                [position("5", **{"5": 1.0})],
                [position("yes", yes=rude, no=1 - rude)],
            ),
        )
        return judge_outcome(rub, verdicts_of(got, batch.ids)).score

    clean = outcome(correct=0.9, rude=0.1)
    rude = outcome(correct=0.9, rude=0.9)
    assert clean is not None and rude is not None and rude < clean  # the pitfall pulls down
    scores = {"correct": 0.9, "clear": 1.0, "rude": 0.1}
    assert clean == pytest.approx(aggregate.judge_score(rub, scores)[0])
    gate = rub.criteria[0]
    gated = outcome(correct=0.3, rude=0.1)  # below the essential's gate: capped
    assert gated == pytest.approx(min(gate.cap, aggregate.judge_score(rub, scores)[0]))
    assert gated is not None and gated <= gate.cap < clean


def test_the_cache_identity_tells_batched_from_per_criterion_verdicts() -> None:
    base = JudgeConfig(model="m", base_urls=["http://127.0.0.1:9/v1"])
    per = Judge("j", base)
    batched = Judge("j", base.model_copy(update={"method": "batched"}))
    assert per.cache_identity() != batched.cache_identity()
    assert batched.batches_criteria and not per.batches_criteria


# ------------------------------------------------------------------ the engine (fake judge)


class BatchingStub:
    """An in-process judge with method ``batched``: ``answers`` maps a criterion id to its
    score, None for a position that could not be read; ``fail`` fails the whole call."""

    batches_criteria = True

    def __init__(self, answers: dict[str, float | None], fail: bool = False):
        self.name = "primary"
        self.answers = answers
        self.fail = fail
        self.calls: list[tuple[str, ...]] = []

    def cache_identity(self) -> str:
        return "stub:batched"

    async def ask(self, question: Any, *, deadline: float | None = None) -> dict[str, Verdict]:
        assert isinstance(question, BatchedCriteria), "a batching judge gets one call per item"
        criteria = question.criteria
        self.calls.append(tuple(c.id for c in criteria))
        await asyncio.sleep(0.01)
        if self.fail:
            failed = Verdict.failed("http_5xx: 500", kind="http_5xx")
            return {c.id: failed for c in criteria}
        out = {}
        for c in criteria:
            score = self.answers[c.id]
            if score is None:
                out[c.id] = Verdict.failed("unparseable: no answer", kind="unparseable")
            else:
                out[c.id] = Verdict(score=score, probs={}, prompt_tokens=100, completion_tokens=9)
        return out

    async def aclose(self) -> None:
        return None


def items(n: int) -> list:
    return [
        read_item(i, {"id": f"i{i}", "prompt": "Q?", "completion": f"answer {i}"}) for i in range(n)
    ]


async def test_engine_makes_one_call_per_item_and_counts_its_cost_once() -> None:
    judge = BatchingStub({"correct": 1.0, "clear": 0.5, "rude": 0.0})
    engine = Engine({"primary": judge}, cache=VerdictCache(max_entries=100))
    batch = await engine.score(rubric(), items(3))
    assert len(judge.calls) == 3 and all(c == ("correct", "clear", "rude") for c in judge.calls)
    assert batch.usage.judge_calls == 3
    assert batch.usage.prompt_tokens == 300 and batch.usage.completion_tokens == 27
    assert all(r.status == "ok" for r in batch.items)


async def test_a_failed_call_fails_every_criterion_with_its_kind() -> None:
    judge = BatchingStub({"correct": 1.0, "clear": 0.5, "rude": 0.0}, fail=True)
    batch = await Engine({"primary": judge}).score(rubric(), items(2))
    assert batch.usage.judge_calls == 2
    for item in batch.items:
        assert item.status == "judge_error" and item.reward is None
        kinds = {c.error_kind for c in item.judges["primary"].criteria.values()}
        assert kinds == {"http_5xx"}


async def test_an_unreadable_answer_fails_its_criterion_not_the_others() -> None:
    judge = BatchingStub({"correct": 1.0, "clear": None, "rude": 0.0})
    batch = await Engine({"primary": judge}).score(rubric(), items(1))
    (item,) = batch.items
    criteria = item.judges["primary"].criteria
    assert criteria["clear"].error_kind == "unparseable" and criteria["clear"].score is None
    assert criteria["correct"].score == 1.0 and criteria["rude"].score == 0.0
    # As with per-criterion calls, a judge with a failed criterion gives no score: never a 0.
    assert item.status == "judge_error" and item.reward is None


async def test_a_partial_cache_hit_asks_again_and_serves_the_cached_criteria() -> None:
    judge = BatchingStub({"correct": 1.0, "clear": None, "rude": 0.0})
    engine = Engine({"primary": judge}, cache=VerdictCache(max_entries=100))
    await engine.score(rubric(), items(1))
    judge.answers["clear"] = 0.75
    batch = await engine.score(rubric(), items(1))
    assert len(judge.calls) == 2
    assert batch.usage.judge_calls == 1 and batch.usage.cache_hits == 2
    (item,) = batch.items
    assert item.status == "ok" and item.judges["primary"].criteria["clear"].score == 0.75
    again = await engine.score(rubric(), items(1))
    assert len(judge.calls) == 2 and again.usage.judge_calls == 0 and again.items[0].cached


async def test_identical_items_share_one_batched_call() -> None:
    judge = BatchingStub({"correct": 1.0, "clear": 0.5, "rude": 0.0})
    same = [read_item(i, {"id": f"i{i}", "prompt": "Q?", "completion": "A."}) for i in range(2)]
    batch = await Engine({"primary": judge}).score(rubric(), same)
    assert len(judge.calls) == 1 and batch.usage.judge_calls == 1
    assert batch.items[0].reward is not None
    assert batch.items[0].reward == batch.items[1].reward


async def test_judge_fails_every_criterion_of_a_failed_call_and_reports_one_call() -> None:
    observer = RecordingObserver()
    with FakeJudge(Script(default="500")) as fake:
        config = JudgeConfig(
            model="fake", base_urls=[fake.url], method="batched", retries=0, timeout_s=5
        )
        judge = Judge("primary", config, observer=observer)
        rub = rubric()
        try:
            got = await judge.ask(BatchedCriteria.of(rub, rub.criteria, rollout()))
        finally:
            await judge.aclose()
        assert fake.script.requests == 1
    assert set(got) == {"correct", "clear", "rude"}
    assert {v.error_kind for v in got.values()} == {"http_5xx"}
    assert all(v.score is None for v in got.values())
    assert [v.error_kind for _, v in observer.calls] == ["http_5xx"]


async def test_judge_refuses_a_batch_that_cannot_fit_its_context_without_calling() -> None:
    config = JudgeConfig(
        model="m", base_urls=["http://127.0.0.1:9/v1"], method="batched", max_context_tokens=64
    )
    judge = Judge("primary", config)
    rub = rubric()
    got = await judge.ask(BatchedCriteria.of(rub, rub.criteria, rollout()))
    await judge.aclose()
    assert {v.error_kind for v in got.values()} == {"context_overflow"}


# ------------------------------------------------------------------ the real CPU judges


@pytest.mark.judges
@pytest.mark.parametrize("name", ["primary", "secondary"])
async def test_real_judge_answers_every_criterion_in_one_call(
    cpu_pool: JudgePool, name: str
) -> None:
    # A long timeout: on a loaded shared machine a CPU judge call can take a minute, and
    # this test is about the wire and the reading, not about latency.
    config = cpu_pool.judges[name].model_copy(update={"method": "batched", "timeout_s": 600})
    pool = JudgePool(judges={name: config})
    # A fresh rubric version and run tag: nothing cached, here or in vLLM's prefix cache.
    rub = rubric(judges=[name], tag=f" (test {uuid.uuid4().hex[:8]})")
    engine = Engine(build_judges(pool), cache=VerdictCache(max_entries=100))
    try:
        answers = [
            "Paris is the capital of France.",
            "The capital of France is Berlin, you idiot.",
            "Lyon.",
        ]
        batch = await engine.score(
            rub,
            [read_item(i, {**ITEM, "id": f"i{i}", "completion": c}) for i, c in enumerate(answers)],
        )
    finally:
        await engine.aclose()
    # One call per item, each accepted by vLLM (a refused body would be an http_4xx).
    assert [(i.status, i.judges[name].error) for i in batch.items] == [("ok", None)] * 3
    assert batch.usage.judge_calls == len(answers)
    assert batch.usage.prompt_tokens > 0 and batch.usage.completion_tokens >= 3 * len(answers)
    for item in batch.items:
        outcome = item.judges[name]
        assert set(outcome.criteria) == {"correct", "clear", "rude"}
        for c in outcome.criteria.values():
            assert c.score is not None and 0.0 < c.score < 1.0
            assert c.p is not None and sum(c.p.values()) == pytest.approx(1.0)
        assert set(outcome.criteria["clear"].p or {}) == {"1", "2", "3", "4", "5"}
