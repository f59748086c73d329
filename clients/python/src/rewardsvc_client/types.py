"""Plain data types of the rewardsvc API (POST /v1/rewards), without pydantic.

They mirror the service's wire models (``rewardsvc/protocol.py``). Parsing is lenient on
purpose: keys the client does not know are ignored, so a newer server does not break an
older client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

Status = Literal["ok", "degraded", "judge_error", "rejected"]
"""ok: all judges scored; degraded: fewer than all but at least min_judges; judge_error: fewer
than min_judges (the reward is None: mask the sample); rejected: the item was malformed."""

STATUSES: tuple[Status, ...] = ("ok", "degraded", "judge_error", "rejected")


class Message(TypedDict):
    """One chat message; only role and text content are read by the service."""

    role: str
    content: str | list[dict[str, Any]] | None


class Item(TypedDict):
    """One rollout to score. ``prompt`` and ``completion`` are strings or message lists."""

    prompt: str | list[Message]
    completion: str | list[Message]
    id: NotRequired[str]
    reference: NotRequired[str | None]
    metadata: NotRequired[dict[str, Any]]


class Options(TypedDict, total=False):
    """Per-request overrides of the rubric's settings."""

    judges: list[str]
    rule: str
    min_judges: int
    use_cache: bool


@dataclass(frozen=True, slots=True)
class RewardResult:
    """The reward for one item, in the order the items were sent."""

    id: str
    reward: float | None
    status: str
    uncertainty: float | None = None
    judges: dict[str, Any] = field(default_factory=dict)
    """Per-judge breakdown as sent by the service: {judge: {score, criteria: {...}, error}}."""
    flags: list[str] = field(default_factory=list)
    cached: bool = False
    error: str | None = None

    @property
    def scored(self) -> bool:
        """True when the item has a reward (status ok or degraded)."""
        return self.reward is not None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RewardResult:
        """Build from one element of the response's ``results``."""
        reward = data.get("reward")
        uncertainty = data.get("uncertainty")
        return cls(
            id=str(data.get("id", "")),
            reward=None if reward is None else float(reward),
            status=str(data.get("status", "")),
            uncertainty=None if uncertainty is None else float(uncertainty),
            judges=dict(data.get("judges") or {}),
            flags=[str(f) for f in data.get("flags") or []],
            cached=bool(data.get("cached", False)),
            error=data.get("error"),
        )


@dataclass(frozen=True, slots=True)
class RubricRef:
    """The rubric and the exact version (content hash) that produced the rewards."""

    id: str
    version: str


@dataclass(frozen=True, slots=True)
class Usage:
    """Judge work done for the request; summed over chunks when the client split a batch."""

    judge_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Usage:
        """Build from the response's ``usage``."""
        data = data or {}
        return cls(
            judge_calls=int(data.get("judge_calls", 0)),
            cache_hits=int(data.get("cache_hits", 0)),
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            completion_tokens=int(data.get("completion_tokens", 0)),
            latency_ms=float(data.get("latency_ms", 0.0)),
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            judge_calls=self.judge_calls + other.judge_calls,
            cache_hits=self.cache_hits + other.cache_hits,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            latency_ms=self.latency_ms + other.latency_ms,
        )


@dataclass(frozen=True, slots=True)
class RewardResponse:
    """Rewards for every item of a request, in request order."""

    rubric: RubricRef
    results: list[RewardResult]
    usage: Usage = field(default_factory=Usage)

    @property
    def rewards(self) -> list[float | None]:
        """One reward per item; None where the item has no reward (judge_error, rejected)."""
        return [r.reward for r in self.results]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RewardResponse:
        """Build from the JSON body of POST /v1/rewards."""
        rubric = data.get("rubric") or {}
        return cls(
            rubric=RubricRef(id=str(rubric.get("id", "")), version=str(rubric.get("version", ""))),
            results=[RewardResult.from_json(r) for r in data.get("results") or []],
            usage=Usage.from_json(data.get("usage")),
        )
