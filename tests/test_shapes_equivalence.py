"""The padding detector's shortcuts find what the patterns they stand for find."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.items import bench_items
from rewardsvc.safety import shapes
from rewardsvc.safety.attacks import attacks

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
    assert shapes._stems(text.lower()) == [
        w[:5] for w in words if len(w) >= 3 and w not in shapes._STOP
    ]


# The unit break as first written, the reference for the form that opens with one class.
PLAIN_UNIT_BREAK = re.compile(r"[.!?]+\s+|\n[ \t]*(?:[-*•+]|\d{1,3}[.)])[ \t]+|\n[ \t]*\n")
BREAK_PIECES = st.sampled_from(
    [*".!?\n \t-*•+)", "1", "12", "1234", "\u00a0", "\u2028", "\x85", "İ", "K", "Σ", "Ab", "Word"]
)
CORPUS = Path(__file__).resolve().parent.parent / "bench" / "attacks" / "corpus.jsonl"


def _stems_per_unit_as_first_written(text: str) -> list[list[str]]:
    return [shapes._stems(unit.lower()) for unit in PLAIN_UNIT_BREAK.split(text)]


def _stems_per_unit(text: str) -> list[list[str]]:
    return [shapes._stems(unit) for unit in shapes._UNIT_BREAK.split(text.lower())]


@settings(max_examples=400, deadline=None)
@given(text=st.text(max_size=200) | st.lists(BREAK_PIECES, max_size=60).map("".join))
def test_units_of_the_lowered_text_are_those_of_the_plain_break(text: str) -> None:
    assert _stems_per_unit(text) == _stems_per_unit_as_first_written(text)


def test_units_on_the_corpora_are_those_of_the_plain_break() -> None:
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]
    texts = [row["text"] for row in rows] + [i["completion"] for i in bench_items()]
    texts += [a.completion for a in attacks("The answer is 42.")]
    assert len(texts) > 300
    for text in texts:
        assert _stems_per_unit(text) == _stems_per_unit_as_first_written(text), text[:80]
