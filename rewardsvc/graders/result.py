"""What a grader returns: a score in [0, 1] and the evidence behind it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rewardsvc.core.errors import JudgeErrorKind
from rewardsvc.core.verdict import Verdict
from rewardsvc.safety import tamper


@dataclass(frozen=True)
class GraderResult:
    """A grader's score of one item, and what it extracted and compared.

    ``score`` is None only when the grader could not decide (a deadline passed, the
    embedding model is not installed); ``error`` then says why and ``kind`` names the
    failure (``grader_timeout``, ``grader_busy``, ...). ``evidence`` holds short
    JSON-ready values (extracted answer, normalized forms, the rule that decided), cut to
    a few hundred characters each so that a breakdown stays small.

    ``flags`` are what the grader saw the item attempt (the tamper detector's flags on
    the code it ran, :mod:`rewardsvc.safety.tamper`), with their findings in
    ``evidence["tamper"]``: a recipe joins them to the item's flags, where they cost their
    penalty and are counted like the text detectors' flags.
    """

    score: float | None
    evidence: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    kind: JudgeErrorKind | None = None
    flags: tuple[str, ...] = ()

    def flagged(self, findings: Sequence[tamper.Finding]) -> GraderResult:
        """This result with the flags of ``findings`` and the findings as evidence (itself
        when there are none)."""
        if not findings:
            return self
        flags = tuple(sorted({*self.flags, *tamper.flags_of(findings)}))
        found = [*self.evidence.get("tamper", []), *tamper.evidence(findings)]
        return replace(self, flags=flags, evidence={**self.evidence, "tamper": found})

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
