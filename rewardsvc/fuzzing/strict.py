"""The stricter reference check of answers, written for the fuzzer.

It shares no code with :mod:`rewardsvc.graders`: it finds the completion's final answer
its own way and accepts it only when nothing about it is in doubt.

- A *declaration* is a ``\\boxed{...}``/``\\fbox{...}`` with balanced braces, or a line
  that starts with ``Final answer:`` / ``Answer:``; code blocks and HTML comments hold none.
- The completion's answer is the declared one when every declaration says the same thing,
  nothing after the last one retracts it (digits or words such as "wait", "wrong"), and it
  is not negated; a completion with no declaration counts only when it is itself a bare
  answer of a few words.
- A number is one number in one script of digits (ASCII, full-width or another decimal
  script, not superscripts), with well-formed thousands groups, an optional sign, currency
  sign, ``\\frac{a}{b}`` or ``a/b``, and a trailing unit word; percent only when the reference
  has one. A math answer may also be an expression of rationals (``+ - * / ^``, ``\\frac``,
  ``\\sqrt`` of a perfect square), evaluated exactly.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

_LABEL = re.compile(r"^\s*[*_#>]*\s*(?:final\s+)?answer\s*[*_]*\s*:\s*(.*)$", re.I)
_NEGATION = re.compile(r"\b(?:not|no|never|isn'?t|cannot|nor|except)\b|≠|\\neq?\b|\\not\b", re.I)
_RETRACTION = re.compile(r"\d|\b(?:wait|wrong|actually|mistake|incorrect|correction|but)\b", re.I)
_BARE_WORDS = 3


@dataclass(frozen=True)
class Declaration:
    """One declared answer: its text, and where its declaration ends in the text."""

    text: str
    end: int
    ambiguous: bool = False


def visible(text: str) -> str:
    """The completion without HTML comments and fenced code blocks (unclosed: to the end)."""
    text = re.sub(r"<!--.*?(?:-->|\Z)", "", text, flags=re.S)
    kept, fence = [], ""
    for line in text.split("\n"):
        mark = re.match(r"\s*(`{3,}|~{3,})", line)
        if fence:
            if mark and mark.group(1)[0] == fence[0] and not line.strip().strip(fence[0]):
                fence = ""
            kept.append("")
        elif mark:
            fence = mark.group(1)
            kept.append("")
        else:
            kept.append(line)
    return "\n".join(kept)


def _brace_end(text: str, start: int) -> int | None:
    """The index of the ``}`` that closes the ``{`` at ``start`` (escaped braces skipped)."""
    depth, i = 0, start
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i
        i += 1
    return None


def _boxes(text: str) -> list[Declaration]:
    found: list[Declaration] = []
    position = 0
    for match in re.finditer(r"\\(?:boxed|fbox)\s*\{", text):
        if match.start() < position:
            continue  # inside a box already read
        end = _brace_end(text, match.end() - 1)
        if end is None:
            continue
        content = text[match.end() : end].strip()
        while (inner := re.fullmatch(r"\\(?:boxed|fbox)\s*\{(.*)\}", content, re.S)) and (
            _brace_end(content, content.index("{")) == len(content) - 1
        ):
            content = inner.group(1).strip()
        found.append(Declaration(content, end + 1, ambiguous="\\boxed" in content))
        position = end + 1
    return found


def declarations(text: str) -> list[Declaration]:
    """Every declared answer of the visible text, in the order they end."""
    text = visible(text)
    found = _boxes(text)
    offset = 0
    for line in text.split("\n"):
        match = _LABEL.match(line)
        if match and "\\boxed" not in line and "\\fbox" not in line:
            found.append(Declaration(match.group(1).strip(" *_"), offset + len(line)))
        offset += len(line) + 1
    return sorted(found, key=lambda d: d.end)


def final_answer(completion: str) -> str | None:
    """The one answer the completion commits to, or None when it is absent or in doubt."""
    text = visible(completion)
    found = declarations(completion)
    if not found:
        bare = text.strip()
        if "\n" in bare or len(bare.split()) > _BARE_WORDS or _NEGATION.search(bare):
            return None
        return bare.rstrip(".")
    last = found[-1]
    if any(d.ambiguous for d in found) or len({_canon(d.text) for d in found}) > 1:
        return None
    if _RETRACTION.search(text[last.end :]) or _NEGATION.search(last.text):
        return None
    line_start = text.rfind("\n", 0, last.end) + 1
    if _NEGATION.search(text[line_start : last.end].split("\\boxed")[0]):
        return None
    return last.text.strip().strip("$").rstrip(".").strip()


def _canon(answer: str) -> str:
    return " ".join(answer.strip().strip("$").rstrip(".!").casefold().split())


def fold_width(text: str) -> str:
    """Full-width ASCII forms as ASCII (the one compatibility mapping the check allows)."""
    return "".join(chr(ord(ch) - 0xFEE0) if 0xFF01 <= ord(ch) <= 0xFF5E else ch for ch in text)


def _digits(run: str) -> str | None:
    """``run`` of decimal digits as ASCII, when all come from one script."""
    zeros = {ord(ch) - unicodedata.decimal(ch) for ch in run if unicodedata.category(ch) == "Nd"}
    if len(zeros) != 1 or any(unicodedata.category(ch) != "Nd" for ch in run):
        return None
    return "".join(str(unicodedata.decimal(ch)) for ch in run)


_NUMBER = re.compile(
    r"(?P<sign>[-−]?)(?P<int>\w+?(?:(?:,|\\,)\w{3})*)(?:\.(?P<dec>\w+))?(?:/(?P<den>\w+))?"
)
_UNIT = re.compile(
    r"\s*(?:\\text\s*\{\s*[A-Za-z]+(?:\s[A-Za-z]+)?\s*\}|[A-Za-z]+(?:\s[A-Za-z]+)?)$"
)


def number(answer: str, percent: bool = False) -> Fraction | None:
    """The value of a plain numeric answer (see the module docstring), else None."""
    text = fold_width(answer).strip().strip("$").strip()
    if _NEGATION.search(text):
        return None
    text = re.sub(r"^[A-Za-z]\s*=\s*", "", text)
    text = re.sub(r"^\\?\$|^[€£¥]", "", text)
    text = re.sub(r"\\text\s*\{\s*([^{}]*?)\s*\}$", r"\1", text) if "{" in text else text
    text = _UNIT.sub("", text) if not re.fullmatch(r"[A-Za-z ]+", text) else text
    if text.endswith(("%", "\\%")):
        if not percent:
            return None
        text = text.rstrip("%").rstrip("\\")
    frac = re.fullmatch(r"(-?)\\[dt]?frac\{(-?)(\w+)\}\{(\w+)\}", text)
    if frac:
        sign = "-" if bool(frac.group(1)) != bool(frac.group(2)) else ""
        text = f"{sign}{frac.group(3)}/{frac.group(4)}"
    return _plain_number(text.strip())


def _plain_number(text: str) -> Fraction | None:
    match = _NUMBER.fullmatch(text)
    if not match:
        return None
    parts = [match.group("int"), match.group("dec") or "", match.group("den") or ""]
    groups = re.split(r",|\\,", parts[0])
    if len(groups) > 1 and not 1 <= len(groups[0]) <= 3:
        return None
    ascii_parts = [_digits(p) if p else "" for p in ["".join(groups), parts[1], parts[2]]]
    if any(a is None for a, p in zip(ascii_parts, ["x", parts[1], parts[2]], strict=True) if p):
        return None
    whole, decimals, denominator = (a or "" for a in ascii_parts)
    if len({_zero(p) for p in "".join(groups) + parts[1] + parts[2]}) > 1:
        return None  # digits of two scripts in one number
    value = Fraction(f"{whole}.{decimals}" if decimals else whole)
    if denominator:
        if int(denominator) == 0:
            return None
        value /= int(denominator)
    return -value if match.group("sign") else value


def _zero(ch: str) -> int:
    return ord(ch) - unicodedata.decimal(ch, 0)
