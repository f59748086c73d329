"""Answer extraction shared by the graders: which part of a completion is "the answer".

Every method runs in time linear in the text (single scans, no backtracking patterns)
and returns None when the completion holds no such answer:

- :func:`last_boxed`: the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) whose
  braces balance; nested braces are kept (``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``),
  and of several boxed answers the one closing last wins.
- :func:`final_line`: the text after the last ``final answer:`` (or ``answer:``) label that
  starts a line of prose; optional Markdown emphasis and heading marks around the label are
  allowed.
- :func:`last_number`: the last number (``-1,234.5``, ``3/4``, ``2e-3``); :func:`numbers`
  all of them, with where they stand.
- :func:`code_block`: the content of the last fenced code block (optionally of one language).

The first three read only the *prose* of the completion: fenced code blocks and HTML
comments are removed first (:func:`prose`), so that an answer written inside code
(``# final answer: 42``) or hidden in markup does not count as the final answer.
:func:`negated` tells the numeric and math graders that an answer denies what it holds
("the answer is not 51").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rewardsvc.core.spec_base import Extract

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_BRACE = re.compile(r"[{}]")
_BOX_START = re.compile(r"\\(?:boxed|fbox)")
_MAX_UNWRAP = 3
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
# At most three leading spaces (four make an indented code block); Markdown quote,
# emphasis and heading marks may precede the label. The answer is taken greedily and
# trimmed in Python, so no lazy group can rescan a long line.
_ANSWER_LABEL = re.compile(
    r"^ {0,3}(?:[>*_#][>*_# \t]*)?(?:final[ \t]+)?answer[ \t*_]*[:：](.*)$", re.IGNORECASE
)
# Digits and commas are matched in one run and split in Python, so no pattern here can
# backtrack; "1,234" is one number, "1,2,3" is a list whose last number is 3.
# A match must start at a digit or a decimal point, and the whitespace around a fraction
# slash is at most a few characters, so no attempt rescans a long run of text.
_NUMBER = re.compile(
    r"([-+−]?)(?:(\d[\d,]*)(\.\d+)?|(\.\d+))(?:([eE][-+]?\d+)|( {0,3}/ {0,3}\d+))?"
)
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")


@dataclass(frozen=True)
class Extracted:
    """What a method found (``text`` None when it found nothing) and which method did."""

    text: str | None
    method: str


def _fences(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Split Markdown into prose lines and fenced blocks ``(language, content)``.

    A fence closes on a line of the same character at least as long; an unclosed fence
    runs to the end of the text, as in CommonMark.
    """
    prose: list[str] = []
    blocks: list[tuple[str, str]] = []
    fence: str | None = None
    language = ""
    body: list[str] = []
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is None:
            if match:
                fence, language, body = match.group(1), match.group(2).lower(), []
            else:
                prose.append(line)
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
            if not line.strip().strip(fence[0]):
                blocks.append((language, "\n".join(body)))
                fence = None
            else:
                body.append(line)
        else:
            body.append(line)
    if fence is not None:
        blocks.append((language, "\n".join(body)))
    return prose, blocks


def _drop_html_comments(text: str) -> str:
    out: list[str] = []
    start = 0
    while True:
        opened = text.find("<!--", start)
        if opened < 0:
            out.append(text[start:])
            return "".join(out)
        out.append(text[start:opened])
        closed = text.find("-->", opened + 4)
        if closed < 0:
            return "".join(out)
        start = closed + 3


def prose(text: str) -> str:
    """The completion without fenced code blocks and HTML comments."""
    lines, _ = _fences(_drop_html_comments(text))
    return "\n".join(lines)


def code_block(text: str, language: str | None = None) -> str | None:
    """The content of the last fenced code block (of ``language``, when given)."""
    _, blocks = _fences(text)
    wanted = language.lower() if language else None
    for lang, content in reversed(blocks):
        if wanted is None or lang == wanted:
            return content
    return None


def _pair_braces(text: str) -> dict[int, int]:
    closing: dict[int, int] = {}
    stack: list[int] = []
    for match in _BRACE.finditer(text):
        i = match.start()
        if i > 0 and text[i - 1] == "\\":
            continue
        if text[i] == "{":
            stack.append(i)
        elif stack:
            closing[stack.pop()] = i
    return closing


def _box_at(text: str, at: int, closing: dict[int, int]) -> tuple[int, int] | None:
    """The brace span of the box command starting at ``at``, when its braces balance."""
    for command in _BOX_COMMANDS:
        if text.startswith(command, at):
            brace = at + len(command)
            while brace < len(text) and text[brace] == " ":
                brace += 1
            end = closing.get(brace)
            return None if end is None else (brace, end)
    return None


def last_boxed(text: str) -> str | None:
    """The content of the ``\\boxed{...}`` that closes last, braces balanced; else None.

    One pass pairs every brace; a box command counts only when its ``{`` is paired, so an
    unclosed ``\\boxed{`` is ignored instead of swallowing the rest of the text. A box
    that only wraps another box (``\\boxed{\\boxed{5}}``) is unwrapped.
    """
    closing = _pair_braces(text)
    best: tuple[int, int] | None = None
    for match in _BOX_START.finditer(text):
        span = _box_at(text, match.start(), closing)
        if span is not None and (best is None or span[1] > best[1]):
            best = span
    if best is None:
        return None
    start, end = best
    for _ in range(_MAX_UNWRAP):
        inner_start = start + 1
        while inner_start < end and text[inner_start] == " ":
            inner_start += 1
        inner = _box_at(text, inner_start, closing)
        if inner is None or text[inner[1] + 1 : end].strip():
            break
        start, end = inner
    return text[start + 1 : end].strip()


def final_line(text: str) -> str | None:
    """The answer after the last ``final answer:`` / ``answer:`` label of a prose line."""
    found: str | None = None
    for line in text.split("\n"):
        match = _ANSWER_LABEL.match(line)
        if match:
            answer = match.group(1).strip(" \t*_")
            if answer:
                found = answer
    return found


@dataclass(frozen=True)
class NumberToken:
    """A number as written (sign, thousands separators, decimals, exponent or
    ``/denominator`` kept) and where it stands in the text (``start``, ``end``)."""

    text: str
    start: int
    end: int


def numbers(text: str) -> list[NumberToken]:
    """Every number in ``text``, in order (``1,234`` is one, ``1,2,3`` three)."""
    found: list[NumberToken] = []
    for match in _NUMBER.finditer(text):
        sign, digits, decimals, bare_decimals, exponent, fraction = match.groups()
        digits = (digits or "").rstrip(",")
        tail = (decimals or bare_decimals or "") + (exponent or fraction or "")
        if not digits and not tail:
            continue
        at = match.start(2) if digits else match.start()
        pieces = [digits] if not digits or _GROUPED.fullmatch(digits) else digits.split(",")
        for n, piece in enumerate(pieces):
            last = n == len(pieces) - 1
            if piece or last:
                lead = sign if n == 0 else ""
                written = lead + piece + (tail if last else "")
                found.append(
                    NumberToken(written, at - len(lead), at + len(piece + (tail if last else "")))
                )
            at += len(piece) + 1
    return found


def last_number(text: str) -> str | None:
    """The last number in ``text`` as written (see :func:`numbers`); None when there is
    none."""
    found = numbers(text)
    return found[-1].text if found else None


# A negation in the answer ("not 51", "\\neq 51", "it isn't 51") turns a right number into a
# wrong answer that still holds it; the words are matched whole, in linear time.
_NEGATION = re.compile(
    r"\b(?:not|never|isn'?t|cannot|can'?t|nor|except)\b|≠|\\neq?(?![a-zA-Z])|\\not(?![a-zA-Z])",
    re.IGNORECASE,
)


def negated(answer: str) -> bool:
    """Whether the last line of ``answer`` negates what it states (``not``, ``isn't``,
    ``≠``, ``\\neq``...), so that the number or expression in it is not the answer."""
    lines = [line for line in answer.split("\n") if line.strip()]
    return bool(lines) and _NEGATION.search(lines[-1]) is not None


def extract(text: str, method: Extract) -> Extracted:
    """Apply one extraction method (``auto``: boxed, else final line, else whole text)."""
    if method == "none":
        return Extracted(text.strip(), "none")
    if method == "code_block":
        return Extracted(code_block(text), "code_block")
    visible = prose(text)
    if method == "boxed":
        return Extracted(last_boxed(visible), "boxed")
    if method == "final_line":
        return Extracted(final_line(visible), "final_line")
    if method == "last_number":
        return Extracted(last_number(visible), "last_number")
    boxed = last_boxed(visible)
    if boxed is not None:
        return Extracted(boxed, "boxed")
    line = final_line(visible)
    if line is not None:
        return Extracted(line, "final_line")
    return Extracted(visible.strip(), "none")


def extract_reference(reference: str, method: Extract) -> str:
    """The reference through the same method, falling back to its whole (stripped) text."""
    found = extract(reference, method).text
    return found if found is not None else reference.strip()
