"""Adversarial completions for the answer graders, in mutation families.

Every family is a function ``(rng, item) -> list[Probe]``: a few completions built around
one item (a reference answer, right forms of it and wrong values), each labelled with its
family and *shape* (the one trick it plays). The probes carry no verdict: the reference
check (:mod:`~rewardsvc.fuzzing.reference`) decides whether each is right.

Families that only fill templates are written in ``answer_shapes.yaml`` beside this
module (a new shape is one line there); the ones that compute their completions are
functions here.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from string import Template

from ruamel.yaml import YAML


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


def probe_rounds(
    family: str, shapes: Callable[[random.Random], dict[str, str]]
) -> Callable[[random.Random, int], list[Probe]]:
    """The probe maker of ``family``: ``rounds`` draws of its ``shapes`` (shape ->
    completion), each completion a probe with no reference answer."""

    def make(rng: random.Random, rounds: int) -> list[Probe]:
        return [
            Probe(family, shape, text, "")
            for _ in range(rounds)
            for shape, text in shapes(rng).items()
        ]

    make.__doc__ = shapes.__doc__
    return make


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


_SHAPES: dict[str, dict[str, dict[str, str]]] = YAML(typ="safe").load(
    files("rewardsvc.fuzzing").joinpath("answer_shapes.yaml").read_text(encoding="utf-8")
)
"""The template families: family -> ``any|numeric|text`` -> shape -> template."""


def templated(name: str) -> Family:
    """The family ``name`` of ``answer_shapes.yaml``: its shapes for the item, filled in.

    A right form and a wrong answer are drawn (in that order) only when a shape uses
    them, and a line of reasoning after them only when one uses it, so that a family
    spends the random stream as it always has and a seed keeps making the same probes."""
    groups = _SHAPES[name]

    def family(rng: random.Random, item: Item) -> list[Probe]:
        shapes = {**groups.get("any", {}), **groups.get("numeric" if item.numeric else "text", {})}
        used = {
            m["named"] or m["braced"] for t in shapes.values() for m in Template.pattern.finditer(t)
        }
        values = {"ref": item.reference}
        if used & {"r", "w", "r_repr"}:
            values["r"], values["w"] = rng.choice(item.right), rng.choice(item.wrong)
            values["r_repr"] = repr(values["r"])
        if "why" in used:
            values["why"] = rng.choice(REASONING)
        return [
            _probe(name, shape, item, Template(text).substitute(values))
            for shape, text in shapes.items()
        ]

    family.__name__ = name
    family.__doc__ = f"The {name} shapes of answer_shapes.yaml."
    return family


def clean(rng: random.Random, item: Item) -> list[Probe]:
    """The plain cases: a right and a wrong declared answer, and a bare right one."""
    why = rng.choice(REASONING)
    return [
        _probe("clean", "right", item, f"{why}\n{_declare(rng, rng.choice(item.right))}"),
        _probe("clean", "wrong", item, f"{why}\n{_declare(rng, rng.choice(item.wrong))}"),
        _probe("clean", "bare", item, item.right[0]),
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


def truncation(rng: random.Random, item: Item) -> list[Probe]:
    """A right declared completion cut at a random point."""
    full = f"{rng.choice(REASONING)}\n{_declare(rng, rng.choice(item.right))}"
    cuts = sorted(rng.sample(range(1, len(full)), 3))
    return [_probe("truncation", "cut", item, full[:cut]) for cut in cuts]


FAMILIES: tuple[Family, ...] = (
    clean,
    templated("several_finals"),
    templated("reasoning_only"),
    templated("wrong_after_right"),
    unicode_tricks,
    templated("latex_units"),
    templated("boxed_nesting"),
    templated("negation"),
    templated("trailing_junk"),
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
