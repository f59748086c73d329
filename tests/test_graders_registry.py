"""The grader table: one spec class per grader, saying what it needs, and the registry
binds exactly one function to each."""

from __future__ import annotations

from typing import ClassVar, Literal

import pytest

from rewardsvc.core import graders_spec
from rewardsvc.core.graders_spec import GRADERS, MathSpec, SpecModel, spec_type
from rewardsvc.graders import registry
from rewardsvc.graders.registry import FUNCTIONS, SANDBOXED, Graders, grade_here
from rewardsvc.graders.result import GraderResult


def test_every_spec_has_exactly_one_function_and_every_function_a_spec() -> None:
    assert len(GRADERS) == len(set(GRADERS))
    assert len({spec_type(g) for g in GRADERS}) == len(GRADERS)
    assert set(FUNCTIONS) | set(SANDBOXED) == set(GRADERS)
    assert not set(FUNCTIONS) & set(SANDBOXED)
    assert all(g.in_sandbox for g in SANDBOXED)


def test_the_specs_say_which_graders_need_a_reference() -> None:
    needing = {spec_type(g) for g in GRADERS if g.needs_reference}
    assert needing == {"exact", "numeric", "math", "similarity", "embedding"}


def test_the_specs_say_where_their_graders_run_and_for_how_long() -> None:
    in_service = [spec_type(g) for g in GRADERS if not g.in_workers and not g.in_sandbox]
    assert in_service == ["embedding"]
    sandboxed = [spec_type(g) for g in GRADERS if g.in_sandbox]
    assert sandboxed == ["io_cases", "check_program", "unit_tests"]
    assert not any(g.in_workers for g in GRADERS if g.in_sandbox)
    graders = Graders(workers=1, timeout_s=1.5)
    try:
        assert graders._limit(MathSpec(type="math", timeout_s=7)) == 7
        assert graders._limit(graders_spec.LengthSpec(type="length", max_words=3)) == 1.5
    finally:
        graders.close()


class ToySpec(SpecModel):
    """A grader that scores the completion's length parity."""

    type: Literal["toy"]
    needs_reference: ClassVar[bool] = True


def _toy(completion: str, reference: str, spec: ToySpec) -> GraderResult:
    return GraderResult(float(len(completion) % 2 == 0), {"reference": reference}, None)


def test_a_grader_added_to_the_tables_is_usable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graders_spec, "GRADERS", (*GRADERS, ToySpec))
    monkeypatch.setitem(registry.FUNCTIONS, ToySpec, _toy)
    spec = ToySpec(type="toy")
    assert graders_spec.grader_for("toy") is ToySpec
    assert spec.needs_reference
    result = grade_here(spec, "ab", "ref")
    assert result.score == 1.0
    assert result.evidence == {"reference": "ref"}
