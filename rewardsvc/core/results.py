"""What the engine returns: rewards of a batch as plain dataclasses (no wire models).

The server maps these to its wire models (``rewardsvc.protocol``); the CLI, the
monitor and the trainer-compat routes read them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from rewardsvc.core.errors import FieldProblem, JudgeErrorKind
from rewardsvc.core.verdict import Verdict

Status = Literal["ok", "degraded", "judge_error", "rejected"]


@dataclass
class CriterionOutcome:
    """One judge's verdict on one criterion of one item."""

    score: float | None
    variance: float = 0.0
    p: dict[str, float] | None = None
    """The logprob method's probability of each scale answer (the verdict's ``probs``)."""
    error: str | None = None
    error_kind: JudgeErrorKind | None = None
    evidence: dict[str, Any] | None = None
    """A grader criterion's evidence (what it extracted and compared); None for judges."""
    reasoning: str | None = None
    """A reasoning judge's reasoning before its answer (returned with options.explain)."""
    stage: int | None = None
    """A cascade's row: the stage (1 the first) whose answer this is; None otherwise."""

    @classmethod
    def of(cls, verdict: Verdict) -> CriterionOutcome:
        """The breakdown entry of one call's verdict (a grader's evidence is added later)."""
        return cls(
            verdict.score,
            verdict.variance,
            verdict.probs,
            verdict.error,
            verdict.error_kind,
            reasoning=verdict.reasoning or None,
        )


@dataclass
class JudgeOutcome:
    """One judge's score of one item (``score`` None when any of its calls failed)."""

    score: float | None
    raw_score: float | None = None
    variance: float = 0.0
    criteria: dict[str, CriterionOutcome] = field(default_factory=dict)
    error: str | None = None
    without_images: bool = False
    """The item carries images and this judge reads text only: it scored with a
    placeholder where each image stood."""


@dataclass
class StepResult:
    """One assistant step's reward: ``criteria`` maps each step criterion to its mean
    score over the judges that scored it (None when none did)."""

    index: int
    reward: float | None
    status: Status
    criteria: dict[str, float | None] = field(default_factory=dict)
    error: str | None = None


@dataclass
class ItemReward:
    """The reward of one item, with its status, uncertainty and breakdown."""

    id: str
    reward: float | None
    status: Status
    uncertainty: float | None = None
    judges: dict[str, JudgeOutcome] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    cached: bool = False
    error: str | None = None
    completion_chars: int = 0
    steps: list[StepResult] | None = None
    version: str | None = None
    """The version of the rubric the item was scored with, when it is not the batch's:
    the batch rubric with the item's own criteria."""
    group: str | None = None
    """The item's group in its batch for the monitor's rubric health (its prompt's key, or
    its group of ``POST /v1/groups``); None when it belongs to none."""
    objectives: dict[str, float | None] | None = None
    """The rubric's objectives (``rewardsvc.core.objectives``), each in [0, 1] or None
    when its parts could not be scored; None when the rubric declares none."""
    problems: tuple[FieldProblem, ...] = ()
    """A rejected item's problems, each placed relative to the item (``("reference",)``);
    ``error`` is their text, placed in the batch the engine scored."""


def without_reasoning(item: ItemReward) -> ItemReward:
    """``item`` without its judges' reasoning (itself when it has none): only
    options.explain returns it, being as long as the judges' thinking."""
    if not any(c.reasoning for j in item.judges.values() for c in j.criteria.values()):
        return item
    judges = {
        name: replace(
            j, criteria={cid: replace(c, reasoning=None) for cid, c in j.criteria.items()}
        )
        for name, j in item.judges.items()
    }
    return replace(item, judges=judges)


@dataclass
class StageUsage:
    """One cascade stage's work in a request: the questions it answered (asked of each of
    its ``judges``), the calls they took, cache hits, tokens and cost."""

    judges: list[str]
    questions: int = 0
    judge_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    @classmethod
    def of(cls, usage: Usage, judges: list[str], questions: int) -> StageUsage:
        """The stage's entry from what its calls used."""
        return cls(
            list(judges),
            questions,
            usage.judge_calls,
            usage.cache_hits,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cost,
        )

    def __add__(self, other: StageUsage) -> StageUsage:
        """The work of both (one stage, two batches or parts of one)."""
        return StageUsage(
            self.judges,
            self.questions + other.questions,
            self.judge_calls + other.judge_calls,
            self.cache_hits + other.cache_hits,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            add_cost(self.cost, other.cost),
        )


@dataclass
class Usage:
    """Work done for one request: judge calls made, served from the cache or made
    unnecessary by a recipe's gates, grader runs, tokens, wall time and, for comparisons,
    calls per presentation order (``ab``/``ba`` for pairs, ``order1``... for listwise).
    Every way of scoring fills in what applies to it; the rest stays 0."""

    judge_calls: int = 0
    judge_calls_skipped: int = 0
    grader_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    calls_by_order: dict[str, int] = field(default_factory=dict)
    cached_tokens: int = 0
    """Prompt tokens the providers served from their prompt caches."""
    cost: float | None = None
    """What the calls cost at their judges' prices; None while no priced judge was called
    (cache hits cost nothing)."""
    stages: list[StageUsage] = field(default_factory=list)
    """A cascaded rubric's work per stage, the first stage first (empty otherwise)."""
    tool_loops: dict[str, int] = field(default_factory=dict)
    """Agentic judges' tool loops run, by how each ended: ``finished`` (a verdict) or the
    failed verdict's kind (``loop_turns``, the other ``loop_*`` kinds, ``deadline``...)."""
    tool_calls: int = 0
    """The tool calls of those loops."""

    def looped(self, ended: str, tool_calls: int) -> None:
        """Count one tool loop run, how it ended and its tool calls."""
        self.tool_loops[ended] = self.tool_loops.get(ended, 0) + 1
        self.tool_calls += tool_calls

    def called(self, verdict: Verdict, order: str | None = None) -> None:
        """Count one judge call (an agentic verdict's every request), its tokens and cost
        (under ``order`` for a comparison)."""
        self.judge_calls += verdict.calls
        self.prompt_tokens += verdict.prompt_tokens
        self.completion_tokens += verdict.completion_tokens
        self.cached_tokens += verdict.cached_tokens
        self.cost = add_cost(self.cost, verdict.cost)
        if order is not None:
            self.calls_by_order[order] = self.calls_by_order.get(order, 0) + 1

    def __add__(self, other: Usage) -> Usage:
        """The work of both. Wall times add up too, as for tries made one after the other;
        a caller that ran the two at once measures its own."""
        counts = {
            f.name: getattr(self, f.name) + getattr(other, f.name)
            for f in fields(self)
            if f.name not in ("calls_by_order", "cost", "stages", "tool_loops")
        }
        stages = [*self.stages, *other.stages[len(self.stages) :]]
        for n, stage in enumerate(other.stages[: len(self.stages)]):
            stages[n] = stages[n] + stage
        return Usage(
            **counts,
            calls_by_order=_summed(self.calls_by_order, other.calls_by_order),
            cost=add_cost(self.cost, other.cost),
            stages=stages,
            tool_loops=_summed(self.tool_loops, other.tool_loops),
        )

    def add_stage(self, number: int, spent: Usage, stage: StageUsage) -> None:
        """Count ``spent`` (a cascade stage's calls, without stages of its own) into this
        usage, and ``stage`` as the work of stage ``number`` (1 the first)."""
        total = self + spent
        for f in fields(self):
            setattr(self, f.name, getattr(total, f.name))
        while len(self.stages) < number:
            self.stages.append(StageUsage(stage.judges))
        self.stages[number - 1] = self.stages[number - 1] + stage


def _summed(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    """The counts of both, key by key."""
    out = dict(a)
    for key, n in b.items():
        out[key] = out.get(key, 0) + n
    return out


def add_cost(a: float | None, b: float | None) -> float | None:
    """The sum of two costs, None (no price known) only when both are."""
    if a is None:
        return b
    return a if b is None else a + b


@dataclass
class BatchResult:
    """Rewards for every item of a batch, in input order, and the rubric that gave them."""

    rubric_id: str
    version: str
    items: list[ItemReward]
    usage: Usage
    run: str | None = None
