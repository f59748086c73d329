"""The fuzzer's reference verdicts for the answer graders (exact, numeric, math, similarity).

Each is ``(completion, reference) -> bool``: whether the completion's one final answer
(:func:`~rewardsvc.fuzzing.strict.final_answer`) is the reference, read strictly. The
math check evaluates a small grammar of rational expressions exactly (its own parser, not
math-verify): numbers, ``+ - * / ^`` (integer exponents), parentheses and braces,
``\\frac``/``\\dfrac``/``\\tfrac``, ``\\cdot``, ``\\times`` and ``\\sqrt`` of a perfect square.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from rewardsvc.fuzzing.strict import final_answer, fold_width, number

_TOKEN = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?|\\[a-z]+|[-+*/^(){}])")
_MAX_EXPONENT = 64


def exact(completion: str, reference: str) -> bool:
    """The answer is the reference up to case, spacing, full width, a ``\\text{}`` and
    a closing ``!`` after a word."""
    answer = final_answer(completion)
    if answer is None:
        return False
    unwrapped = re.sub(r"^\\text\s*\{(.*)\}$", r"\1", answer)
    if unwrapped[-1:] == "!" and not unwrapped[-2:-1].isdigit():
        unwrapped = unwrapped[:-1]  # an exclamation after a word; after a digit, a factorial
    return _fold(unwrapped) == _fold(reference)


def _fold(text: str) -> str:
    return " ".join(fold_width(text).replace("−", "-").casefold().split())


def numeric(completion: str, reference: str) -> bool:
    """The answer is one plain number equal to the reference's value."""
    answer = final_answer(completion)
    want = number(reference, percent=True)
    got = None if answer is None else number(answer, percent="%" in reference)
    return got is not None and got == want


def math_equal(completion: str, reference: str) -> bool:
    """The answer is a plain number or a rational expression equal to the reference."""
    answer = final_answer(completion)
    if answer is None:
        return False
    want = number(reference) or evaluate(reference)
    answer = re.sub(r"^[A-Za-z]\s*=\s*", "", answer)
    got = number(answer)
    if got is None:
        got = evaluate(answer)
    return got is not None and got == want


def evaluate(text: str) -> Fraction | None:
    """The exact value of a rational expression, None when it is not one."""
    tokens, at = [], 0
    text = re.sub(r"\\left|\\right|\\,|\\!|\\ ", "", text.strip())
    while at < len(text):
        match = _TOKEN.match(text, at)
        if not match:
            return None
        tokens.append(match.group(1))
        at = match.end()
    parser = _Parser(tokens)
    try:
        value = parser.sum()
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return value if parser.done() else None


class _Parser:
    """Recursive descent over the tokens: sum > product > power > unary > atom."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.at = tokens, 0

    def done(self) -> bool:
        return self.at == len(self.tokens)

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self, expected: str | None = None) -> str:
        token = self._peek()
        if token is None or (expected is not None and token != expected):
            raise ValueError(f"expected {expected!r}")
        self.at += 1
        return token

    def sum(self) -> Fraction:
        value = self.product()
        while self._peek() in ("+", "-"):
            value = value + self.product() if self._take() == "+" else value - self.product()
        return value

    def product(self) -> Fraction:
        value = self.power()
        while self._peek() in ("*", "/", "\\cdot", "\\times"):
            value = value / self.power() if self._take() == "/" else value * self.power()
        return value

    def power(self) -> Fraction:
        base = self.unary()
        if self._peek() != "^":
            return base
        self._take()
        exponent = self.unary()
        if exponent.denominator != 1 or abs(exponent) > _MAX_EXPONENT:
            raise ValueError("exponent")
        return base ** int(exponent)

    def unary(self) -> Fraction:
        if self._peek() == "-":
            self._take()
            return -self.unary()
        return self.atom()

    def atom(self) -> Fraction:
        token = self._take()
        if token in ("(", "{"):
            value = self.sum()
            self._take(")" if token == "(" else "}")
            return value
        if token in ("\\frac", "\\dfrac", "\\tfrac"):
            return self.atom() / self.atom()
        if token == "\\sqrt":
            inside = self.atom()
            roots = [math.isqrt(p) for p in (inside.numerator, inside.denominator)]
            if (
                inside < 0
                or roots[0] ** 2 != inside.numerator
                or roots[1] ** 2 != inside.denominator
            ):
                raise ValueError("not a perfect square")
            return Fraction(roots[0], roots[1])
        if token[0].isdigit():
            return Fraction(token)
        raise ValueError(f"unexpected {token!r}")
