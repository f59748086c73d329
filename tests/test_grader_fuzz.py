"""Verifier fuzzing: the generator is seeded, the reference check is strict where it
should be, and a bounded fuzz leaves no unexplained false positive in math and numeric
(nor in any other grader)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rewardsvc.cli import main
from rewardsvc.fuzzing import explained, reference, strict
from rewardsvc.fuzzing.answers import FAMILIES, ITEMS, answer_probes
from rewardsvc.fuzzing.runner import fuzz
from rewardsvc.fuzzing.targets import TARGETS


def test_the_generator_is_deterministic_per_seed() -> None:
    first = answer_probes(random.Random(3), 1, None)
    assert first == answer_probes(random.Random(3), 1, None)
    assert first != answer_probes(random.Random(4), 1, None)
    assert {p.family for p in first} == {f.__name__.replace("_tricks", "") for f in FAMILIES}


@pytest.mark.parametrize(
    ("completion", "right"),
    [
        (r"\boxed{42}", True),
        ("Reasoning.\nFinal answer: 42 meters\n\nHope this helps!", True),
        (r"\boxed{\boxed{42}}", True),
        ("Final answer: ４２", True),
        ("Final answer: ٤٢", True),
        (r"\boxed{41} or rather \boxed{42}", False),
        (r"\boxed{42}. Wait, that is wrong: it is 43.", False),
        ("Final answer: not 42", False),
        (r"\boxed{\neq 42}", False),
        (r"\boxed{2^{42}}", False),
        ("Final answer: 4٢", False),
        ("Final answer: 4²", False),
        ("I tried 42, hmm, hard to say.", False),
        (r"\boxed{42\%}", False),
        (r"\boxed{42} 17 23", False),
    ],
)
def test_the_reference_check_is_strict(completion: str, right: bool) -> None:
    assert reference.numeric(completion, "42") is right


def test_the_math_reference_evaluates_rational_expressions_exactly() -> None:
    assert reference.math_equal(r"\boxed{\frac{84}{2}}", "42")
    assert reference.math_equal(r"\boxed{4.2 \times 10^{1}}", "42")
    assert reference.math_equal(r"\boxed{\sqrt{1764}}", "42")
    assert not reference.math_equal(r"\boxed{\sqrt{42}}", "42")
    assert not reference.math_equal(r"\boxed{42 + 0.000001}", "42")
    assert reference.evaluate("2^{1000}") is None  # exponents are bounded


def test_code_and_comments_hold_no_declaration() -> None:
    text = "```\nFinal answer: 7\n```\n<!-- \\boxed{7} -->\nFinal answer: 8"
    assert strict.final_answer(text) == "8"


def test_every_target_has_probes_and_every_choice_names_a_target() -> None:
    rng = random.Random(0)
    names = {t.name for t in TARGETS}
    for target in TARGETS:
        assert target.probes(rng, 1), target.name
    assert {c.grader for c in explained.CHOICES} <= names
    assert all(c.reason.strip() for c in explained.CHOICES)
    assert len(ITEMS) >= 10


def test_a_bounded_fuzz_leaves_no_unexplained_false_positive_in_math_and_numeric() -> None:
    report = fuzz(seed=1, rounds=1, graders=["numeric", "math"])
    for grader in ("numeric", "math"):
        total = report.total(grader)
        assert total.cases > 400, grader
        assert total.unexplained == 0, [f for f in report.findings if f.grader == grader]
    assert report.findings == []


def test_a_bounded_fuzz_of_the_other_graders_is_explained_too() -> None:
    others = [t.name for t in TARGETS if t.name not in ("numeric", "math")]
    report = fuzz(seed=2, rounds=1, graders=others)
    assert set(report.tallies) == set(others)
    assert report.unexplained == 0, report.findings


def test_an_unexplained_false_positive_fails_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without its documented choices the fuzzer's findings fail the run (exit 1), and
    the JSON report lists them."""
    out = tmp_path / "fuzz.json"
    args = ["fuzz-graders", "--rounds", "1", "--grader", "sections", "--json", str(out)]
    assert main([*args, "--report", str(tmp_path / "fuzz.md")]) == 0
    monkeypatch.setattr(explained, "_BY_SHAPE", {})
    assert main(args) == 1
    body = json.loads(out.read_text())
    assert body["unexplained_false_positives"] > 0
    assert {f["shape"] for f in body["unexplained"]} >= {"empty_sections", "negated_heading"}
