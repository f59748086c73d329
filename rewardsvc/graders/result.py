"""What a grader returns: a score in [0, 1] and the evidence behind it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rewardsvc.core.errors import JudgeErrorKind
from rewardsvc.core.verdict import Verdict


@dataclass(frozen=True)
class GraderResult:
    """A grader's score of one item, and what it extracted and compared.

    ``score`` is None only when the grader could not decide (a deadline passed, the
    embedding model is not installed); ``error`` then says why and ``kind`` names the
    failure (``grader_timeout``, ``grader_busy``, ...). ``evidence`` holds short
    JSON-ready values (extracted answer, normalized forms, the rule that decided), cut to
    a few hundred characters each so that a breakdown stays small.
    """

    score: float | None
    evidence: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    kind: JudgeErrorKind | None = None

    @property
    def passed(self) -> bool:
        """Score 1 (full marks)."""
        return self.score is not None and self.score >= 1.0

    def verdict(self) -> Verdict:
        """This result as the verdict of the rubric criterion the grader scores."""
        if self.score is None:
            return Verdict.failed(
                self.error or "the grader gave no score", kind=self.kind or "grader_failed"
            )
        return Verdict(score=self.score)


EVIDENCE_CHARS = 300


def clip_text(value: str | None, limit: int = EVIDENCE_CHARS) -> str | None:
    """``value`` cut to ``limit`` characters (marked with an ellipsis) for evidence."""
    if value is None or len(value) <= limit:
        return value
    return value[: limit - 1] + "…"
