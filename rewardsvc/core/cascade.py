"""Cascades of judges: cheap stages first, a criterion escalated only when they are unsure.

A rubric's ``cascade`` is an ordered list of stages, each one judge or a set of judges
(an ensemble stage), every one of them listed in the rubric's ``judges``. Every question
goes to the first stage; only the questions its escalation rule finds uncertain go to the
next, and so on; the last stage decides whatever reaches it. The rule is a strategy
object: :class:`Band` (the stage's probability, P(yes) for a binary criterion under the
logprob method, inside ``[lo, hi]``), :class:`Entropy` (the stage's answer distribution
more uncertain than a bound) or :class:`Disagreement` (the stage's judges further apart
than a bound). ``scope: item`` escalates a whole item when any of its criteria is uncertain.

The cascade lives in the rubric, not the judge pool: its thresholds are fitted on a
rubric's labelled items (``rewardsvc cascade calibrate``) and change its rewards, so they
are part of its version like the criteria.

A stage's answer on one criterion is :func:`stage_answer`: the mean of the scores of its
judges that answered (each judge's probability as its method gives it, calibrated or not,
used as-is), with the uncertainty of the ensemble (variance between its judges plus their
mean variance within); fewer answers than the stage's ``min_judges`` is a failed verdict
with the first failure's kind, never a score. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from rewardsvc.core.base import StrictModel
from rewardsvc.core.criterion import Identifier
from rewardsvc.core.verdict import Verdict


class Band(StrictModel):
    """Escalate when the stage's probability (its mean score over its judges: P(yes) for
    a binary criterion under the logprob method) lies in ``[lo, hi]``."""

    kind: Literal["band"]
    lo: float = Field(ge=0.0, le=1.0, description="Lowest uncertain probability.")
    hi: float = Field(ge=0.0, le=1.0, description="Highest uncertain probability.")

    @model_validator(mode="after")
    def _ordered(self) -> Band:
        if self.lo > self.hi:
            raise ValueError(f"lo: {self.lo} is above hi: {self.hi}")
        return self

    def escalates(self, answer: Verdict, scores: Sequence[float]) -> bool:
        """Whether ``answer`` (the stage's, scored) is inside the band."""
        return answer.score is not None and self.lo <= answer.score <= self.hi


class Entropy(StrictModel):
    """Escalate when the entropy of the stage's answer distribution (its mean ``p`` over
    its judges, else the Bernoulli of its score), normalized to [0, 1] by the log of the
    number of answers, is above ``above``."""

    kind: Literal["entropy"]
    above: float = Field(ge=0.0, le=1.0, description="Highest confident normalized entropy.")

    def escalates(self, answer: Verdict, scores: Sequence[float]) -> bool:
        """Whether ``answer`` is more uncertain than the bound."""
        return normalized_entropy(answer) > self.above


class Disagreement(StrictModel):
    """Escalate when the stage's judges' scores span more than ``above`` (max - min); an
    ensemble stage only."""

    kind: Literal["disagreement"]
    above: float = Field(ge=0.0, le=1.0, description="Widest agreeing spread of scores.")

    def escalates(self, answer: Verdict, scores: Sequence[float]) -> bool:
        """Whether the judges that answered are further apart than the bound."""
        return len(scores) > 1 and max(scores) - min(scores) > self.above


Rule = Annotated[Band | Entropy | Disagreement, Field(discriminator="kind")]


class Stage(StrictModel):
    """One stage: its judges (one, or an ensemble whose answers are averaged) and when a
    question goes on to the next stage (unset on the last stage, which decides)."""

    judges: list[Identifier] = Field(min_length=1, description="Judges of the rubric's list.")
    escalate: Rule | None = Field(
        default=None, description="When a question goes on to the next stage."
    )
    min_judges: int = Field(
        default=1, ge=1, description="Fewer answers than this: the stage failed (no score)."
    )


class Cascade(StrictModel):
    """An ordered list of stages; each question is decided by the first confident one."""

    stages: list[Stage] = Field(min_length=2, description="Cheapest first.")
    scope: Literal["criterion", "item"] = Field(
        default="criterion",
        description="criterion: each criterion escalates alone; item: an item goes on "
        "whole when any of its criteria is uncertain.",
    )
    name: Identifier = Field(
        default="cascade", description="The name the cascade's scores take among the judges."
    )

    @model_validator(mode="after")
    def _check(self) -> Cascade:
        seen: set[str] = set()
        for n, stage in enumerate(self.stages):
            last = n == len(self.stages) - 1
            if last and stage.escalate is not None:
                raise ValueError(f"stages[{n}].escalate: the last stage decides, it has none")
            if not last and stage.escalate is None:
                raise ValueError(f"stages[{n}].escalate: every stage but the last needs one")
            if isinstance(stage.escalate, Disagreement) and len(stage.judges) < 2:
                raise ValueError(f"stages[{n}].escalate: disagreement needs two judges or more")
            if stage.min_judges > len(stage.judges):
                raise ValueError(f"stages[{n}].min_judges: more than its judges")
            for name in stage.judges:
                if name in seen:
                    raise ValueError(f"stages[{n}].judges: {name!r} is in two stages")
                seen.add(name)
        return self

    @property
    def whole_items(self) -> bool:
        """Whether an item goes on whole when any of its criteria is uncertain."""
        return self.scope == "item"

    @property
    def judges(self) -> list[str]:
        """Every stage's judges, in stage order."""
        return [name for stage in self.stages for name in stage.judges]

    def spread(self, uncertain: dict[str, bool]) -> dict[str, bool]:
        """Which of one item's criteria go on, from which are ``uncertain``: under
        ``scope: item`` all of them when any is."""
        if self.whole_items and any(uncertain.values()):
            return dict.fromkeys(uncertain, True)
        return uncertain


def normalized_entropy(answer: Verdict) -> float:
    """The entropy of ``answer``'s distribution in [0, 1] (its ``probs``, else the
    Bernoulli of its score); 0 for a failed answer."""
    if answer.probs:
        ps = [p for p in answer.probs.values() if p > 0]
        size = len(answer.probs)
    elif answer.score is not None:
        ps = [p for p in (answer.score, 1.0 - answer.score) if p > 0]
        size = 2
    else:
        return 0.0
    total = sum(ps)
    if size < 2 or total <= 0:
        return 0.0
    return -sum(p / total * math.log(p / total) for p in ps) / math.log(size)


@dataclass(frozen=True)
class StageAnswer:
    """A stage's answer on one question: the merged verdict, its judges' scores and
    whether fewer of them answered than were asked (a degraded answer)."""

    verdict: Verdict
    scores: tuple[float, ...]
    short: bool


def stage_answer(stage: Stage, verdicts: Sequence[Verdict]) -> StageAnswer:
    """The answer of ``stage`` from its judges' ``verdicts`` on one question."""
    ok = [v for v in verdicts if v.ok and v.score is not None]
    if len(ok) < stage.min_judges:
        failed = next((v for v in verdicts if not v.ok), None)
        kind = failed.error_kind if failed is not None and failed.error_kind else "internal"
        why = "; ".join(v.error or "no score" for v in verdicts if not v.ok)
        error = f"{len(ok)} of {len(verdicts)} judges of the stage answered: {why}"
        return StageAnswer(Verdict.failed(error, kind=kind), (), True)
    scores = tuple(v.score for v in ok if v.score is not None)
    mean = sum(scores) / len(scores)
    between = sum((s - mean) ** 2 for s in scores) / len(scores)
    within = sum(v.variance for v in ok) / len(ok)
    merged = Verdict(
        score=mean,
        variance=between + within,
        probs=_mean_probs(ok),
        prompt_tokens=sum(v.prompt_tokens for v in ok),
        completion_tokens=sum(v.completion_tokens for v in ok),
        latency_ms=max(v.latency_ms for v in ok),
    )
    return StageAnswer(merged, scores, len(ok) < len(verdicts))


def _mean_probs(verdicts: Sequence[Verdict]) -> dict[str, float] | None:
    """The mean distribution of ``verdicts`` when every one has the same answers."""
    dists = [v.probs for v in verdicts]
    first = dists[0]
    if first is None or any(d is None or d.keys() != first.keys() for d in dists):
        return None
    return {k: sum(d[k] for d in dists if d is not None) / len(dists) for k in first}


def check_in_rubric(
    cascade: Cascade,
    judges: Sequence[str],
    implicit: bool,
    stepped: bool,
    tooled: bool,
    objective_judges: bool = False,
) -> None:
    """Refuse a cascade its rubric cannot run (``ValueError`` naming the field): every
    stage judge in the rubric's ``judges`` and every listed judge in a stage; criteria
    asked one by one of plain judges (no ``combine: implicit``, step criteria or tools);
    no objective naming judges (the cascade's rewards have one row, not one per judge)."""
    staged = cascade.judges
    for name in staged:
        if name not in judges:
            raise ValueError(f"cascade: judge {name!r} is not in the rubric's judges")
    for name in judges:
        if name not in staged:
            raise ValueError(f"judges: {name!r} is in no stage of the cascade")
    if cascade.name in judges:
        raise ValueError(f"cascade.name: {cascade.name!r} is also a judge's name")
    if implicit:
        raise ValueError("cascade: combine implicit asks one holistic question; use explicit")
    if stepped:
        raise ValueError("cascade: criteria with scope: step are not cascaded")
    if tooled:
        raise ValueError("cascade: agentic questions (tools) are not cascaded")
    if objective_judges:
        raise ValueError("objectives: a cascaded rubric's objectives name criteria, not judges")
