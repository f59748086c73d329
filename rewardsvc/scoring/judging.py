"""What the engine needs of a judge: the protocols ``rewardsvc.judges.judge.Judge``
provides, so that the engine runs on stand-ins in tests and never on a transport.

A judge's capabilities (``batches_criteria``, ``scores_whole_item``, ``scores_steps``) are
read here once, by ``batching_of`` and ``whole_item_of``: planning asks what a judge can
do, never which method it has."""

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


class WholeItemJudge(JudgeLike, Protocol):
    """A judge asked no criteria: it scores the whole item (a reward model, method
    ``reward_model``), and a step as the trajectory up to it, or, when ``scores_steps``
    (a process reward model), every step of a trajectory in one call."""

    scores_whole_item: bool
    scores_steps: bool

    async def score_item(self, rollout: Rollout, *, deadline: float | None = None) -> Verdict: ...

    async def score_steps(
        self, rollout: Rollout, *, deadline: float | None = None
    ) -> dict[str, Verdict]: ...


def whole_item_of(judge: JudgeLike) -> WholeItemJudge | None:
    """The judge as a :class:`WholeItemJudge` when it scores whole items, else None."""
    return cast(WholeItemJudge, judge) if getattr(judge, "scores_whole_item", False) else None
