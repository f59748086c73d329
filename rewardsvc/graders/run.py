"""One entry point for every grader: :class:`Graders` applies any grader spec to a rollout.

It owns what the graders share across items: the math-verify worker processes, the
worker that validates JSON Schemas with regular expressions, and the embedding model.
Each call is synchronous and bounded in time; async callers run it in a thread.
"""

from __future__ import annotations

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
        """Start the math workers now (a second or two), not on the first math item."""
        self.math.warm()

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
