"""Judge faults against the scripted fake: what each fault becomes, and what it does to breakers.

Trickled bytes, stalls, HTML and non-completion 200s, context-overflow 400s, deadlines
of the call and of the caller, cancellation, readiness and rotated API keys. The real
behaviours of vLLM (its overflow 400, its tokenizer) are tested in test_judges_real.py.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge, RecordingObserver, free_port

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import CriterionOnItem, Holistic
from rewardsvc.judges.backends import Backend, RetryPolicy
from rewardsvc.judges.breaker import BreakerPolicy
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.keys import KeySource

RUBRIC = Rubric(
    id="faults",
    criteria=[{"id": "correct", "text": "The final answer is correct."}],
    judges=["primary"],
)
CRITERION = RUBRIC.criteria[0]
ROLLOUT = Rollout("What is 2 + 2?", "4", "4")
FAST = RetryPolicy(initial_s=0.01, max_s=0.02, jitter_s=0.0)


class LimitedConfig(JudgeConfig):
    """A judge config with the context field the pool is asked to gain."""

    max_context_tokens: int | None = None


def make(
    made: list[Judge],
    *urls: str,
    threshold: int = 3,
    config_type: type[JudgeConfig] = JudgeConfig,
    **overrides: Any,
) -> tuple[Judge, RecordingObserver]:
    """A judge over ``urls`` with short backoffs, and the observer it reports to."""
    fields: dict[str, Any] = {"model": "fake", "base_urls": list(urls), "timeout_s": 5.0}
    fields.update(overrides)
    cfg = config_type(**fields)
    seen = RecordingObserver()
    policy = BreakerPolicy(threshold=threshold, cooldown_s=60)
    backend = Backend("j", cfg, retry=FAST, breaker=policy, observer=seen)
    j = Judge("j", cfg, backend, observer=seen)
    made.append(j)
    return j, seen


async def until(condition: Any, what: str) -> None:
    """Wait (bounded) until ``condition()`` holds: events on the fake's thread."""
    for _ in range(1500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


async def test_trickling_judge_is_cut_off_by_the_total_attempt_timeout(
    fake: FakeJudge, judges: list[Judge]
) -> None:
    # One space every 20 ms for 30 s would keep a per-read timeout of 0.5 s happy forever.
    fake.script.default = "trickle"
    fake.script.delay_s = 30.0
    fake.script.trickle_s = 0.02
    j, seen = make(judges, fake.url, threshold=1, timeout_s=0.5, retries=0)
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))
    assert v.score is None and v.error_kind == "timeout", v.error
    assert v.error is not None and v.error.startswith("timeout: no complete answer")
    assert j.backend.endpoints[0].breaker.state == "open"  # a trickler is a failing judge
    assert seen.breakers[-1] == ("j", j.backend.endpoints[0].url, True)
    await until(lambda: fake.script.disconnects == 1, "the trickled response was dropped")


async def test_trickle_that_finishes_in_time_scores(fake: FakeJudge, judges: list[Judge]) -> None:
    fake.script.queue.append("trickle")
    fake.script.delay_s = 0.1
    j, _ = make(judges, fake.url, timeout_s=5.0, retries=0)
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))
    assert v.ok and v.score == pytest.approx(0.8)  # the fake's P(yes)


@pytest.mark.parametrize("behaviour", ["html", "notjson"])
async def test_malformed_200_is_unparseable_retried_and_opens_the_breaker(
    fake: FakeJudge, judges: list[Judge], behaviour: str
) -> None:
    fake.script.default = behaviour
    j, seen = make(judges, fake.url, threshold=2, retries=1)
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))
    assert v.score is None and v.error_kind == "unparseable"
    assert v.error is not None and "answered 200 without a /chat/completions JSON body" in v.error
    assert fake.script.requests == 2  # retried once
    assert j.backend.endpoints[0].breaker.state == "open"
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))
    assert v.error_kind == "unavailable" and fake.script.requests == 2
    assert [k for _, k in ((n, c.error_kind) for n, c in seen.calls)] == [
        "unparseable",
        "unavailable",
    ]


async def test_html_200_quotes_the_page(fake: FakeJudge, judges: list[Judge]) -> None:
    fake.script.default = "html"
    j, _ = make(judges, fake.url, retries=0, api="completion")
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))
    assert v.error is not None and "/completions JSON body" in v.error
    assert "502 Bad Gateway" in v.error


async def test_context_overflow_400_is_not_retried_and_keeps_the_breaker_closed(
    fake: FakeJudge, judges: list[Judge]
) -> None:
    fake.script.default = "overflow"
    j, seen = make(judges, fake.url, threshold=1, retries=3)
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))
    assert v.score is None and v.error_kind == "context_overflow"
    # The text clients have read since the first release: a client error, with vLLM's words.
    assert v.error is not None and v.error.startswith("client_error: HTTP 400")
    assert "maximum context length" in v.error
    assert fake.script.requests == 1
    assert j.backend.endpoints[0].breaker.state == "closed"
    assert seen.errors("j", "context_overflow") == 1


async def test_overlong_prompt_is_refused_before_any_call(
    fake: FakeJudge, judges: list[Judge]
) -> None:
    j, seen = make(judges, fake.url, config_type=LimitedConfig, max_context_tokens=2048)
    assert (await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))).ok
    long = Rollout("Summarize.", "word " * 3000)
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, long))
    assert v.score is None and v.error_kind == "context_overflow"
    assert v.error is not None and v.error.startswith("context_overflow: the prompt")
    assert "context of 2048 tokens" in v.error
    assert fake.script.requests == 1  # only the short item was sent
    assert seen.errors("j", "context_overflow") == 1
    holistic = await j.ask(Holistic(RUBRIC, long))
    assert holistic.error_kind == "context_overflow" and fake.script.requests == 1


async def test_structured_output_budget_counts_against_the_context(
    fake: FakeJudge, judges: list[Judge]
) -> None:
    # The same item fits a one-token logprob answer but not 256 tokens of reasoning.
    rollout = Rollout("Q", "word " * 700)
    small, _ = make(judges, fake.url, config_type=LimitedConfig, max_context_tokens=1100)
    assert (await small.ask(CriterionOnItem(RUBRIC, CRITERION, rollout))).ok
    structured, _ = make(
        judges, fake.url, config_type=LimitedConfig, max_context_tokens=1100, method="structured"
    )
    v = await structured.ask(CriterionOnItem(RUBRIC, CRITERION, rollout))
    assert v.error_kind == "context_overflow" and "answer (256 tokens)" in (v.error or "")


async def test_caller_deadline_ends_a_stalled_call_and_counts_against_the_breaker(
    fake: FakeJudge, judges: list[Judge]
) -> None:
    fake.script.default = "stall"
    j, _ = make(judges, fake.url, threshold=1, timeout_s=30.0, retries=3)
    # A deadline well past the request's arrival (the machine may be busy), far before 30 s.
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT), deadline=time.monotonic() + 1.5)
    assert v.score is None and v.error_kind == "deadline", v.error
    assert v.error is not None and v.error.startswith("deadline: ")
    assert fake.script.requests == 1
    assert j.backend.endpoints[0].breaker.state == "open"
    await until(lambda: fake.script.disconnects == 1, "the stalled request was abandoned")


async def test_call_deadline_covers_the_wait_for_a_slot(
    fake: FakeJudge, judges: list[Judge]
) -> None:
    fake.script.default = "stall"
    j, _ = make(judges, fake.url, max_concurrency=1, timeout_s=30.0, retries=0)
    holder = asyncio.create_task(j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT)))
    await until(lambda: fake.script.requests == 1, "the first call holds the slot")
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT), deadline=time.monotonic() + 0.2)
    assert v.error_kind == "deadline" and "no free slot" in (v.error or "")
    assert fake.script.requests == 1  # never sent
    assert j.backend.endpoints[0].breaker.state == "closed"  # waiting is not the URL's fault
    holder.cancel()
    with pytest.raises(asyncio.CancelledError):
        await holder


async def test_no_backoff_past_the_deadline(fake: FakeJudge, judges: list[Judge]) -> None:
    fake.script.default = "429"
    fake.script.retry_after = 5.0
    j, _ = make(judges, fake.url, retries=3)
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT), deadline=time.monotonic() + 3.0)
    # Waiting 5 s as asked would end past the deadline: fail now with the real cause.
    assert v.error_kind == "rate_limited" and fake.script.requests == 1


async def test_own_call_deadline_applies_without_a_caller_deadline(
    fake: FakeJudge, judges: list[Judge]
) -> None:
    class Deadlined(JudgeConfig):
        call_deadline_s: float | None = None

    fake.script.default = "stall"
    j, _ = make(judges, fake.url, config_type=Deadlined, call_deadline_s=1.5, timeout_s=30.0)
    assert j.backend.deadline_s == 1.5
    v = await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))
    assert v.error_kind == "deadline", v.error
    assert fake.script.requests == 1


async def test_cancelling_the_caller_cancels_the_http_call(
    fake: FakeJudge, judges: list[Judge]
) -> None:
    fake.script.default = "stall"
    j, seen = make(judges, fake.url, max_concurrency=1, timeout_s=30.0)
    task = asyncio.create_task(j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT)))
    await until(lambda: fake.script.requests == 1, "the call reached the judge")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: fake.script.disconnects == 1, "the judge saw the client hang up")
    endpoint = j.backend.endpoints[0]
    assert endpoint.breaker.state == "closed" and endpoint.breaker.last_error is None
    assert seen.calls == []  # a cancelled call produced no verdict
    # The slot was given back: the next call (max_concurrency=1) goes through.
    fake.script.default = "ok"
    assert (await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))).ok


async def test_reachable_through_the_backend(fake: FakeJudge, judges: list[Judge]) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    j, _ = make(judges, fake.url)
    assert await j.reachable()
    assert fake.script.model_lists == ["Bearer EMPTY"]
    nobody, _ = make(judges, dead)
    assert not await nobody.reachable(timeout=1.0)
    both, _ = make(judges, dead, fake.url)
    assert await both.reachable(timeout=1.0)
    # An open breaker answers for its URL without a request.
    fake.script.default = "500"
    broken, _ = make(judges, fake.url, threshold=1, retries=0)
    assert (await broken.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))).error_kind == "http_5xx"
    lists = len(fake.script.model_lists)
    assert not await broken.reachable()
    assert len(fake.script.model_lists) == lists


async def test_rotated_key_file_is_used_on_the_next_call(
    fake: FakeJudge, judges: list[Judge], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "key"
    key.write_text("first-key\n")
    monkeypatch.delenv("FAKE_JUDGE_KEY", raising=False)
    monkeypatch.setenv("FAKE_JUDGE_KEY_FILE", str(key))
    j, _ = make(judges, fake.url, api_key_env="FAKE_JUDGE_KEY")
    assert (await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))).ok
    # A Secret volume swaps its files: write the new key beside, then rename over.
    fresh = tmp_path / "key.new"
    fresh.write_text("second-key")
    fresh.replace(key)
    assert (await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))).ok
    assert await j.reachable()
    sent = [h["authorization"] for h in fake.script.headers]
    assert sent == ["Bearer first-key", "Bearer second-key"]
    assert fake.script.model_lists == ["Bearer second-key"]
    key.unlink()  # mid-rotation: the last good key keeps serving
    assert (await j.ask(CriterionOnItem(RUBRIC, CRITERION, ROLLOUT))).ok
    assert fake.script.headers[-1]["authorization"] == "Bearer second-key"


def test_key_from_the_environment_and_missing_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = JudgeConfig(model="m", base_urls=["http://127.0.0.1:1/v1"], api_key_env="SOME_KEY")
    monkeypatch.delenv("SOME_KEY_FILE", raising=False)
    monkeypatch.setenv("SOME_KEY", "from-env")
    assert KeySource(cfg).current() == "from-env"
    monkeypatch.delenv("SOME_KEY")
    with pytest.raises(KeyError):
        KeySource(cfg)
    monkeypatch.setenv("SOME_KEY_FILE", str(tmp_path / "absent"))
    with pytest.raises(KeyError):
        KeySource(cfg)
    (tmp_path / "empty").write_text("\n")
    monkeypatch.setenv("SOME_KEY_FILE", str(tmp_path / "empty"))
    with pytest.raises(KeyError):
        KeySource(cfg)
    assert KeySource(cfg.model_copy(update={"api_key_env": None})).current() == "EMPTY"
