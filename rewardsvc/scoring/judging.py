"""What the engine needs of a judge: the protocols ``rewardsvc.judges.judge.Judge``
provides, so that the engine runs on stand-ins in tests and never on a transport."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.verdict import Verdict


class JudgeLike(Protocol):
    """What the engine needs of a judge (``rewardsvc.judges.judge.Judge`` provides it)."""

    name: str

    def cache_identity(self) -> str: ...

    async def score_criterion(
        self,
        rubric: Rubric,
        criterion: Criterion,
        rollout: Rollout,
        *,
        deadline: float | None = None,
    ) -> Verdict: ...

    async def score_holistic(
        self, rubric: Rubric, rollout: Rollout, *, deadline: float | None = None
    ) -> Verdict: ...

    async def aclose(self) -> None: ...


class BatchingJudge(JudgeLike, Protocol):
    """A judge that can answer several criteria of one item in one call (method
    ``batched``); the engine asks it so when ``batches_criteria`` is true."""

    batches_criteria: bool

    async def score_criteria(
        self,
        rubric: Rubric,
        criteria: Sequence[Criterion],
        rollout: Rollout,
        *,
        deadline: float | None = None,
    ) -> dict[str, Verdict]: ...


def batching_of(judge: JudgeLike) -> BatchingJudge | None:
    """The judge as a :class:`BatchingJudge` when it batches criteria, else None."""
    return cast(BatchingJudge, judge) if getattr(judge, "batches_criteria", False) else None
