"""One judge path: a comparison question is answered by the judge's own scoring method.

The request a judge sends for a comparison (``comparative.ask``) is the one its method
sends for a criterion: a ``structured`` judge asks for its JSON answer (it used to fall
to the sampled request), a ``logprob`` or ``batched`` judge for one constrained token with
top logprobs, a ``sampled`` one for ``n`` constrained samples.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakejudge import FakeJudge, RecordingObserver

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import Comparing, CriterionOnItem
from rewardsvc.judges.backends import Backend, RetryPolicy
from rewardsvc.judges.comparative import ask, fenced_group
from rewardsvc.judges.judge import Judge

RUBRIC = Rubric(
    id="arith",
    instructions="The assistant answers arithmetic questions.",
    criteria=[{"id": "correct", "text": "The final answer is correct.", "category": "essential"}],
    judges=["primary"],
)
(CORRECT,) = RUBRIC.criteria
ROLLOUT = Rollout("What is 2 + 2?", "2 + 2 = 4.", "4")
SHOWN = ("2 + 2 = 4.", "2 + 2 = 5.")

# Request fields that tell the methods' requests apart.
_KEYS = ("max_tokens", "n", "logprobs", "top_logprobs", "structured_outputs", "response_format")


def _judge(made: list[Judge], url: str, method: str, api: str) -> tuple[Judge, RecordingObserver]:
    cfg = JudgeConfig(model="fake", base_urls=[url], timeout_s=5.0, method=method, api=api)
    seen = RecordingObserver()
    backend = Backend("j", cfg, retry=RetryPolicy(initial_s=0.01, max_s=0.02), observer=seen)
    judge = Judge("j", cfg, backend, observer=seen)
    made.append(judge)
    return judge, seen


def _comparing(judge: Judge) -> Comparing:
    """The comparison of ``SHOWN`` on ``CORRECT``, fenced with the judge's defuser."""
    fenced = {judge.defuser: fenced_group("2 + 2?", SHOWN, None, judge.defuser)}
    return Comparing(RUBRIC, CORRECT, fenced, tuple(range(len(SHOWN))))


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in _KEYS if k in body}


@pytest.mark.parametrize("api", ["chat", "completion"])
@pytest.mark.parametrize("method", ["structured", "logprob", "sampled", "batched"])
async def test_a_comparison_is_asked_as_the_judges_method_asks_a_criterion(
    fake: FakeJudge, judges: list[Judge], method: str, api: str
) -> None:
    judge, seen = _judge(judges, fake.url, method, api)
    criterion = await judge.ask(CriterionOnItem(RUBRIC, CORRECT, ROLLOUT))
    assert criterion.ok, criterion
    verdict = await ask(judge, _comparing(judge), None)
    assert verdict.ok, verdict
    asked_criterion, asked_comparison = (_fields(b) for b in fake.script.bodies)
    if method == "structured":
        assert (
            "response_format" in asked_comparison and "structured_outputs" not in asked_comparison
        )
        schema = asked_comparison["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["answer"]["enum"] == ["A", "B"]
        # The fake answers the first enum value: the whole probability on "A".
        assert verdict.probs == {"A": 1.0, "B": 0.0} and verdict.score == 1.0
        assert asked_comparison.keys() == asked_criterion.keys()
        assert asked_comparison["max_tokens"] == asked_criterion["max_tokens"]
    else:
        # Same request as for the criterion, only the answer alternatives differ.
        assert asked_comparison.pop("structured_outputs") == {"choice": ["A", "B"]}
        assert asked_criterion.pop("structured_outputs") == {"choice": ["yes", "no"]}
        if method in ("logprob", "batched"):
            assert asked_comparison["max_tokens"] == 1
        assert asked_comparison.keys() == asked_criterion.keys()
        assert asked_comparison.get("n") == asked_criterion.get("n")
        assert asked_comparison["max_tokens"] == asked_criterion["max_tokens"]
    assert verdict.probs is not None and verdict.score == pytest.approx(verdict.probs["A"])
    assert len(seen.calls) == 2  # each call reported once


async def test_a_comparison_too_long_fails_once_through_the_judges_own_path(
    fake: FakeJudge, judges: list[Judge]
) -> None:
    cfg = JudgeConfig(
        model="fake",
        base_urls=[fake.url],
        timeout_s=5.0,
        method="structured",
        max_context_tokens=50,
    )
    seen = RecordingObserver()
    judge = Judge("j", cfg, Backend("j", cfg, observer=seen), observer=seen)
    judges.append(judge)
    verdict = await ask(judge, _comparing(judge), None)
    assert verdict.error_kind == "context_overflow" and verdict.score is None
    assert fake.script.bodies == [] and len(seen.calls) == 1
