"""The one Usage of every way of scoring: how two are added, and what each wire model reads."""

from __future__ import annotations

from rewardsvc.application.wire import usage_out
from rewardsvc.core.results import Usage
from rewardsvc.core.verdict import Verdict
from rewardsvc.protocol.comparative import ComparativeUsageOut


def test_a_call_counts_its_tokens_and_its_order() -> None:
    usage = Usage()
    usage.called(Verdict(0.5, prompt_tokens=10, completion_tokens=1), "ab")
    usage.called(Verdict(None, error="timeout", prompt_tokens=3), "ab")
    usage.called(Verdict(0.5, prompt_tokens=10, completion_tokens=1))
    assert (usage.judge_calls, usage.prompt_tokens, usage.completion_tokens) == (3, 23, 2)
    assert usage.calls_by_order == {"ab": 2}


def test_two_usages_add_up_field_by_field_and_order_by_order() -> None:
    a = Usage(judge_calls=2, cache_hits=1, latency_ms=5.0, calls_by_order={"ab": 1, "ba": 1})
    b = Usage(judge_calls=1, judge_calls_skipped=4, grader_calls=3, calls_by_order={"ab": 1})
    total = a + b
    assert total == Usage(
        judge_calls=3,
        judge_calls_skipped=4,
        grader_calls=3,
        cache_hits=1,
        latency_ms=5.0,
        calls_by_order={"ab": 2, "ba": 1},
    )
    assert a.calls_by_order == {"ab": 1, "ba": 1}  # the operands are left as they were


def test_each_wire_usage_reads_its_own_fields() -> None:
    usage = Usage(judge_calls=2, judge_calls_skipped=1, prompt_tokens=7, calls_by_order={"ab": 2})
    assert usage_out(usage).model_dump() == {
        "judge_calls": 2,
        "judge_calls_skipped": 1,
        "grader_calls": 0,
        "cache_hits": 0,
        "prompt_tokens": 7,
        "completion_tokens": 0,
        "latency_ms": 0.0,
        "cached_tokens": 0,
        "cost": None,
        "cost_per_reward": None,
        "stages": [],
    }
    comparative = ComparativeUsageOut.model_validate(usage, from_attributes=True)
    assert comparative.model_dump() == {
        "judge_calls": 2,
        "cache_hits": 0,
        "prompt_tokens": 7,
        "completion_tokens": 0,
        "latency_ms": 0.0,
        "calls_by_order": {"ab": 2},
        "cached_tokens": 0,
        "cost": None,
    }
