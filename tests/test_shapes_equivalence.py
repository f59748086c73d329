"""The padding detector's shortcuts find what the patterns they stand for find."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsvc.safety import shapes

MARKER_PIECES = st.sampled_from(
    [
        "to restate",
        "In Other Words",
        "put\u00a0differently",
        "once again",
        "again,",
        "as already mentioned above",
        "THAT IS TO SAY",
        "to\u2003repeat",
        "to put it another way",
        "İn other words",
        "to reıterate",
        "to reſtate",
        "aſ ſaid",
        "i\u0307n other words",
        "again",
        "words",
        "x",
        " ",
        "\n",
        ". ",
        "é",
        "Σ",
    ]
)
TEXTS = st.text(max_size=200) | st.lists(MARKER_PIECES | st.text(max_size=6), max_size=40).map(
    " ".join
)


@settings(max_examples=400, deadline=None)
@given(text=TEXTS)
def test_a_text_with_enough_markers_is_never_skipped(text: str) -> None:
    if len(shapes._MARKERS.findall(text)) >= shapes.PADDING_MIN_MARKERS:
        assert shapes._may_have_markers(text)


def test_the_skip_lets_through_marker_words_in_any_case_python_matches() -> None:
    text = "TO REİTERATE; İN OTHER WORDS; to reſtate"
    assert len(shapes._MARKERS.findall(text)) == 3
    assert shapes._may_have_markers(text)


CODE_PIECES = st.sampled_from(
    [*"|=/{}()[];$_\\a ", "    ", "\t", "\n", "\u00a0", "\u2028", "\u3000", "\x1c", "\x85", "é"]
)


@settings(max_examples=400, deadline=None)
@given(text=st.text(max_size=120) | st.lists(CODE_PIECES, max_size=40).map("".join))
def test_the_code_line_search_is_the_python_pattern_s(text: str) -> None:
    python = re.compile(shapes._CODE_LINE.pattern, re.MULTILINE)
    text = text.encode("utf-8", "replace").decode("utf-8")
    found = shapes._ANY_CODE_LINE.search(text.encode("utf-8")) is not None
    assert found == (python.search(text) is not None)


def test_the_space_class_is_python_s() -> None:
    space = re.compile(f"[{shapes.PY_SPACE}]".replace("\\x{", "\\u").replace("}", ""))
    python = {chr(c) for c in range(sys.maxunicode + 1) if re.fullmatch(r"\s", chr(c))}
    assert {chr(c) for c in range(sys.maxunicode + 1) if space.fullmatch(chr(c))} == python


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_stems_are_the_long_words_less_stop_words(text: str) -> None:
    words = re.findall(r"[a-z]+", text.lower())
    assert shapes._stems(text) == [w[:5] for w in words if len(w) >= 3 and w not in shapes._STOP]
