"""Graders on plain text: exact match, numeric match, regex, length, sections, similarity.

Each is a pure function of the completion, the reference (where the grader compares
against one) and its typed spec. All but similarity run in time linear in their inputs
(RE2 in time linear in the text for a given pattern); similarity's ``partial`` method
costs the product of the two lengths (1.5 s for two 3,000-character texts), which the
grader workers' time limit bounds.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from fractions import Fraction
from typing import Any

import re2
from rapidfuzz import fuzz

from rewardsvc.core.graders_spec import (
    ExactSpec,
    LengthSpec,
    NumericSpec,
    RegexSpec,
    SectionsSpec,
    SimilaritySpec,
)
from rewardsvc.graders.extract import (
    NumberToken,
    extract,
    extract_reference,
    last_number,
    negated,
    numbers,
    prose,
)
from rewardsvc.graders.result import GraderResult, clip_text

_LATEX_TEXT = re.compile(r"\\(?:text|mathrm|textbf|mathbf|operatorname)\s*\{([^{}]*)\}")
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_LATEX_SPACING = re.compile(r"\\[,!;: ]|\\quad|\\qquad|\\left|\\right|\{,\}")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
# NFKC writes a superscript as its digit, so "2⁴" would read 24: it is kept a power.
_SUPERSCRIPTS = str.maketrans({s: "^" + d for s, d in zip("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789", strict=True)})
# An operator or command right before a number, or a factorial or power right after it,
# makes it an operand (2^{51}, \sqrt{51}, 51!), not the answer.
_OPERAND_BEFORE = re.compile(r"(?:[\^_]|\\[a-zA-Z]+)[ {]*$")
_OPERAND_AFTER = re.compile(r"^[ }]*[!^]")
_CONTEXT = 40
_DECLARED = ("boxed", "final_line")
_SPACES = re.compile(r"\s+")
# Punctuation that is part of a number survives ignore_punctuation: a minus sign before a
# digit (else "-2.5" == "2.5") and a decimal point between digits (else "2.5" == "2 5").
# They are held as private-use characters while the rest of the punctuation goes.
_KEPT_MINUS, _KEPT_POINT = "\ue000", "\ue001"
_NUMBER_MARKS = re.compile(r"(?:(?<![\w.])[-−‐‑–](?=\d))|(?:(?<=\d)\.(?=\d))")


def _no_answer(extracted_by: str) -> GraderResult:
    return GraderResult(0.0, {"extracted_by": extracted_by, "answer": None}, None)


def normalize_text(text: str, spec: ExactSpec) -> str:
    """The comparison form of an answer: NFKC, LaTeX text wrappers and ``$`` removed,
    then case, punctuation and articles per ``spec``, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text.translate(_SUPERSCRIPTS))
    text = _LATEX_TEXT.sub(r"\1", text).replace("$", "")
    if not spec.case_sensitive:
        text = text.casefold()
    if spec.ignore_punctuation:
        text = text.replace(_KEPT_MINUS, "").replace(_KEPT_POINT, "")
        text = _NUMBER_MARKS.sub(lambda m: _KEPT_POINT if m.group() == "." else _KEPT_MINUS, text)
        text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text)
        text = text.replace(_KEPT_POINT, ".").replace(_KEPT_MINUS, "-")
    if spec.ignore_articles:
        text = _ARTICLES.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


def exact_match(completion: str, reference: str, spec: ExactSpec) -> GraderResult:
    """1 when the normalized extracted answer equals the normalized reference, else 0."""
    found = extract(completion, spec.extract)
    if found.text is None:
        return _no_answer(found.method)
    expected = extract_reference(reference, spec.extract)
    got, want = normalize_text(found.text, spec), normalize_text(expected, spec)
    return GraderResult(
        float(got == want),
        {
            "extracted_by": found.method,
            "answer": clip_text(found.text),
            "normalized": clip_text(got),
            "expected": clip_text(want),
        },
    )


def _number_text(text: str) -> str:
    """``text`` without what formats a number: LaTeX spacing, text wrappers, currency and
    percent signs; ``\\frac{a}{b}`` becomes a/b, superscripts powers."""
    text = unicodedata.normalize("NFKC", text.translate(_SUPERSCRIPTS)).replace("−", "-")
    text = _LATEX_SPACING.sub("", _LATEX_TEXT.sub(r"\1", text))
    text = _LATEX_FRAC.sub(r"(\1)/(\2)", text)
    text = text.replace("(", "").replace(")", "")
    for sign in ("\\$", "$", "\\%", "%", "€", "£", "¥"):
        text = text.replace(sign, "")
    return text


def _value(token: str) -> float | None:
    token = token.replace(",", "").replace(" ", "")
    try:
        if "/" in token:
            numerator, denominator = token.split("/", 1)
            if float(denominator) == 0:
                return None
            value = float(Fraction(numerator) / Fraction(denominator))
        else:
            value = float(token)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def to_number(text: str) -> float | None:
    """The last number in ``text`` after removing what formats it: LaTeX spacing, text
    wrappers, currency and percent signs, thousands separators; ``\\frac{a}{b}`` and
    ``a/b`` become a / b. None when there is no number."""
    token = last_number(_number_text(text))
    return None if token is None else _value(token)


def _scripts(token: str) -> int:
    """How many scripts of decimal digits ``token`` mixes (``5١`` mixes two)."""
    return len({ord(ch) - unicodedata.decimal(ch) for ch in token if ch.isdecimal()})


def _refusal(text: str, found: list[NumberToken], declared: bool) -> str | None:
    """Why the number of an answer is not its value, None when it is."""
    if declared and len(found) > 1:
        return "the answer holds several numbers"
    last = found[-1]
    before = text[max(0, last.start - _CONTEXT) : last.start]  # bounded: no rescans
    if _OPERAND_BEFORE.search(before) or _OPERAND_AFTER.match(text[last.end : last.end + _CONTEXT]):
        return "the number is an operand of an expression"
    if _scripts(last.text) > 1:
        return "the number mixes digits of two scripts"
    return None


def read_number(answer: str, declared: bool) -> tuple[float | None, str | None]:
    """The value of an answer's number and, when the number is not the answer's value,
    why: a negated answer, an operand (``2^{51}``, ``\\sqrt{51}``), digits of two
    scripts, or (in a ``declared`` answer: a box or final line) several numbers."""
    if negated(answer):
        return None, "the answer is negated"
    text = _number_text(answer)
    found = numbers(text)
    if not found:
        return None, None
    refused = _refusal(text, found, declared)
    return (None, refused) if refused else (_value(found[-1].text), None)


def numeric_match(completion: str, reference: str, spec: NumericSpec) -> GraderResult:
    """1 when the extracted number is within ``rel_tol`` or ``abs_tol`` of the reference's;
    0 when the answer has no number, or its number is not its value (see
    :func:`read_number`)."""
    found = extract(completion, spec.extract)
    if found.text is None:
        return _no_answer(found.method)
    want = to_number(extract_reference(reference, spec.extract))
    evidence: dict[str, Any] = {"extracted_by": found.method, "answer": clip_text(found.text)}
    if want is None:
        return GraderResult(None, evidence, "the reference holds no number")
    got, refused = read_number(found.text, found.method in _DECLARED)
    evidence |= {"value": got, "expected": want}
    if refused:
        evidence["refused"] = refused
    if got is None:
        return GraderResult(0.0, evidence)
    close = math.isclose(got, want, rel_tol=spec.rel_tol, abs_tol=spec.abs_tol)
    return GraderResult(float(close), evidence)


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str, case_insensitive: bool) -> re2._Regexp:
    options = re2.Options()
    options.case_sensitive = not case_insensitive
    return re2.compile(pattern, options)


def regex_match(completion: str, spec: RegexSpec) -> GraderResult:
    """Search with RE2 (linear time); ``must_not_match`` inverts the score."""
    found = extract(completion, spec.extract)
    text = found.text or ""
    match = _compiled(spec.pattern, spec.case_insensitive).search(text)
    matched = match is not None
    score = float(matched) if spec.mode == "must_match" else float(not matched)
    return GraderResult(
        score,
        {
            "extracted_by": found.method,
            "matched": clip_text(match.group(0)) if match else None,
            "mode": spec.mode,
        },
    )


def approx_tokens(text: str) -> int:
    """About four characters per token, the rule of thumb for English BPE tokenizers."""
    return math.ceil(len(text) / 4)


def count_words(text: str) -> int:
    """Words: runs that hold a letter or a digit, split at spaces and at invisible format
    characters (a zero-width space or word joiner glues no words into one), so that
    neither glue nor padding with dashes and markup moves the count."""
    spaced = "".join(" " if unicodedata.category(ch) == "Cf" else ch for ch in text)
    return sum(1 for token in spaced.split() if any(ch.isalnum() for ch in token))


def length_check(completion: str, spec: LengthSpec) -> GraderResult:
    """Word (:func:`count_words`) and approximate token budgets: hard (0 outside) or
    soft (ratio)."""
    words = count_words(completion)
    tokens = approx_tokens(completion)
    ratios: list[float] = []
    if spec.max_words is not None:
        ratios.append(min(1.0, spec.max_words / words) if words else 1.0)
    if spec.min_words is not None:
        ratios.append(min(1.0, words / spec.min_words) if spec.min_words else 1.0)
    if spec.max_tokens is not None:
        ratios.append(min(1.0, spec.max_tokens / tokens) if tokens else 1.0)
    within = all(r >= 1.0 for r in ratios)
    score = float(within) if spec.mode == "hard" else math.prod(ratios)
    return GraderResult(score, {"words": words, "approx_tokens": tokens, "within": within})


_HEADING = re.compile(r"^ {0,3}(?:#{1,6}[ \t]+(.*?)[ \t#]*|\*\*([^*]+)\*\*:?|([^:]{1,80}):)[ \t]*$")


def _fold(text: str) -> str:
    kept = "".join(ch if ch.isalnum() else " " for ch in unicodedata.normalize("NFKC", text))
    return " " + _SPACES.sub(" ", kept.casefold()).strip() + " "


def headings(completion: str) -> list[str]:
    """Heading-like lines of the prose: ``## Title``, ``**Title**`` and ``Title:`` lines."""
    found = []
    for line in prose(completion).split("\n"):
        if len(line) > 200:
            continue
        match = _HEADING.match(line)
        if match:
            found.append(next(g for g in match.groups() if g is not None).strip())
    return found


def sections_check(completion: str, spec: SectionsSpec) -> GraderResult:
    """Fraction of required section names that appear (as words) in some heading."""
    found = headings(completion)
    titles = [_fold(h) for h in found]
    missing = [name for name in spec.required if not any(_fold(name) in t for t in titles)]
    present = len(spec.required) - len(missing)
    return GraderResult(
        present / len(spec.required),
        {"headings": [clip_text(h, 80) for h in found[:20]], "missing": missing},
    )


_SIMILARITY = {
    "ratio": fuzz.ratio,
    "token_sort": fuzz.token_sort_ratio,
    "token_set": fuzz.token_set_ratio,
    "partial": fuzz.partial_ratio,
}


def similarity(completion: str, reference: str, spec: SimilaritySpec) -> GraderResult:
    """rapidfuzz similarity of the extracted answer and the reference, in [0, 1]."""
    found = extract(completion, spec.extract)
    if found.text is None:
        return _no_answer(found.method)
    got = found.text[: spec.max_chars]
    want = extract_reference(reference, spec.extract)[: spec.max_chars]
    score = _SIMILARITY[spec.method](got, want) / 100.0
    return GraderResult(
        score,
        {
            "extracted_by": found.method,
            "answer": clip_text(got),
            "method": spec.method,
            "truncated": len(found.text) > spec.max_chars,
        },
    )
