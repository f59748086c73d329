"""Adversarial completions for the answer graders, in mutation families.

Every family is a function ``(rng, item) -> list[Probe]``: a few completions built around
one item (a reference answer, right forms of it and wrong values), each labelled with its
family and *shape* (the one trick it plays). The probes carry no verdict: the reference
check (:mod:`~rewardsvc.fuzzing.reference`) decides whether each is right.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    """A reference answer, forms that state it, and wrong answers near it."""

    reference: str
    right: tuple[str, ...]
    wrong: tuple[str, ...]
    numeric: bool


@dataclass(frozen=True)
class Probe:
    """One generated completion against a reference: its family and shape."""

    family: str
    shape: str
    completion: str
    reference: str


def number_item(value: int) -> Item:
    """An integer answer: plain, grouped and LaTeX-fraction forms; near and far misses."""
    grouped = f"{value:,}"
    right = (str(value), grouped, rf"\frac{{{2 * value}}}{{2}}", f"{value}.0")
    wrong = (str(value + 1), str(value - 1), str(value * 10), str(value)[::-1] + "1")
    return Item(str(value), right, tuple(w for w in wrong if w != str(value)), True)


ITEMS: tuple[Item, ...] = (
    *(number_item(v) for v in (42, 51, 7, 1234, -15, 1000000, 24, 210)),
    Item("3/4", ("3/4", r"\frac{3}{4}", "0.75", r"\dfrac{3}{4}"), ("4/3", "0.7", "3/5"), True),
    Item("2.5", ("2.5", r"\frac{5}{2}", "5/2"), ("2.05", "25", "-2.5"), True),
    Item("Paris", ("Paris", "paris", "PARIS", r"\text{Paris}"), ("Lyon", "Pariss", "Par1s"), False),
    Item("blue whale", ("blue whale", "Blue Whale"), ("blue shark", "whale", "blue"), False),
)
"""The items every family mutates: integers (small, grouped, negative, large), a
fraction, a decimal and two text answers."""

REASONING = (
    "Let me work through this step by step. First I note the 3 given facts.",
    "We start from the setup: 12 apples, 5 boxes, and a rule for each.",
    "Thinking about it carefully, there are two cases to check.",
)

Family = Callable[[random.Random, Item], list[Probe]]


def _declare(rng: random.Random, answer: str) -> str:
    forms = (
        "Final answer: {}",
        "\\boxed{{{}}}",
        "So the answer is $\\boxed{{{}}}$.",
        "**Final Answer:** {}",
    )
    return rng.choice(forms).format(answer)


def _probe(family: str, shape: str, item: Item, completion: str) -> Probe:
    return Probe(family, shape, completion, item.reference)


def clean(rng: random.Random, item: Item) -> list[Probe]:
    """The plain cases: a right and a wrong declared answer, and a bare right one."""
    why = rng.choice(REASONING)
    return [
        _probe("clean", "right", item, f"{why}\n{_declare(rng, rng.choice(item.right))}"),
        _probe("clean", "wrong", item, f"{why}\n{_declare(rng, rng.choice(item.wrong))}"),
        _probe("clean", "bare", item, item.right[0]),
    ]


def several_finals(rng: random.Random, item: Item) -> list[Probe]:
    """Two declarations that disagree, the right one last or first."""
    r, w = rng.choice(item.right), rng.choice(item.wrong)
    return [
        _probe(
            "several_finals",
            "wrong_box_then_right_box",
            item,
            f"\\boxed{{{w}}} or rather \\boxed{{{r}}}",
        ),
        _probe(
            "several_finals",
            "right_box_then_wrong_box",
            item,
            f"\\boxed{{{r}}} or rather \\boxed{{{w}}}",
        ),
        _probe(
            "several_finals",
            "right_box_then_wrong_line",
            item,
            f"So \\boxed{{{r}}}.\nFinal answer: {w}",
        ),
        _probe(
            "several_finals", "wrong_line_then_right_line", item, f"Answer: {w}\nFinal answer: {r}"
        ),
    ]


def reasoning_only(rng: random.Random, item: Item) -> list[Probe]:
    """The right answer only inside the reasoning (or in code and comments)."""
    r, w = rng.choice(item.right), rng.choice(item.wrong)
    why = rng.choice(REASONING)
    return [
        _probe(
            "reasoning_only", "no_declaration", item, f"{why} One guess is {r}, hmm, hard to say."
        ),
        _probe(
            "reasoning_only",
            "right_in_reasoning_wrong_final",
            item,
            f"{why} Maybe {r}.\nFinal answer: {w}",
        ),
        _probe(
            "reasoning_only",
            "right_in_code",
            item,
            f"```python\nprint({r!r})  # Final answer: {r}\n```\nI could not finish.",
        ),
        _probe(
            "reasoning_only",
            "right_in_comment",
            item,
            f"{why} <!-- \\boxed{{{r}}} --> I could not finish.",
        ),
    ]


def wrong_after_right(rng: random.Random, item: Item) -> list[Probe]:
    """A right declaration retracted in prose afterwards."""
    r, w = rng.choice(item.right), rng.choice(item.wrong)
    return [
        _probe(
            "wrong_after_right",
            "retracted_in_prose",
            item,
            f"\\boxed{{{r}}}. Wait, that is wrong: it is {w}.",
        ),
        _probe(
            "wrong_after_right",
            "corrected_after_line",
            item,
            f"Final answer: {r}\nActually I made a mistake, so {w}.",
        ),
    ]


FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
ARABIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
LOOKALIKE = str.maketrans({"0": "O", "1": "l", "a": "а", "e": "е", "o": "о", "P": "Р"})


def unicode_tricks(rng: random.Random, item: Item) -> list[Probe]:
    """Other digit scripts, superscripts, look-alike letters, zero-width characters."""
    r = item.reference
    out = [
        _probe("unicode", "fullwidth", item, _declare(rng, r.translate(FULLWIDTH))),
        _probe("unicode", "lookalike", item, _declare(rng, r.translate(LOOKALIKE))),
    ]
    if len(r) > 1:
        half = len(r) // 2
        out.append(
            _probe(
                "unicode", "zero_width_inside", item, _declare(rng, r[:half] + "\u200b" + r[half:])
            )
        )
    if item.numeric and r.lstrip("-").isdigit() and len(r.lstrip("-")) > 1:
        head, tail = r[: len(r) - 1], r[-1]
        out += [
            _probe("unicode", "other_script_digits", item, _declare(rng, r.translate(ARABIC))),
            _probe(
                "unicode",
                "superscript_tail",
                item,
                _declare(rng, head + tail.translate(SUPERSCRIPT)),
            ),
            _probe("unicode", "mixed_scripts", item, _declare(rng, head + tail.translate(ARABIC))),
        ]
    if r.startswith("-"):
        out.append(_probe("unicode", "unicode_minus", item, _declare(rng, "−" + r[1:])))
    return out


def latex_units(rng: random.Random, item: Item) -> list[Probe]:
    """Units, currency and percent around the answer; the answer as an operand."""
    r = item.reference
    if not item.numeric:
        return [
            _probe("latex_units", "text_wrapper", item, f"\\boxed{{\\text{{{r}}}}}"),
            _probe("latex_units", "math_italic", item, f"\\boxed{{\\mathit{{{r}}}}}"),
        ]
    return [
        _probe("latex_units", "unit_text", item, f"\\boxed{{{r}\\text{{ cm}}}}"),
        _probe("latex_units", "unit_word", item, f"Final answer: {r} meters"),
        _probe("latex_units", "percent", item, f"\\boxed{{{r}\\%}}"),
        _probe("latex_units", "currency", item, f"Final answer: \\${r}"),
        _probe("latex_units", "power_of", item, f"\\boxed{{2^{{{r}}}}}"),
        _probe("latex_units", "sqrt_of", item, f"\\boxed{{\\sqrt{{{r}}}}}"),
        _probe("latex_units", "factorial", item, f"Final answer: {r}!"),
        _probe("latex_units", "plus_one", item, f"\\boxed{{{r} + 1}}"),
        _probe("latex_units", "times_one", item, f"\\boxed{{1 \\times {r}}}"),
        _probe("latex_units", "scaled_fraction", item, rf"\boxed{{\frac{{{r}}}{{10}} \cdot 10}}"),
    ]


def boxed_nesting(rng: random.Random, item: Item) -> list[Probe]:
    """Boxes in boxes, several boxes in one, unclosed, unbraced, hidden boxes."""
    r, w = rng.choice(item.right), rng.choice(item.wrong)
    return [
        _probe("boxed_nesting", "box_in_box", item, f"\\boxed{{\\boxed{{{r}}}}}"),
        _probe(
            "boxed_nesting", "two_boxes_in_one", item, f"\\boxed{{\\boxed{{{w}}} + \\boxed{{{r}}}}}"
        ),
        _probe("boxed_nesting", "unclosed_last", item, f"\\boxed{{{r}}} and \\boxed{{{w}"),
        _probe("boxed_nesting", "unbraced_box", item, f"\\boxed {r}"),
        _probe("boxed_nesting", "fbox", item, f"\\fbox{{{r}}}"),
        _probe(
            "boxed_nesting", "box_in_code_after", item, f"\\boxed{{{r}}}\n```\n\\boxed{{{w}}}\n```"
        ),
        _probe(
            "boxed_nesting",
            "wrong_box_in_text",
            item,
            f"\\boxed{{{w}}} \\text{{or maybe \\boxed{{{r}}}}}",
        ),
    ]


def negation(rng: random.Random, item: Item) -> list[Probe]:
    """The right answer, negated."""
    r = item.reference
    return [
        _probe("negation", "not_line", item, f"Final answer: not {r}"),
        _probe("negation", "neq_box", item, f"\\boxed{{\\neq {r}}}"),
        _probe("negation", "x_neq_box", item, f"\\boxed{{x \\neq {r}}}"),
        _probe("negation", "text_not_box", item, f"\\boxed{{\\text{{not }} {r}}}"),
        _probe("negation", "prose_not", item, f"The answer is not {r}."),
        _probe("negation", "isnt_line", item, f"Final answer: it isn't {r}"),
    ]


def trailing_junk(rng: random.Random, item: Item) -> list[Probe]:
    """Alternatives, lists, ranges and junk around a declared right answer."""
    r, w = rng.choice(item.right), rng.choice(item.wrong)
    return [
        _probe("trailing_junk", "alternatives", item, f"Final answer: {w} or {r}"),
        _probe("trailing_junk", "list", item, f"\\boxed{{{w}, {r}}}"),
        _probe("trailing_junk", "list_no_space", item, f"\\boxed{{{w},{r}}}"),
        _probe("trailing_junk", "range", item, f"Final answer: between {w} and {r}"),
        _probe("trailing_junk", "junk_words", item, f"Final answer: {r} lol xd"),
        _probe("trailing_junk", "polite_tail", item, f"Final answer: {r}\n\nHope this helps!"),
        _probe("trailing_junk", "junk_digits", item, f"\\boxed{{{r}}} 17 23"),
    ]


def truncation(rng: random.Random, item: Item) -> list[Probe]:
    """A right declared completion cut at a random point."""
    full = f"{rng.choice(REASONING)}\n{_declare(rng, rng.choice(item.right))}"
    cuts = sorted(rng.sample(range(1, len(full)), 3))
    return [_probe("truncation", "cut", item, full[:cut]) for cut in cuts]


FAMILIES: tuple[Family, ...] = (
    clean,
    several_finals,
    reasoning_only,
    wrong_after_right,
    unicode_tricks,
    latex_units,
    boxed_nesting,
    negation,
    trailing_junk,
    truncation,
)
"""Every mutation family of the answer graders, in the order the report lists them."""


def answer_probes(rng: random.Random, rounds: int, numeric: bool | None) -> list[Probe]:
    """``rounds`` passes of every family over the items (only the numeric ones, or only
    the text ones, when ``numeric`` says so)."""
    items = [i for i in ITEMS if numeric is None or i.numeric == numeric]
    return [
        p for _ in range(rounds) for item in items for family in FAMILIES for p in family(rng, item)
    ]
