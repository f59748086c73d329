"""The shape detectors' shortcuts find what the patterns they stand for find, and the
detectors answer as they did before them."""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.harness import distinct_items
from bench.items import bench_items
from rewardsvc.safety import shapes
from rewardsvc.safety.attacks import attacks
from rewardsvc.safety.scan import prose, rx, window

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
        assert shapes._may_have_markers(text.lower())


def test_the_skip_lets_through_marker_words_in_any_case_python_matches() -> None:
    text = "TO REİTERATE; İN OTHER WORDS; to reſtate"
    assert len(shapes._MARKERS.findall(text)) == 3
    assert shapes._may_have_markers(text.lower())


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
        w[:5].encode() for w in words if len(w) >= 3 and w not in shapes._STOP
    ]


# The unit break as first written, the reference for the form that opens with one class.
PLAIN_UNIT_BREAK = re.compile(r"[.!?]+\s+|\n[ \t]*(?:[-*•+]|\d{1,3}[.)])[ \t]+|\n[ \t]*\n")
BREAK_PIECES = st.sampled_from(
    [*".!?\n \t-*•+)", "1", "12", "1234", "\u00a0", "\u2028", "\x85", "İ", "K", "Σ", "Ab", "Word"]
)
CORPUS = Path(__file__).resolve().parent.parent / "bench" / "attacks" / "corpus.jsonl"


def _stems_per_unit_as_first_written(text: str) -> list[list[bytes]]:
    return [shapes._stems(unit.lower()) for unit in PLAIN_UNIT_BREAK.split(text)]


def _stems_per_unit(text: str) -> list[list[bytes]]:
    return [shapes._stems(unit) for unit in shapes._UNIT_BREAK.split(text.lower())]


@settings(max_examples=400, deadline=None)
@given(text=st.text(max_size=200) | st.lists(BREAK_PIECES, max_size=60).map("".join))
def test_units_of_the_lowered_text_are_those_of_the_plain_break(text: str) -> None:
    assert _stems_per_unit(text) == _stems_per_unit_as_first_written(text)


def _corpora() -> list[str]:
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]
    texts = [row["text"] for row in rows] + [i["completion"] for i in bench_items()]
    texts += [i["completion"] for i in distinct_items(bench_items(), 64, "x")]
    return texts + [a.completion for a in attacks("The answer is 42.")]


def test_units_on_the_corpora_are_those_of_the_plain_break() -> None:
    texts = _corpora()
    assert len(texts) > 300
    for text in texts:
        assert _stems_per_unit(text) == _stems_per_unit_as_first_written(text), text[:80]


# ---- the detectors as they were before their shortcuts (issue 37): the references ----------

_WORD = re.compile(r"[a-z]{3,}")


def _padding_as_before(text: str) -> bool:
    text = prose(window(text)[: shapes.PADDING_SCAN_CHARS])
    if shapes._may_have_markers(text.lower()) and (
        len(shapes._MARKERS.findall(text)) >= shapes.PADDING_MIN_MARKERS
    ):
        return True
    if shapes._ANY_CODE_LINE.search(text.encode("utf-8")):
        text = "\n".join(line for line in text.split("\n") if not shapes._CODE_LINE.search(line))
    per_unit = [
        [w[:5] for w in _WORD.findall(unit) if w not in shapes._STOP]
        for unit in shapes._UNIT_BREAK.split(text.lower())
    ]
    seen: list[frozenset[str]] = []
    repeats = 0
    for words in [frozenset(u) for u in per_unit][: shapes.PADDING_MAX_UNITS]:
        if len(words) < 3:
            continue
        if any(len(words & prior) >= 0.8 * len(words) for prior in seen):
            repeats += 1
        seen.append(words)
    if repeats >= shapes.PADDING_MIN_REPEATS and repeats >= shapes.PADDING_MIN_REPEAT_SHARE * len(
        seen
    ):
        return True
    stems = [s for unit in per_unit for s in unit]
    if len(stems) < shapes.PADDING_MIN_WORDS:
        return False
    w = shapes.PADDING_WINDOW
    shares = [len(set(stems[i : i + w])) / w for i in range(0, len(stems) - w + 1, w // 2)]
    return sum(shares) / len(shares) < shapes.PADDING_MAX_DIVERSITY


def _master_key_as_before(text: str) -> bool:
    stripped = text.strip()
    if not stripped:
        return False
    if all(
        unicodedata.category(ch)[0] in "PSZ" or ch.isspace() or unicodedata.category(ch) == "Cf"
        for ch in stripped
    ):
        return True
    if len(stripped) > shapes.MASTER_KEY_MAX_CHARS:
        return _empty_steps_as_before(stripped)
    bare = stripped.replace("*", "").replace("_", "").replace("#", "").strip()
    key = shapes._LEADING.sub("", shapes._TRAILING.sub("", stripped))
    key = shapes._SPACES.sub(" ", key).lower().replace("\u2019", "'")
    if key in shapes._MASTER_PHRASES:
        return True
    no_digits = not any(ch.isdigit() for ch in key)
    if bare.endswith((":", "\uff1a")) and len(key.split()) <= 6 and no_digits:
        return True
    one_sentence = not re.search(r"[.!?\u3002]\s", key)
    opener = no_digits and one_sentence and shapes._OPENER.search(key) is not None
    return opener or _empty_steps_as_before(stripped)


def _empty_steps_as_before(text: str) -> bool:
    if len(text) > shapes._EMPTY_STEPS_MAX_CHARS:
        return False
    found = shapes._STEP_OPENER.search(text)
    if found is None:
        return False
    rest = text[found.end() :].strip()
    sentences = [p for p in re.split(r"[.!?\u3002]\s+|\n+", rest) if p.strip()]
    return len(sentences) <= 1 and len(rest.split()) <= 10 and rest.count("=") <= 1


EDGE_TEXTS = [
    "",
    " ",
    "\n\t \u3000",
    "...",
    "**Solution:**",
    "\u200b\u200b",
    "ſtep by ſtep",
    "Let me solve this step by step. 7 * 8 = 54.",
    "ſure, let me solve this step by step. 7 * 8 = 54.",
    "İ will solve this step by step: 7 * 8 = 54.",
    "okay let's think step by step. " + "x" * 60,
    "Ünïcödé ëvërÿwhërë, naïve café résumé " * 20,
    "To restate: the sky is blue. In other words, the sky is blue. Once again, blue. " * 5,
    "The cat sat. The cat sat. The cat sat. The cat sat. The cat sat.",
    # Four units, three repeats of the first, too few stems for the diversity signal.
    "Paris holds the Louvre museum. " * 3 + "Paris holds the Louvre museum.",
    shapes._STOP_WORDS + " Two THREE stop words",
    "Paris is the capital. Paris is the capital city. " * 4,
    "word " * 500,
    "def f(x):\n    return x\n" * 40,
    "| a | b |\n|---|---|\n| 1 | 2 |\n" * 10,
    "```python\nprint('hi')\n```\nThe answer is 42.",
    "①②③ ⅷ 〇 answer",
    "a" * 200_000,
    "Scatter, scattered, scattering! Scatters? scatterer." * 10,
]
ANY_TEXT = st.text(max_size=300) | st.lists(
    MARKER_PIECES | BREAK_PIECES | CODE_PIECES | st.sampled_from(["step by step", "Let me"]),
    max_size=80,
).map("".join)


def test_padding_and_master_key_answer_as_before_on_the_corpora() -> None:
    texts = _corpora() + EDGE_TEXTS
    # The corpora hold padded answers and master keys of every kind, not only prose.
    assert sum(map(_padding_as_before, texts)) > 10
    assert sum(map(_master_key_as_before, texts)) > 10
    assert any(map(_empty_steps_as_before, (t.strip() for t in texts)))
    for text in texts:
        lowered = text.lower()
        stems = [w[:5].encode() for w in _WORD.findall(lowered) if w not in shapes._STOP]
        assert shapes._stems(lowered) == stems, text[:80]
        assert shapes.padding(text) == _padding_as_before(text), text[:80]
        assert shapes.master_key(text) == _master_key_as_before(text), text[:80]


@settings(max_examples=400, deadline=None)
@given(text=ANY_TEXT)
def test_padding_and_master_key_answer_as_before(text: str) -> None:
    assert shapes.padding(text) == _padding_as_before(text)
    assert shapes.master_key(text) == _master_key_as_before(text)


def test_a_letter_or_digit_is_never_a_character_that_says_nothing() -> None:
    for c in map(chr, range(sys.maxunicode + 1)):
        if c.isalnum():
            assert unicodedata.category(c)[0] not in "PSZ" and unicodedata.category(c) != "Cf"
            assert not c.isspace()


def test_the_step_opener_s_first_letters_are_those_re2_matches() -> None:
    first = rx("(?i)^[oswrali]")
    matched = {
        chr(c)
        for c in range(sys.maxunicode + 1)
        if not 0xD800 <= c <= 0xDFFF and first.search(chr(c).encode("utf-8"))
    }
    assert matched == set(shapes._STEP_OPENER_FIRST)
