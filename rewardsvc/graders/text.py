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
from rewardsvc.graders.extract import extract, extract_reference, last_number, prose
from rewardsvc.graders.result import GraderResult, clip_text

_LATEX_TEXT = re.compile(r"\\(?:text|mathrm|textbf|mathbf|operatorname)\s*\{([^{}]*)\}")
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_LATEX_SPACING = re.compile(r"\\[,!;: ]|\\quad|\\qquad|\\left|\\right|\{,\}")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_SPACES = re.compile(r"\s+")


def _no_answer(extracted_by: str) -> GraderResult:
    return GraderResult(0.0, {"extracted_by": extracted_by, "answer": None}, None)


def normalize_text(text: str, spec: ExactSpec) -> str:
    """The comparison form of an answer: NFKC, LaTeX text wrappers and ``$`` removed,
    then case, punctuation and articles per ``spec``, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text)
    text = _LATEX_TEXT.sub(r"\1", text).replace("$", "")
    if not spec.case_sensitive:
        text = text.casefold()
    if spec.ignore_punctuation:
        text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text)
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


def to_number(text: str) -> float | None:
    """The last number in ``text`` after removing what formats it: LaTeX spacing, text
    wrappers, currency and percent signs, thousands separators; ``\\frac{a}{b}`` and
    ``a/b`` become a / b. None when there is no number."""
    text = unicodedata.normalize("NFKC", text).replace("−", "-")
    text = _LATEX_SPACING.sub("", _LATEX_TEXT.sub(r"\1", text))
    text = _LATEX_FRAC.sub(r"(\1)/(\2)", text)
    text = text.replace("(", "").replace(")", "")
    for sign in ("\\$", "$", "\\%", "%", "€", "£", "¥"):
        text = text.replace(sign, "")
    token = last_number(text)
    if token is None:
        return None
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


def numeric_match(completion: str, reference: str, spec: NumericSpec) -> GraderResult:
    """1 when the extracted number is within ``rel_tol`` or ``abs_tol`` of the reference's."""
    found = extract(completion, spec.extract)
    if found.text is None:
        return _no_answer(found.method)
    got = to_number(found.text)
    want = to_number(extract_reference(reference, spec.extract))
    evidence: dict[str, Any] = {"extracted_by": found.method, "answer": clip_text(found.text)}
    if want is None:
        return GraderResult(None, evidence, "the reference holds no number")
    evidence |= {"value": got, "expected": want}
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


def length_check(completion: str, spec: LengthSpec) -> GraderResult:
    """Word and approximate token budgets: hard (0 outside) or soft (ratio)."""
    words = len(completion.split())
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
