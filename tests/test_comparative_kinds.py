"""A failure on ``/v1/groups`` and ``/v1/preferences`` carries its typed kind (the
``JudgeErrorKind`` of ``/v1/rewards``), per call, per judge and per group or pair, whether
the result is ``degraded`` or ``judge_error``; on ca8fbfa only the free-text ``error`` said
it (the sandbox kinds on every route: ``test_invariant``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rewardsvc.application.wire import group_response, preference_response
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.asks import Comparing
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.library.registry import load_pool
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import score_groups
from rewardsvc.scoring.preferences import judge_preferences

POOL = Path(__file__).resolve().parent.parent / "deploy" / "cpu-judge" / "judges.yaml"
RUBRIC = Rubric.model_validate(
    {
        "id": "capital",
        "criteria": [{"id": "correct", "text": "The response answers the question correctly."}],
        "judges": ["primary", "secondary"],
    }
)
GROUP = GroupIn("g", tuple(Rollout("Capital of France?", t) for t in ("Paris.", "Lyon.")))


@pytest.fixture
def judges() -> dict[str, Judge]:
    """Judge objects for the pool's names; each test injects the call itself."""
    return build_judges(load_pool(POOL))


def failing(kinds: dict[str, Any]) -> Any:
    """An asker whose judges named in ``kinds`` fail with that kind; the others prefer the
    first completion shown."""

    async def ask(judge: Judge, question: Comparing, deadline: float | None) -> Verdict:
        kind = kinds.get(judge.name)
        if kind is not None:
            return Verdict.failed(f"scripted {judge.name}", kind=kind)
        return Verdict(score=0.7, probs={"A": 0.7, "B": 0.3})

    return ask


@pytest.mark.parametrize(
    ("kinds", "status", "kind"),
    [
        ({"secondary": "http_5xx"}, "degraded", "http_5xx"),
        ({"primary": "timeout", "secondary": "unparseable"}, "judge_error", "timeout"),
    ],
)
async def test_a_group_names_the_kind_of_its_failure(
    judges: dict[str, Judge], kinds: dict[str, Any], status: str, kind: str
) -> None:
    for method in ("listwise", "pairwise"):
        options = GroupOptions(method=method)
        batch = await score_groups(judges, RUBRIC, [GROUP], options, asker=failing(kinds))
        (result,) = group_response(batch).model_dump()["results"]
        assert result["status"] == status, result
        assert result["error_kind"] == kind, result
        for name, view in result["judges"].items():
            assert view["error_kind"] == kinds.get(name), view
            called = {c["error_kind"] for c in view["comparisons"]}
            assert called == {kinds.get(name)}, view
    ok = await score_groups(judges, RUBRIC, [GROUP], asker=failing({}))
    (result,) = group_response(ok).model_dump()["results"]
    assert result["status"] == "ok" and result["error_kind"] is None, result


@pytest.mark.parametrize(
    ("kinds", "status", "kind"),
    [
        ({"primary": "rate_limited"}, "degraded", "rate_limited"),
        ({"primary": "deadline", "secondary": "http_4xx"}, "judge_error", "deadline"),
    ],
)
async def test_a_pair_names_the_kind_of_its_failure(
    judges: dict[str, Judge], kinds: dict[str, Any], status: str, kind: str
) -> None:
    batch = await judge_preferences(judges, RUBRIC, [GROUP], asker=failing(kinds))
    (result,) = preference_response(batch).model_dump()["results"]
    assert result["status"] == status, result
    assert result["error_kind"] == kind, result
    assert (result["p_a_better"] is None) == (status == "judge_error"), result
    for name, view in result["judges"].items():
        assert view["error_kind"] == kinds.get(name), view
