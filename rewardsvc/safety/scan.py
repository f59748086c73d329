"""The bounded view of a text that detectors scan, and the RE2 compile helper.

Every detector sees ``window(text)``: the whole text up to ``SCAN_MAX_CHARS``;
beyond that, its first ``SCAN_HEAD_CHARS`` and last ``SCAN_TAIL_CHARS``
characters. Attacks sit where a judge reads them (the start and end of an
answer, or anywhere in an answer of normal length); a payload in the middle of
a larger text is not seen, which is the price of a bound on detector time.
"""

from __future__ import annotations

import functools
import re

import re2

SCAN_MAX_CHARS = 131_072
SCAN_HEAD_CHARS = 98_304
SCAN_TAIL_CHARS = 32_768

# Above this many characters a caller on an event loop should run ``detect`` in a
# worker thread. Ordinary text takes about 0.3 ms per 1,000 characters (a few ms at
# this size); degenerate text at the 100,000-character request limit up to ~100 ms.
THREAD_ABOVE_CHARS = 8_192

# A fence line: up to three spaces, a run of three or more backticks or tildes, the rest.
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)


def window(text: str) -> str:
    """The part of ``text`` detectors scan, as valid UTF-8 (lone surrogates replaced)."""
    if len(text) > SCAN_MAX_CHARS:
        text = text[:SCAN_HEAD_CHARS] + "\n" + text[-SCAN_TAIL_CHARS:]
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # RE2 needs valid UTF-8; a lone surrogate cannot hide an attack shape.
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


RX_OPTIONS = re2.Options()
# Room for the lazily built DFA of a flag's merged rules (and of the set of every flag's
# rules), so it does not fall back to the (still linear, slower) NFA on varied input.
RX_OPTIONS.max_mem = 32 << 20


def rx(pattern: str) -> re2._Regexp:
    """An RE2 pattern (linear time: no backtracking, no look-around, no back-references)."""
    return re2.compile(pattern, RX_OPTIONS)


_INLINE_CODE = re.compile(r"`[^`\n]{1,200}`")


@functools.lru_cache(maxsize=4)
def prose(text: str) -> str:
    """``text`` without code: closed fenced blocks and inline code spans.

    Markup shown as code is displayed, not hidden, and data shown as code is data.
    Several detectors ask for the prose of the same text; it is computed once.
    """
    return _INLINE_CODE.sub("``", without_code_blocks(text))


def without_code_blocks(text: str) -> str:
    """``text`` with closed fenced code blocks removed (each becomes an empty line).

    Only fence lines are visited (found by a pattern anchored at line starts). A
    block left open at the end is kept as prose, so an unclosed fence cannot hide
    the rest of an answer from the detectors.
    """
    if "```" not in text and "~~~" not in text:
        return text
    out: list[str] = []
    pos = 0
    opener: tuple[str, int, int] | None = None  # fence char, run length, block start
    for m in _FENCE_LINE.finditer(text):
        run, rest = m.group(1), m.group(2)
        if opener is None:
            opener = (run[0], len(run), m.start())
        elif run[0] == opener[0] and len(run) >= opener[1] and not rest.strip():
            out.append(text[pos : opener[2]])
            pos = m.end()
            opener = None
    out.append(text[pos:])
    return "".join(out)
