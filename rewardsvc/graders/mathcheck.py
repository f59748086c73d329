"""Mathematical equivalence of final answers with math-verify.

math-verify parses LaTeX and plain expressions into sympy and compares them (``1/2``,
``0.5``, ``\\frac{1}{2}``, ``x = \\tfrac12`` are one answer). Parsing a hostile
expression can take unbounded time, so :func:`math_check` runs in a deadline worker
(:mod:`rewardsvc.graders.registry`), which kills it at ``timeout_s``. math-verify's own
timeouts are switched off: on a timeout it answers "no parse", which would score a
correct but slow answer 0 instead of reporting the deadline.

The answer is taken from the completion with :mod:`rewardsvc.graders.extract` (by
default the last ``\\boxed{}``, else the last "final answer:" line) and handed to
math-verify inside ``\\boxed{}``, so that math-verify compares exactly that answer and
never picks another expression out of the reasoning. An answer whose last line negates
what it states (:func:`~rewardsvc.graders.extract.negated`) scores 0 before math-verify
sees it, and so does an answer whose braces do not balance (:func:`balanced`): math-verify
closes an open brace itself, so a truncated ``\\frac{2000000}{2`` would read as 1000000.
"""

from __future__ import annotations

import logging
from typing import Any

from rewardsvc.core.graders_spec import MathSpec
from rewardsvc.graders.extract import extract, extract_reference, negated, prose
from rewardsvc.graders.result import GraderResult, clip_text


def import_math_verify() -> None:
    """Import math-verify (a second or two: sympy), quieting its warning that its own
    timeouts are off (the worker's deadline bounds it)."""
    import math_verify  # noqa: F401

    logging.getLogger("math_verify").setLevel(logging.ERROR)


def compare(gold: str, answer: str, float_rounding: int) -> dict[str, Any]:
    """Parse both texts and compare them. Returns whether they are equivalent and the
    parsed forms (None when a text did not parse)."""
    from math_verify import parse, verify

    import_math_verify()
    parsed_gold = parse(gold, parsing_timeout=None)
    parsed_answer = parse(answer, parsing_timeout=None)
    equal = bool(
        parsed_gold
        and parsed_answer
        and verify(parsed_gold, parsed_answer, float_rounding=float_rounding, timeout_seconds=None)
    )
    return {
        "equal": equal,
        "parsed_expected": str(parsed_gold[-1]) if parsed_gold else None,
        "parsed_answer": str(parsed_answer[-1]) if parsed_answer else None,
    }


def balanced(text: str) -> bool:
    """Whether every unescaped ``{`` of ``text`` is closed, in order, by an unescaped ``}``.
    Escaped braces (``\\{1, 2\\}``, set notation) are literal characters and skipped."""
    depth = 0
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _boxed(text: str) -> str:
    return "\\boxed{" + text + "}"


def math_check(completion: str, reference: str, spec: MathSpec) -> GraderResult:
    """1 when the extracted answer is equivalent to the reference, else 0 (also when it
    does not parse, when it is negated: ``\\neq 51``, "not 51", or when its braces do not
    balance: a truncated ``\\frac{2000000}{2``). Unbounded in time on
    a hostile answer: callers run it under ``spec.timeout_s``."""
    found = extract(completion, spec.extract)
    if spec.extract == "none":
        answer = prose(completion)
    elif found.text is None:
        return GraderResult(0.0, {"extracted_by": found.method, "answer": None})
    else:
        answer = _boxed(found.text)
    gold = _boxed(extract_reference(reference, spec.extract))
    evidence: dict[str, Any] = {"extracted_by": found.method, "answer": clip_text(found.text)}
    if negated(answer):
        # math-verify reads "\\neq 51" and "the answer is not 51" as 51.
        return GraderResult(0.0, evidence | {"refused": "the answer is negated"})
    if not balanced(answer):
        # The extracted text is wrapped in a balanced \\boxed{}, so this tests the answer.
        return GraderResult(0.0, evidence | {"refused": "the answer's braces do not balance"})
    outcome = compare(gold, answer, spec.float_rounding)
    evidence |= {k: clip_text(v) for k, v in outcome.items() if k != "equal"}
    return GraderResult(float(outcome["equal"]), evidence)
