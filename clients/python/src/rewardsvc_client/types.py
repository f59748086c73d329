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
    """One chat message (OpenAI shape): text or content parts, tool calls, the call a tool
    message answers, reasoning text. The service reads all of these."""

    role: str
    content: str | list[dict[str, Any]] | None
    tool_calls: NotRequired[list[dict[str, Any]]]
    tool_call_id: NotRequired[str]
    reasoning_content: NotRequired[str]


class Item(TypedDict):
    """One rollout to score. ``prompt`` and ``completion`` are strings or message lists."""

    prompt: str | list[Message]
    completion: str | list[Message]
    id: NotRequired[str]
    reference: NotRequired[str | None]
    metadata: NotRequired[dict[str, Any]]
    criteria: NotRequired[Any]
    """The item's own rubric, as its dataset writes it (``options["criteria_format"]``)."""


class Options(TypedDict, total=False):
    """Per-request overrides of the rubric's settings."""

    judges: list[str]
    rule: str
    min_judges: int
    use_cache: bool
    criteria_format: str
    criteria_mode: str


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
    steps: list[dict[str, Any]] | None = None
    """Process rewards (criteria with ``scope: step``): ``{index, reward, status, criteria}``
    per assistant step; None when the rubric has no step criteria."""
    explain: dict[str, Any] | None = None
    """With ``options={"explain": True}``: per judge, per criterion, what the judge read."""
    version: str | None = None
    """The version of the rubric this item was scored with: its own when it brought
    criteria (template and criteria), else the request's rubric version."""
    objectives: dict[str, float | None] = field(default_factory=dict)
    """The named objectives the rubric or recipe declares, each in [0, 1] (None when it
    could not be computed); empty when it declares none."""

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
            steps=[dict(s) for s in data["steps"]] if data.get("steps") is not None else None,
            explain=dict(data["explain"]) if data.get("explain") is not None else None,
            version=str(data["version"]) if data.get("version") is not None else None,
            objectives={
                str(name): None if value is None else float(value)
                for name, value in (data.get("objectives") or {}).items()
            },
        )


@dataclass(frozen=True, slots=True)
class RubricRef:
    """The rubric and the exact version (content hash) that produced the rewards."""

    id: str
    version: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> RubricRef:
        """Build from a response's ``rubric``."""
        data = data or {}
        return cls(id=str(data.get("id", "")), version=str(data.get("version", "")))


def _add_costs(a: float | None, b: float | None) -> float | None:
    """The sum of two costs; None when neither is known (no judge had prices)."""
    costs = [c for c in (a, b) if c is not None]
    return sum(costs) if costs else None


@dataclass(frozen=True, slots=True)
class StageUsage:
    """One cascade stage's work for the request (``usage.stages``, the first stage first):
    its judges, the questions (item, criterion) it answered, the judge calls they took,
    cache hits, tokens and cost. A later stage's ``questions`` over the first's is the share
    the cascade escalated."""

    judges: list[str] = field(default_factory=list)
    questions: int = 0
    judge_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    """What the stage's calls cost at the judges' prices; None when no judge has prices."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StageUsage:
        """Build from one entry of the response's ``usage.stages``."""
        cost = data.get("cost")
        return cls(
            judges=[str(j) for j in data.get("judges") or ()],
            questions=int(data.get("questions", 0)),
            judge_calls=int(data.get("judge_calls", 0)),
            cache_hits=int(data.get("cache_hits", 0)),
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            completion_tokens=int(data.get("completion_tokens", 0)),
            cost=None if cost is None else float(cost),
        )

    def __add__(self, other: StageUsage) -> StageUsage:
        """The work of one stage over two chunks of a batch."""
        return StageUsage(
            judges=self.judges or other.judges,
            questions=self.questions + other.questions,
            judge_calls=self.judge_calls + other.judge_calls,
            cache_hits=self.cache_hits + other.cache_hits,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost=_add_costs(self.cost, other.cost),
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Judge work done for the request; summed over chunks when the client split a batch."""

    judge_calls: int = 0
    judge_calls_skipped: int = 0
    """Judge calls a recipe's gates made unnecessary."""
    grader_calls: int = 0
    """Deterministic grader runs."""
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cached_tokens: int = 0
    cost: float | None = None
    """What the judge calls cost at the judges' prices; None when no judge has prices
    (per reward: :attr:`RewardResponse.cost_per_reward`)."""
    stages: list[StageUsage] = field(default_factory=list)
    """A cascaded rubric: the work of each stage, the first first (empty otherwise)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Usage:
        """Build from the response's ``usage``."""
        data = data or {}
        cost = data.get("cost")
        return cls(
            judge_calls=int(data.get("judge_calls", 0)),
            judge_calls_skipped=int(data.get("judge_calls_skipped", 0)),
            grader_calls=int(data.get("grader_calls", 0)),
            cache_hits=int(data.get("cache_hits", 0)),
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            completion_tokens=int(data.get("completion_tokens", 0)),
            latency_ms=float(data.get("latency_ms", 0.0)),
            cached_tokens=int(data.get("cached_tokens", 0)),
            cost=None if cost is None else float(cost),
            stages=[StageUsage.from_json(s) for s in data.get("stages") or ()],
        )

    def __add__(self, other: Usage) -> Usage:
        # Stage n of one chunk is stage n of the other: the cascade is the rubric's.
        stages = [*self.stages, *other.stages[len(self.stages) :]]
        for n, stage in enumerate(other.stages[: len(self.stages)]):
            stages[n] = stages[n] + stage
        return Usage(
            judge_calls=self.judge_calls + other.judge_calls,
            judge_calls_skipped=self.judge_calls_skipped + other.judge_calls_skipped,
            grader_calls=self.grader_calls + other.grader_calls,
            cache_hits=self.cache_hits + other.cache_hits,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            latency_ms=self.latency_ms + other.latency_ms,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost=_add_costs(self.cost, other.cost),
            stages=stages,
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

    @property
    def cost_per_reward(self) -> float | None:
        """What the judge calls cost per result (over every chunk of a split batch); None
        when no judge called has prices."""
        if self.usage.cost is None or not self.results:
            return None
        return self.usage.cost / len(self.results)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RewardResponse:
        """Build from the JSON body of POST /v1/rewards."""
        return cls(
            rubric=RubricRef.from_json(data.get("rubric")),
            results=[RewardResult.from_json(r) for r in data.get("results") or []],
            usage=Usage.from_json(data.get("usage")),
        )


def _floats(values: Any) -> list[float | None]:
    return [None if v is None else float(v) for v in values or []]


@dataclass(frozen=True, slots=True)
class ComparativeUsage:
    """Judge work of a /v1/groups or /v1/preferences request; ``calls_by_order`` counts the
    judge calls per presentation order (``ab``/``ba``, ``order1``...); comparisons answered
    from the cache are ``cache_hits``, not calls."""

    judge_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    calls_by_order: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ComparativeUsage:
        """Build from the response's ``usage``."""
        data = data or {}
        return cls(
            judge_calls=int(data.get("judge_calls", 0)),
            cache_hits=int(data.get("cache_hits") or 0),
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            completion_tokens=int(data.get("completion_tokens", 0)),
            latency_ms=float(data.get("latency_ms", 0.0)),
            calls_by_order={str(k): int(v) for k, v in (data.get("calls_by_order") or {}).items()},
        )

    def __add__(self, other: ComparativeUsage) -> ComparativeUsage:
        orders = dict(self.calls_by_order)
        for key, value in other.calls_by_order.items():
            orders[key] = orders.get(key, 0) + value
        return ComparativeUsage(
            judge_calls=self.judge_calls + other.judge_calls,
            cache_hits=self.cache_hits + other.cache_hits,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            latency_ms=self.latency_ms + other.latency_ms,
            calls_by_order=orders,
        )


@dataclass(frozen=True, slots=True)
class GroupResult:
    """The rewards of one group's completions, relative to each other, in input order."""

    id: str
    rewards: list[float | None]
    status: str
    position_consistency: float | None = None
    uncertainty: list[float | None] | None = None
    judges: dict[str, Any] = field(default_factory=dict)
    flags: list[list[str]] = field(default_factory=list)
    error: str | None = None
    error_kind: str | None = None
    """Why the group has no rewards (or fewer judges), as a fixed kind: ``sandbox_busy``,
    ``timeout``, ``grader_failed``, ...; None when every judge scored."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GroupResult:
        """Build from one element of the /v1/groups response's ``results``."""
        consistency = data.get("position_consistency")
        uncertainty = data.get("uncertainty")
        return cls(
            id=str(data.get("id", "")),
            rewards=_floats(data.get("rewards")),
            status=str(data.get("status", "")),
            position_consistency=None if consistency is None else float(consistency),
            uncertainty=None if uncertainty is None else _floats(uncertainty),
            judges=dict(data.get("judges") or {}),
            flags=[[str(f) for f in fs] for fs in data.get("flags") or []],
            error=data.get("error"),
            error_kind=data.get("error_kind"),
        )


@dataclass(frozen=True, slots=True)
class GroupResponse:
    """Results of every group of a /v1/groups request, in request order."""

    rubric: RubricRef
    results: list[GroupResult]
    method: str = ""
    usage: ComparativeUsage = field(default_factory=ComparativeUsage)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GroupResponse:
        """Build from the JSON body of POST /v1/groups."""
        return cls(
            rubric=RubricRef.from_json(data.get("rubric")),
            results=[GroupResult.from_json(r) for r in data.get("results") or []],
            method=str(data.get("method", "")),
            usage=ComparativeUsage.from_json(data.get("usage")),
        )


@dataclass(frozen=True, slots=True)
class PreferenceResult:
    """The verdict on one pair: P(a better) over both orders, each order's P, the label."""

    id: str
    p_a_better: float | None
    status: str
    orders: dict[str, float] | None = None
    consistent: bool | None = None
    label: str | None = None
    uncertainty: float | None = None
    judges: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None
    error_kind: str | None = None
    """Why the pair has no verdict (or fewer judges), as a fixed kind; None when every
    judge answered."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PreferenceResult:
        """Build from one element of the /v1/preferences response's ``results``."""
        p = data.get("p_a_better")
        orders = data.get("orders")
        uncertainty = data.get("uncertainty")
        consistent = data.get("consistent")
        return cls(
            id=str(data.get("id", "")),
            p_a_better=None if p is None else float(p),
            status=str(data.get("status", "")),
            orders=None if orders is None else {str(k): float(v) for k, v in orders.items()},
            consistent=None if consistent is None else bool(consistent),
            label=data.get("label"),
            uncertainty=None if uncertainty is None else float(uncertainty),
            judges=dict(data.get("judges") or {}),
            flags={str(k): [str(f) for f in v] for k, v in (data.get("flags") or {}).items()},
            error=data.get("error"),
            error_kind=data.get("error_kind"),
        )


@dataclass(frozen=True, slots=True)
class PreferenceResponse:
    """Verdicts on every pair of a /v1/preferences request, in request order."""

    rubric: RubricRef
    results: list[PreferenceResult]
    usage: ComparativeUsage = field(default_factory=ComparativeUsage)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PreferenceResponse:
        """Build from the JSON body of POST /v1/preferences."""
        return cls(
            rubric=RubricRef.from_json(data.get("rubric")),
            results=[PreferenceResult.from_json(r) for r in data.get("results") or []],
            usage=ComparativeUsage.from_json(data.get("usage")),
        )
