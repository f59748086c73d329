"""Run the targets' probes through the graders and count where they and the reference
disagree: a false positive is a probe the grader passes and the reference does not, a
false negative the reverse. A false positive whose (grader, shape) the table of
:mod:`~rewardsvc.fuzzing.explained` names is *explained* (a documented choice); any other
is *unexplained* and fails the run.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from rewardsvc.fuzzing.answers import Probe
from rewardsvc.fuzzing.explained import explanation
from rewardsvc.fuzzing.targets import TARGETS, Target
from rewardsvc.graders.registry import grade_here

EXAMPLES = 3
"""Unexplained false positives kept per (grader, shape) as examples in the report."""


@dataclass
class Tally:
    """Counts of one grader on one mutation family."""

    cases: int = 0
    agree: int = 0
    false_positives: int = 0
    explained: int = 0
    false_negatives: int = 0
    no_score: int = 0

    def add(self, grader: bool | None, truth: bool, explained: bool) -> None:
        """Count one probe: the grader's reading (None: no score) and the reference's."""
        self.cases += 1
        if grader is None:
            self.no_score += 1
        elif grader == truth:
            self.agree += 1
        elif grader:
            self.false_positives += 1
            self.explained += explained
        else:
            self.false_negatives += 1

    @property
    def unexplained(self) -> int:
        """False positives no documented choice accounts for."""
        return self.false_positives - self.explained


@dataclass
class Finding:
    """One unexplained false positive, as an example for the report."""

    grader: str
    family: str
    shape: str
    completion: str
    reference: str


@dataclass
class Report:
    """Every grader's tallies by family, the explained (grader, shape, reason) met with
    their counts, the unexplained examples."""

    seed: int
    rounds: int
    tallies: dict[str, dict[str, Tally]] = field(default_factory=dict)
    explained_shapes: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)

    def total(self, grader: str) -> Tally:
        """The grader's counts over all families."""
        out = Tally()
        for t in self.tallies.get(grader, {}).values():
            for name in (
                "cases",
                "agree",
                "false_positives",
                "explained",
                "false_negatives",
                "no_score",
            ):
                setattr(out, name, getattr(out, name) + getattr(t, name))
        return out

    @property
    def unexplained(self) -> int:
        """Unexplained false positives over every grader."""
        return sum(self.total(g).unexplained for g in self.tallies)


def run_target(target: Target, report: Report) -> None:
    """Grade the target's probes (seeded by the run's seed and the target's name)."""
    rng = random.Random(f"{report.seed}:{target.name}")
    families = report.tallies.setdefault(target.name, {})
    shown: Counter[str] = Counter()
    for probe in target.probes(rng, report.rounds):
        truth = target.reference(probe)
        result = grade_here(target.spec, probe.completion, probe.reference)
        said = target.says_right(result)
        why = explanation(target.name, probe.shape, result.evidence.get("extracted_by"))
        families.setdefault(probe.family, Tally()).add(said, truth, why is not None)
        if said and not truth:
            if why is not None:
                report.explained_shapes[(target.name, probe.shape, why)] += 1
            elif shown[probe.shape] < EXAMPLES:
                shown[probe.shape] += 1
                report.findings.append(_finding(target.name, probe))


def _finding(grader: str, probe: Probe) -> Finding:
    return Finding(grader, probe.family, probe.shape, probe.completion, probe.reference)


def fuzz(seed: int = 0, rounds: int = 3, graders: Sequence[str] | None = None) -> Report:
    """A seeded run of ``rounds`` passes over every family of each target (all targets,
    or those named in ``graders``)."""
    report = Report(seed, rounds)
    for target in TARGETS:
        if graders is None or target.name in graders:
            run_target(target, report)
    return report
