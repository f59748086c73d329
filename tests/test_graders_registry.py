"""The grader table: one entry per grader, and the registry binds a function to each."""

from __future__ import annotations

from typing import Literal

import pytest

from rewardsvc.core import graders_spec
from rewardsvc.core.graders_spec import GRADERS, Grader, SpecModel, needs_reference
from rewardsvc.graders import registry
from rewardsvc.graders.registry import FUNCTIONS, grade_here
from rewardsvc.graders.result import GraderResult


def test_every_spec_has_exactly_one_function_and_every_function_a_spec() -> None:
    specs = [g.spec for g in GRADERS]
    assert len(specs) == len(set(specs))
    assert len({g.name for g in GRADERS}) == len(GRADERS)
    assert set(FUNCTIONS) == set(specs)


def test_needs_reference_set_is_the_table_s() -> None:
    assert {"exact", "numeric", "math", "similarity", "embedding"} == graders_spec.NEEDS_REFERENCE


class ToySpec(SpecModel):
    """A grader that scores the completion's length parity."""

    type: Literal["toy"]


def _toy(completion: str, reference: str, spec: ToySpec) -> GraderResult:
    return GraderResult(float(len(completion) % 2 == 0), {"reference": reference}, None)


def test_a_grader_added_to_the_tables_is_usable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graders_spec, "GRADERS", (*GRADERS, Grader(ToySpec, needs_reference=True)))
    monkeypatch.setitem(registry.FUNCTIONS, ToySpec, _toy)
    spec = ToySpec(type="toy")
    assert graders_spec.grader_for("toy") == Grader(ToySpec, needs_reference=True)
    assert needs_reference(spec)
    result = grade_here(spec, "ab", "ref")
    assert result.score == 1.0
    assert result.evidence == {"reference": "ref"}
