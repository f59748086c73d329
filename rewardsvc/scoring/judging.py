"""What the engine needs of a judge: the protocol ``rewardsvc.judges.judge.Judge``
provides, so that the engine runs on stand-ins in tests and never on a transport.

A judge is asked one way (``ask``) every question of ``rewardsvc.judges.asks``. Its
capabilities (``batches_criteria``, ``scores_whole_item``, ``scores_steps``,
``sees_images``) are read here
once: planning asks what a judge can do, never which method it has."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol, TypeVar

from rewardsvc.core.judge_tools import JudgeTools
from rewardsvc.judges.asks import Question, Sent

R = TypeVar("R")
S = TypeVar("S", bound=Sent)


class JudgeLike(Protocol):
    """What the engine needs of a judge (``rewardsvc.judges.judge.Judge`` provides it)."""

    name: str

    def cache_identity(self) -> str: ...

    def ask(self, question: Question[R, S], *, deadline: float | None = None) -> Awaitable[R]:
        """The answer to ``question`` by ``deadline``; failures returned, never raised."""
        ...

    def render(self, question: Question[R, S]) -> S:
        """``question`` as the judge would send it, unsent (``options.explain``)."""
        ...

    async def aclose(self) -> None: ...


def batches_criteria(judge: JudgeLike) -> bool:
    """Whether the judge answers all criteria of one view of an item in one call (method
    ``batched``: ``asks.BatchedCriteria``)."""
    return bool(getattr(judge, "batches_criteria", False))


def sees_images(judge: JudgeLike) -> bool:
    """Whether the judge is shown an item's images (``capabilities.vision``), not a
    placeholder where each stood."""
    return bool(getattr(judge, "sees_images", False))


def text_only(judge: JudgeLike) -> bool:
    """Whether ``judge`` reads text only (``capabilities.vision`` false): on an item with
    images, its prompts hold a placeholder where each image stood."""
    return not sees_images(judge)


def scores_whole_item(judge: JudgeLike) -> bool:
    """Whether the judge is asked no criteria but scores the whole item, and a step as the
    trajectory up to it (a reward model: ``asks.WholeItem``)."""
    return bool(getattr(judge, "scores_whole_item", False))


def scores_steps(judge: JudgeLike) -> bool:
    """Whether the judge scores every step of a trajectory in one call (a process reward
    model: ``asks.AllSteps``)."""
    return bool(getattr(judge, "scores_steps", False))


def declared_tools(judge: JudgeLike) -> JudgeTools | None:
    """The tools the judge's pool entry declares (an agentic judge: ``asks.AgenticCriterion``
    asks it the criteria that allow tools); None for a judge without."""
    config = getattr(judge, "config", None)
    tools = getattr(config, "tools", None)
    return tools if isinstance(tools, JudgeTools) else None
