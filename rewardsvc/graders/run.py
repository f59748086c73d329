"""One entry point for every grader: :class:`Graders` applies any grader spec to a rollout.

It owns what the graders share across items: the math-verify worker processes, the
worker that validates JSON Schemas with regular expressions, and the embedding model.
Each call is synchronous and bounded in time; async callers run it in a thread.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Sequence

from rewardsvc.core.graders_spec import (
    NEEDS_REFERENCE,
    EmbeddingSpec,
    ExactSpec,
    GraderSpec,
    JsonSpec,
    LengthSpec,
    MathSpec,
    NumericSpec,
    RegexSpec,
    SectionsSpec,
    SimilaritySpec,
)
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.graders import text
from rewardsvc.graders.embedding import Embedder
from rewardsvc.graders.mathcheck import MathChecker
from rewardsvc.graders.result import GraderResult
from rewardsvc.graders.structured import json_check
from rewardsvc.graders.worker import DeadlineWorkers


class Graders:
    """Applies grader specs; create one per service and :meth:`close` it at shutdown."""

    def __init__(self, math_processes: int = 1) -> None:
        self.math = MathChecker(math_processes)
        self.schema_workers = DeadlineWorkers(1)
        self.embedder = Embedder()

    def warm(self) -> None:
        """Start the workers and import their libraries now (a second or two), so that
        no item's deadline pays for it."""
        self.math.warm()
        self.schema_workers.warm(importlib.import_module, "jsonschema")

    def grade(self, spec: GraderSpec, rollout: Rollout) -> GraderResult:
        """Score ``rollout`` with ``spec``; a grader that compares against a reference gives
        no score (with an error) when the rollout has none."""
        completion, reference = rollout.completion, rollout.reference
        if spec.type in NEEDS_REFERENCE and reference is None:
            return GraderResult(None, {}, f"grader {spec.type!r} needs a reference")
        match spec:
            case ExactSpec():
                return text.exact_match(completion, reference or "", spec)
            case NumericSpec():
                return text.numeric_match(completion, reference or "", spec)
            case MathSpec():
                return self.math.check(completion, reference or "", spec)
            case RegexSpec():
                return text.regex_match(completion, spec)
            case JsonSpec():
                return json_check(completion, spec, self.schema_workers)
            case LengthSpec():
                return text.length_check(completion, spec)
            case SectionsSpec():
                return text.sections_check(completion, spec)
            case SimilaritySpec():
                return text.similarity(completion, reference or "", spec)
            case EmbeddingSpec():
                return self.embedder.grade(completion, reference or "", spec)

    def close(self) -> None:
        """Stop the worker processes."""
        self.math.close()
        self.schema_workers.close()


async def grade_criteria(
    graders: Graders | None, rubric: Rubric, rollouts: Sequence[Rollout]
) -> list[dict[str, GraderResult]]:
    """The results of the grader criteria of ``rubric`` for each rollout, by criterion id,
    each computed in a worker thread (bounded in time, but CPU-bound). Without
    ``graders`` every such criterion gives no score, with an internal error."""
    criteria = [c for c in rubric.criteria if c.grader is not None]
    if not criteria:
        return [{} for _ in rollouts]

    async def one(criterion: Criterion, rollout: Rollout) -> GraderResult:
        if graders is None or criterion.grader is None:
            return GraderResult(None, {}, "internal: this engine has no graders")
        return await asyncio.to_thread(graders.grade, criterion.grader, rollout)

    pairs = [(c, r) for r in rollouts for c in criteria]
    results = iter(await asyncio.gather(*(one(c, r) for c, r in pairs)))
    return [{c.id: next(results) for c in criteria} for _ in rollouts]
