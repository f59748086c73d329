"""The in-process graders: equivalent forms of one answer match, near misses do not."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from rewardsvc.core.graders_spec import (
    ExactSpec,
    GraderSpec,
    JsonSpec,
    LengthSpec,
    NumericSpec,
    RegexSpec,
    SectionsSpec,
    SimilaritySpec,
)
from rewardsvc.graders.structured import json_check
from rewardsvc.graders.text import (
    exact_match,
    length_check,
    numeric_match,
    regex_match,
    sections_check,
    similarity,
    to_number,
)

SPEC = TypeAdapter(GraderSpec)
EXACT = ExactSpec(type="exact")
NUMERIC = NumericSpec(type="numeric")

# ------------------------------------------------------------------ exact


@pytest.mark.parametrize(
    "completion",
    [
        "Final answer: Paris",
        "final answer: **paris.**",
        r"The capital is \boxed{\text{Paris}}",
        "  PARIS  ",
        "Final answer: Paris!",
    ],
)
def test_exact_match_equivalent_forms(completion: str) -> None:
    result = exact_match(completion, "Paris", EXACT)
    assert result.score == 1.0, result.evidence


@pytest.mark.parametrize(
    "completion", ["Final answer: Pariss", "Final answer: Paris, France", "Lyon", ""]
)
def test_exact_match_near_misses(completion: str) -> None:
    assert exact_match(completion, "Paris", EXACT).score == 0.0


def test_exact_match_options() -> None:
    strict = ExactSpec(type="exact", case_sensitive=True, ignore_punctuation=False)
    assert exact_match("Answer: paris", "Paris", strict).score == 0.0
    articles = ExactSpec(type="exact", ignore_articles=True)
    assert exact_match("Answer: the Eiffel Tower", "Eiffel tower", articles).score == 1.0
    assert exact_match("Answer: the Eiffel Tower", "Eiffel tower", EXACT).score == 0.0


def test_exact_match_evidence_shows_what_was_compared() -> None:
    result = exact_match(r"work \boxed{4} more work", "4", EXACT)
    assert result.evidence == {
        "extracted_by": "boxed",
        "answer": "4",
        "normalized": "4",
        "expected": "4",
    }


# ------------------------------------------------------------------ numeric


def _forms(value: int) -> list[str]:
    grouped = f"{value:,}"
    return [
        f"Final answer: {value}",
        f"Final answer: {grouped}",
        rf"so \boxed{{{grouped}}}",
        f"Final answer: ${grouped}",
        f"Final answer: {value} meters",
        f"Final answer: {value}.0",
        rf"\boxed{{\text{{{value}}}\,\text{{km}}}}",
    ]


@settings(deadline=None)
@given(st.integers(min_value=-(10**9), max_value=10**9))
def test_numeric_equivalent_forms_match(value: int) -> None:
    for form in _forms(value):
        result = numeric_match(form, str(value), NUMERIC)
        assert result.score == 1.0, (form, result.evidence)


@settings(deadline=None)
@given(st.integers(min_value=-(10**6), max_value=10**6))
def test_numeric_near_misses_do_not_match(value: int) -> None:
    for wrong in (value + 1, value - 1, value * 10 + 1):
        assert numeric_match(f"Final answer: {wrong}", str(value), NUMERIC).score == 0.0


@settings(deadline=None)
@given(
    st.fractions(min_value=-(10**6), max_value=10**6, max_denominator=50).filter(
        lambda f: f.denominator > 1
    )
)
def test_numeric_fractions_match_decimals(value: Fraction) -> None:
    latex = rf"\boxed{{\frac{{{value.numerator}}}{{{value.denominator}}}}}"
    assert numeric_match(latex, repr(float(value)), NUMERIC).score == 1.0
    assert numeric_match(f"Final answer: {value}", repr(float(value)), NUMERIC).score == 1.0
    near = float(value) * (1 + 1e-6) + 1e-6
    assert numeric_match(latex, repr(near), NUMERIC).score == 0.0


def test_numeric_tolerance() -> None:
    loose = NumericSpec(type="numeric", rel_tol=0.01)
    assert numeric_match("Final answer: 3.14", "3.14159", loose).score == 1.0
    assert numeric_match("Final answer: 3.14", "3.14159", NUMERIC).score == 0.0
    absolute = NumericSpec(type="numeric", rel_tol=0, abs_tol=0.5)
    assert numeric_match("Final answer: 10.4", "10", absolute).score == 1.0


def test_numeric_percent_and_no_number() -> None:
    assert to_number("50%") == 50.0
    assert to_number(r"-\$3") == -3.0
    assert to_number("1/0") is None
    assert numeric_match("Final answer: none", "5", NUMERIC).score == 0.0
    result = numeric_match("Final answer: 5", "five", NUMERIC)
    assert result.score is None and "reference" in (result.error or "")


# ------------------------------------------------------------------ regex


def test_regex_must_match_and_must_not_match() -> None:
    spec = RegexSpec(type="regex", pattern=r"\bI cannot\b", mode="must_not_match")
    assert regex_match("Sure, here it is.", spec).score == 1.0
    refused = regex_match("Sorry, I cannot help.", spec)
    assert refused.score == 0.0 and refused.evidence["matched"] == "I cannot"
    insensitive = RegexSpec(type="regex", pattern="hello", case_insensitive=True)
    assert regex_match("HeLLo there", insensitive).score == 1.0


def test_regex_backtracking_pattern_runs_linear_on_re2() -> None:
    """(a+)+$ makes a backtracking engine take exponential time on 'aaaa…b'; RE2 answers."""
    spec = RegexSpec(type="regex", pattern=r"^(a+)+$")
    assert regex_match("a" * 50_000 + "b", spec).score == 0.0
    assert regex_match("a" * 50_000, spec).score == 1.0


def test_regex_rejects_patterns_re2_cannot_run() -> None:
    with pytest.raises(ValidationError, match="RE2"):
        RegexSpec(type="regex", pattern=r"(a)\1")
    with pytest.raises(ValidationError, match="RE2"):
        RegexSpec(type="regex", pattern="(unclosed")


# ------------------------------------------------------------------ JSON

SCHEMA = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
}


def test_json_valid_and_schema_conformance() -> None:
    spec = JsonSpec(type="json", schema=SCHEMA)
    assert json_check('```json\n{"name": "Ada", "age": 36}\n```', spec).score == 1.0
    assert json_check('{"name": "Ada", "age": 36}', spec).score == 1.0
    wrong = json_check('{"name": "Ada", "age": -1}', spec)
    assert wrong.score == 0.0
    assert wrong.evidence["schema_errors"][0].startswith("$.age:")
    broken = json_check('{"name": "Ada",', spec)
    assert broken.score == 0.0 and "parse_error" in broken.evidence
    partial = JsonSpec(type="json", schema=SCHEMA, partial_credit=True)
    assert json_check('{"name": "Ada"}', partial).score == 0.5


def test_json_without_schema_and_deep_nesting() -> None:
    spec = JsonSpec(type="json")
    assert json_check("[1, 2, 3]", spec).score == 1.0
    assert json_check("[" * 100_000 + "]" * 100_000, spec).score == 0.0
    assert json_check("NaN-ish text", spec).score == 0.0


def test_json_schema_must_be_valid() -> None:
    with pytest.raises(ValidationError, match="JSON Schema"):
        JsonSpec(type="json", schema={"type": "no-such-type"})


# ------------------------------------------------------------------ length and sections


def test_length_budgets_hard_and_soft() -> None:
    hard = LengthSpec(type="length", max_words=5)
    assert length_check("one two three", hard).score == 1.0
    assert length_check("one two three four five six seven eight nine ten", hard).score == 0.0
    soft = LengthSpec(type="length", max_words=5, mode="soft")
    assert length_check(" ".join(["w"] * 10), soft).score == pytest.approx(0.5)
    minimum = LengthSpec(type="length", min_words=4, mode="soft")
    assert length_check("one two", minimum).score == pytest.approx(0.5)
    tokens = LengthSpec(type="length", max_tokens=2)
    result = length_check("x" * 12, tokens)
    assert result.score == 0.0 and result.evidence["approx_tokens"] == 3


def test_length_spec_needs_a_budget() -> None:
    with pytest.raises(ValidationError, match="at least one"):
        LengthSpec(type="length")
    with pytest.raises(ValidationError, match="more than max_words"):
        LengthSpec(type="length", min_words=10, max_words=5)


def test_sections_found_in_headings_only() -> None:
    spec = SectionsSpec(type="sections", required=["Summary", "Risks", "Next steps"])
    text = "## Summary\nok\n**Risks**\nsome\nNext steps:\n- a\n"
    assert sections_check(text, spec).score == 1.0
    mentioned = "We discuss the summary, the risks and next steps in prose."
    assert sections_check(mentioned, spec).score == 0.0
    in_code = "## Summary\n```\n## Risks\n```\n"
    result = sections_check(in_code, spec)
    assert result.score == pytest.approx(1 / 3)
    assert result.evidence["missing"] == ["Risks", "Next steps"]


# ------------------------------------------------------------------ similarity


def test_similarity_methods() -> None:
    ratio = SimilaritySpec(type="similarity")
    assert similarity("the cat sat", "the cat sat", ratio).score == 1.0
    assert 0.0 < similarity("the cat sat", "the dog sat", ratio).score < 1.0
    order = SimilaritySpec(type="similarity", method="token_sort")
    assert similarity("sat the cat", "the cat sat", order).score == 1.0
    assert similarity("sat the cat", "the cat sat", ratio).score < 1.0
    cut = SimilaritySpec(type="similarity", max_chars=3)
    result = similarity("abcdef", "abc", cut)
    assert result.score == 1.0 and result.evidence["truncated"] is True


# ------------------------------------------------------------------ specs


def test_specs_are_discriminated_by_type_and_forbid_unknown_fields() -> None:
    assert isinstance(SPEC.validate_python({"type": "numeric", "rel_tol": 0.1}), NumericSpec)
    with pytest.raises(ValidationError, match="rel_tolerance"):
        SPEC.validate_python({"type": "numeric", "rel_tolerance": 0.1})
    with pytest.raises(ValidationError):
        SPEC.validate_python({"type": "nonesuch"})
    with pytest.raises(ValidationError):
        SPEC.validate_python({"type": "numeric", "abs_tol": float("nan")})
    with pytest.raises(ValidationError):
        SPEC.validate_python({"type": "numeric", "abs_tol": float("inf")})


WORDS = st.lists(st.sampled_from(["alpha", "Beta", "gamma", "delta", "42", "x"]), min_size=1)


@settings(deadline=None)
@given(WORDS)
def test_exact_match_ignores_case_spacing_and_punctuation(words: list[str]) -> None:
    reference = " ".join(words)
    variant = "Final answer: " + "  ".join(w.upper() for w in words) + "."
    assert exact_match(variant, reference, EXACT).score == 1.0
    assert exact_match("Final answer: " + reference + " zeta", reference, EXACT).score == 0.0


@settings(deadline=None)
@given(st.text(max_size=200), st.sampled_from(["a+", r"\d{2,}", "(x|y)z", "^$", "[[:alpha:]]"]))
def test_must_not_match_is_the_complement_of_must_match(text: str, pattern: str) -> None:
    must = regex_match(text, RegexSpec(type="regex", pattern=pattern))
    must_not = regex_match(text, RegexSpec(type="regex", pattern=pattern, mode="must_not_match"))
    assert {must.score, must_not.score} == {0.0, 1.0}


@settings(deadline=None)
@given(st.text(min_size=1, max_size=100), st.text(min_size=1, max_size=100))
def test_similarity_is_bounded_and_one_on_identity(a: str, b: str) -> None:
    spec = SimilaritySpec(type="similarity")
    assert similarity(a, a, spec).score == 1.0 or not a.strip()
    score = similarity(a, b, spec).score
    assert score is not None and 0.0 <= score <= 1.0


# ------------------------------------------------------------------ found by the fuzzer
# (rewardsvc fuzz-graders: each of these passed before its fix)


@pytest.mark.parametrize(
    "completion",
    [
        "Final answer: not 51",
        "Final answer: it isn't 51",
        r"\boxed{\neq 51}",
        r"\boxed{x \neq 51}",
        r"\boxed{\text{not } 51}",
        "The answer is not 51.",
    ],
)
def test_numeric_negated_answer_is_wrong(completion: str) -> None:
    result = numeric_match(completion, "51", NUMERIC)
    assert result.score == 0.0 and result.evidence["refused"] == "the answer is negated"


@pytest.mark.parametrize(
    "completion",
    [r"\boxed{2^{51}}", r"\boxed{\sqrt{51}}", "Final answer: 51!", r"\boxed 51"],
)
def test_numeric_operand_is_not_the_answer(completion: str) -> None:
    assert numeric_match(completion, "51", NUMERIC).score == 0.0


@pytest.mark.parametrize(
    "completion",
    [
        "Final answer: 50 or 51",
        r"\boxed{50, 51}",
        "Final answer: between 50 and 51",
        r"\boxed{1 \times 51}",
    ],
)
def test_numeric_declared_answer_with_several_numbers_is_wrong(completion: str) -> None:
    result = numeric_match(completion, "51", NUMERIC)
    assert result.score == 0.0 and result.evidence["refused"] == "the answer holds several numbers"


def test_numeric_digits_of_two_scripts_and_superscripts() -> None:
    assert numeric_match("Final answer: 5١", "51", NUMERIC).score == 0.0
    assert numeric_match("Final answer: ٥١", "51", NUMERIC).score == 1.0
    assert numeric_match("Final answer: 5¹", "51", NUMERIC).score == 0.0
    assert to_number("2⁴") == 4.0  # a power, not 24


def test_numeric_whole_text_still_reads_its_last_number() -> None:
    """auto's whole-text fallback keeps the GSM8K reading (a documented choice)."""
    assert numeric_match("6 times 7 makes 42", "42", NUMERIC).score == 1.0


def test_exact_keeps_the_sign_and_point_of_a_number() -> None:
    assert exact_match("Final answer: -2.5", "2.5", EXACT).score == 0.0
    assert exact_match("Final answer: -15", "15", EXACT).score == 0.0
    assert exact_match("Final answer: −15", "-15", EXACT).score == 1.0
    assert exact_match("Final answer: 2.5.", "2.5", EXACT).score == 1.0
    assert exact_match("Final answer: 2⁴", "24", EXACT).score == 0.0


def test_length_counts_words_glued_by_invisible_characters_and_not_padding() -> None:
    spec = LengthSpec(type="length", max_words=5)
    assert length_check("\u200b".join(["word"] * 10), spec).score == 0.0
    assert length_check("\u2060".join(["word"] * 10), spec).score == 0.0
    minimum = LengthSpec(type="length", min_words=5)
    assert length_check("two words - - - - ** |", minimum).score == 0.0
    assert length_check("well-known 42 words in a row", minimum).score == 1.0


def test_json_refuses_nan_infinity_and_repeated_keys() -> None:
    plain = JsonSpec(type="json")
    for text in ('{"age": NaN}', "[Infinity]", "-Infinity"):
        result = json_check(text, plain)
        assert result.score == 0.0 and "not JSON" in result.evidence["parse_error"]
    schema = JsonSpec(type="json", schema=SCHEMA)
    repeated = json_check('{"name": "Ada", "age": -1, "age": 5}', schema)
    assert repeated.score == 0.0 and "repeats" in repeated.evidence["parse_error"]
