"""What the fuzzer fuzzes: each target is one grader with one spec, the probes made for
it and the reference verdict it is held to.

A grader *says right* when its result passes (score 1; for ``similarity``, a score of at
least :data:`SIMILAR`); the reference says right when its check holds.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from rewardsvc.core import graders_spec as specs
from rewardsvc.fuzzing import jsons, reference, texts
from rewardsvc.fuzzing.answers import Probe, answer_probes
from rewardsvc.graders.result import GraderResult

SIMILAR = 0.8
"""The similarity score the fuzzer reads as "the grader says right"."""


@dataclass(frozen=True)
class Target:
    """One grader under one spec: its probes, its reference check, and when it passes."""

    name: str
    spec: specs.GraderSpec
    probes: Callable[[random.Random, int], list[Probe]]
    reference: Callable[[Probe], bool]
    threshold: float = 1.0

    def says_right(self, result: GraderResult) -> bool | None:
        """Whether the grader's result reads as right (None: it gave no score)."""
        return None if result.score is None else result.score >= self.threshold


def _answers(numeric: bool | None) -> Callable[[random.Random, int], list[Probe]]:
    return lambda rng, rounds: answer_probes(rng, rounds, numeric)


def _on_answer(check: Callable[[str, str], bool]) -> Callable[[Probe], bool]:
    return lambda probe: check(probe.completion, probe.reference)


TARGETS: tuple[Target, ...] = (
    Target("exact", specs.ExactSpec(type="exact"), _answers(None), _on_answer(reference.exact)),
    Target(
        "numeric", specs.NumericSpec(type="numeric"), _answers(True), _on_answer(reference.numeric)
    ),
    Target("math", specs.MathSpec(type="math"), _answers(True), _on_answer(reference.math_equal)),
    Target(
        "similarity",
        specs.SimilaritySpec(type="similarity", extract="auto"),
        _answers(False),
        _on_answer(reference.exact),
        threshold=SIMILAR,
    ),
    Target(
        "regex",
        specs.RegexSpec(
            type="regex", pattern=texts.REFUSAL, mode="must_not_match", case_insensitive=True
        ),
        texts.refusal_probes,
        texts.refusal_absent,
    ),
    Target("json", specs.JsonSpec(type="json"), jsons.json_probes, jsons.parses),
    Target(
        "json_schema",
        specs.JsonSpec(type="json", json_schema=jsons.SCHEMA),
        jsons.json_probes,
        jsons.conforms,
    ),
    Target(
        "length_max",
        specs.LengthSpec(type="length", max_words=texts.LIMIT),
        texts.length_probes,
        texts.within_max,
    ),
    Target(
        "length_min",
        specs.LengthSpec(type="length", min_words=texts.LIMIT),
        texts.length_probes,
        texts.reaches_min,
    ),
    Target(
        "sections",
        specs.SectionsSpec(type="sections", required=list(texts.REQUIRED)),
        texts.sections_probes,
        texts.has_sections,
    ),
)
"""Every grader the fuzzer covers (embedding is left out: it needs its optional model and
is a similarity score, fuzzed here through ``similarity``)."""
