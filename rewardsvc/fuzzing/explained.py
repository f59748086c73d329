"""False positives the graders give by design: each (grader, shape) the fuzzer finds the
grader passing where the stricter reference does not, with the reason it is a choice.

A false positive of a listed shape is counted as *explained*; one of any other shape
fails ``rewardsvc fuzz-graders``. A row is a decision, not a silencer: it says why the
grader reads the completion this way and what a rubric author does who wants it stricter.
A row whose ``method`` is set explains a false positive only when the grader's answer
came by that extraction method (``none``: ``auto`` found no box and no final line and
read the whole text), whatever the shape.
"""

from __future__ import annotations

from typing import NamedTuple


class Choice(NamedTuple):
    """A documented reading: the grader, the probe shape (``*``: any), the extraction
    method it holds for (None: any), and why."""

    grader: str
    shape: str
    reason: str
    method: str | None = None


ANSWERS = ("exact", "numeric", "math", "similarity")

_LAST_DECLARATION = (
    "The last boxed answer (or, without a box, the last final-answer line) is the answer: "
    "a policy that corrects itself is graded on its correction. The reference calls any "
    "two declarations that disagree ambiguous."
)
_BOX_OVER_LINE = (
    "auto prefers a box to a final-answer line, whichever comes last; use extract: "
    "final_line to grade the line."
)
_PROSE_AFTER = (
    "Prose after the final declaration is not read: a retraction in words ('wait, it is "
    "43') cannot be told from commentary without a judge. Pair the grader with a judge "
    "criterion, or ask for the final answer last."
)
_WHOLE_TEXT = (
    "auto falls back to the whole text when there is no box and no final-answer line "
    "(numeric: its last number, GSM8K-style; math: math-verify's own pick). Use extract: "
    "boxed or final_line to give 0 to a completion that declares nothing."
)

CHOICES: tuple[Choice, ...] = (
    *(Choice(g, "*", _WHOLE_TEXT, method="none") for g in ANSWERS),
    *(
        Choice(g, shape, _LAST_DECLARATION)
        for g in ANSWERS
        for shape in ("wrong_box_then_right_box", "wrong_line_then_right_line", "wrong_box_in_text")
    ),
    *(Choice(g, "right_box_then_wrong_line", _BOX_OVER_LINE) for g in ANSWERS),
    *(
        Choice(g, shape, _PROSE_AFTER)
        for g in ANSWERS
        for shape in ("retracted_in_prose", "corrected_after_line", "junk_digits", "unclosed_last")
    ),
    Choice(
        "similarity",
        "*",
        "similarity is a graded closeness, not a verdict: a text a few edits from the "
        "reference (a near miss, a negation, a look-alike, a second answer) scores high by "
        "design, and the fuzzer's 0.8 line is its own. A rubric that needs a verdict uses "
        "exact, numeric or math.",
    ),
    *(
        Choice(
            "exact",
            shape,
            "ignore_punctuation (the default) drops percent, currency and exclamation marks "
            "with the rest of the punctuation ('42%' == '42!' == '42'); set it to false, or "
            "use numeric or math.",
        )
        for shape in ("percent", "currency", "factorial")
    ),
    Choice(
        "numeric",
        "percent",
        "Percent signs are normalized away (documented in the numeric spec): '51%' matches "
        "51. A reference that means 0.51 must say so.",
    ),
    Choice(
        "math",
        "percent",
        "math-verify reads '51\\%' as 51, as the numeric grader does.",
    ),
    Choice(
        "regex",
        "lookalike",
        "Patterns run on the text as written: folding look-alike letters would change "
        "what every pattern means. must_not_match is not a refusal detector; use a judge "
        "criterion, or a pattern of the look-alikes.",
    ),
    Choice(
        "regex",
        "fullwidth",
        "As for look-alikes: RE2 matches the characters written (full-width letters are "
        "other characters).",
    ),
    Choice(
        "regex",
        "zero_width",
        "As for look-alikes; the zero_width detector flags the completion "
        "(rewardsvc.safety), and the flag costs the whole reward unless the rubric opts out.",
    ),
    Choice(
        "json_schema",
        "float_age",
        "JSON Schema draft 2020-12: an integer is any number with a zero fractional part "
        "(36.0 is an integer).",
    ),
    Choice("json_schema", "exponent_age", "As for 36.0: 36e0 is the number 36, an integer."),
    *(
        Choice(
            g,
            "bad_block_then_good",
            "The last fenced code block is the answer, as the last box is.",
        )
        for g in ("json", "json_schema")
    ),
    Choice(
        "sections",
        "empty_sections",
        "The grader checks that each section is there (a heading names it), not what is "
        "under it: judge the content with a criterion.",
    ),
    Choice(
        "sections",
        "negated_heading",
        "A required name counts as a word of a heading, so 'No risks worth listing' names "
        "Risks: a section that says there are none is still the section.",
    ),
    Choice(
        "sections",
        "one_heading_for_two",
        "As for negated headings: 'Summary and risks' names both sections.",
    ),
)
"""Every explained false positive shape."""

_BY_SHAPE = {(c.grader, c.shape): c.reason for c in CHOICES if c.method is None}
_BY_METHOD = {(c.grader, c.method): c.reason for c in CHOICES if c.method is not None}


def explanation(grader: str, shape: str, method: str | None = None) -> str | None:
    """The reason a false positive of ``shape`` on ``grader`` (its answer found by
    extraction ``method``) is a choice, None if none."""
    by_method = _BY_METHOD.get((grader, method)) if method is not None else None
    return by_method or _BY_SHAPE.get((grader, shape)) or _BY_SHAPE.get((grader, "*"))
