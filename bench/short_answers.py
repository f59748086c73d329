"""Writes ``rubrics/data/short-answers.jsonl``: labelled short answers to arithmetic word
problems, for the cascade bench (``bench/cascade.py --data short-answers``) and
``rewardsvc cascade calibrate`` on ``short-answer-correctness``.

Each question has a right answer (label 1) and a wrong one (label 0) made by a mistake a
policy makes: the wrong operation, a step left out, an off-by-one count. Both show their
working and end with a final answer, so the judge's question is the rubric's: does the
final answer match the reference? The numbers come from a seeded generator, so the file is
the same on every run::

    .venv/bin/python -m bench.short_answers            # writes the file
    .venv/bin/python -m bench.short_answers --check    # exits 1 if the file differs
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "rubrics" / "data" / "short-answers.jsonl"
QUESTIONS = 150
SEED = 20261205

Problem = tuple[str, str, str, int, int]
"""(prompt, right working, wrong working, right answer, wrong answer)."""


def _apples(r: random.Random) -> Problem:
    have, eat, buy = r.randint(12, 40), r.randint(2, 9), r.randint(3, 15)
    right, wrong = have - eat + buy, have - eat - buy
    prompt = (
        f"Maya has {have} apples. She eats {eat} and then buys {buy} more. "
        "How many apples does she have now?"
    )
    return (
        prompt,
        f"{have} - {eat} = {have - eat}, then {have - eat} + {buy} = {right}.",
        f"{have} - {eat} = {have - eat}, then {have - eat} - {buy} = {wrong}.",
        right,
        wrong,
    )


def _boxes(r: random.Random) -> Problem:
    boxes, per = r.randint(3, 12), r.randint(4, 24)
    right, wrong = boxes * per, boxes + per
    prompt = f"A shelf holds {boxes} boxes with {per} pens in each box. How many pens are there?"
    return (
        prompt,
        f"{boxes} boxes x {per} pens = {right} pens.",
        f"{boxes} boxes + {per} pens = {wrong} pens.",
        right,
        wrong,
    )


def _speed(r: random.Random) -> Problem:
    hours, speed = r.randint(2, 6), r.choice([40, 45, 50, 60, 70, 75, 80, 90])
    right, wrong = hours * speed, speed // hours
    prompt = f"A bus drives at {speed} km/h for {hours} hours. How many kilometres does it cover?"
    return (
        prompt,
        f"Distance = speed x time = {speed} x {hours} = {right} km.",
        f"Distance = speed / time = {speed} / {hours} = {wrong} km.",
        right,
        wrong,
    )


def _change(r: random.Random) -> Problem:
    price, count = r.randint(2, 9), r.randint(2, 6)
    paid = r.choice([n for n in (20, 50, 100) if n > price * count])
    right, wrong = paid - price * count, paid - price
    prompt = (
        f"Tom buys {count} notebooks at ${price} each and pays with a ${paid} bill. "
        "How many dollars of change does he get?"
    )
    return (
        prompt,
        f"{count} x ${price} = ${price * count}; ${paid} - ${price * count} = ${right}.",
        f"He pays ${price}, so ${paid} - ${price} = ${wrong}.",
        right,
        wrong,
    )


def _fence(r: random.Random) -> Problem:
    length, gap = r.randint(4, 20) * 2, 2
    right, wrong = length // gap + 1, length // gap
    prompt = (
        f"Posts are put every {gap} metres along a straight fence {length} metres long, "
        "one at each end too. How many posts are there?"
    )
    return (
        prompt,
        f"{length} / {gap} = {length // gap} gaps, and one more post than gaps: {right}.",
        f"{length} / {gap} = {wrong} posts.",
        right,
        wrong,
    )


def _ages(r: random.Random) -> Problem:
    now, years = r.randint(6, 30), r.randint(3, 12)
    right, wrong = now + years, now - years
    prompt = f"Lena is {now} years old today. How old will she be in {years} years?"
    return (
        prompt,
        f"{now} + {years} = {right}.",
        f"{now} - {years} = {wrong}.",
        right,
        wrong,
    )


def _share(r: random.Random) -> Problem:
    friends, each = r.randint(3, 8), r.randint(3, 12)
    total = friends * each
    right, wrong = each, total - friends
    prompt = f"{total} stickers are shared equally among {friends} friends. How many does each get?"
    return (
        prompt,
        f"{total} / {friends} = {right} stickers each.",
        f"{total} - {friends} = {wrong} stickers each.",
        right,
        wrong,
    )


def _rectangle(r: random.Random) -> Problem:
    width, height = r.randint(3, 15), r.randint(3, 15)
    right, wrong = 2 * (width + height), width * height
    prompt = f"A rectangle is {width} cm wide and {height} cm tall. What is its perimeter in cm?"
    return (
        prompt,
        f"Perimeter = 2 x ({width} + {height}) = {right} cm.",
        f"Perimeter = {width} x {height} = {wrong} cm.",
        right,
        wrong,
    )


def _minutes(r: random.Random) -> Problem:
    hours, minutes = r.randint(1, 4), r.choice([10, 15, 20, 25, 30, 40, 45, 50])
    right, wrong = hours * 60 + minutes, hours * 100 + minutes
    prompt = f"How many minutes are there in {hours} hours and {minutes} minutes?"
    return (
        prompt,
        f"{hours} x 60 = {hours * 60}, plus {minutes} is {right} minutes.",
        f"{hours} x 100 = {hours * 100}, plus {minutes} is {wrong} minutes.",
        right,
        wrong,
    )


def _percent(r: random.Random) -> Problem:
    # Prices a multiple of 20: every discount is a whole number of dollars.
    price, off = r.choice([40, 60, 80, 120, 160, 200, 240]), r.choice([10, 20, 25, 50])
    cut = price * off // 100
    right, wrong = price - cut, price - off
    prompt = f"A jacket costs ${price} and is {off}% off. What is the sale price in dollars?"
    return (
        prompt,
        f"{off}% of ${price} is ${cut}; ${price} - ${cut} = ${right}.",
        f"${price} - ${off} = ${wrong}.",
        right,
        wrong,
    )


TEMPLATES: list[Callable[[random.Random], Problem]] = [
    _apples,
    _boxes,
    _speed,
    _change,
    _fence,
    _ages,
    _share,
    _rectangle,
    _minutes,
    _percent,
]

ENDINGS = ["The answer is {n}.", "So the answer is {n}.", "Final answer: {n}", "{n}."]


def rows(questions: int = QUESTIONS, seed: int = SEED) -> list[dict[str, object]]:
    """Two labelled rows per question: ``sa-NNNa`` right, ``sa-NNNb`` wrong."""
    r = random.Random(seed)
    out: list[dict[str, object]] = []
    seen: set[str] = set()
    for number in range(1, questions + 1):
        template = TEMPLATES[(number - 1) % len(TEMPLATES)]
        prompt, good, bad, right, wrong = template(r)
        # A question asked twice would sit in both folds; a 4 x 4 square's area equals
        # its perimeter, so its wrong answer would be right.
        while right == wrong or prompt in seen:
            prompt, good, bad, right, wrong = template(r)
        seen.add(prompt)
        ending = r.choice(ENDINGS)
        for suffix, working, answer, label in (("a", good, right, 1), ("b", bad, wrong, 0)):
            out.append(
                {
                    "id": f"sa-{number:03d}{suffix}",
                    "prompt": prompt,
                    "completion": f"{working} {ending.format(n=answer)}",
                    "reference": str(right),
                    "label": label,
                }
            )
    return out


def text() -> str:
    """The file's content."""
    return "".join(json.dumps(row) + "\n" for row in rows())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs")
    args = parser.parse_args()
    if args.check:
        sys.exit(0 if OUT.read_text() == text() else 1)
    OUT.write_text(text())


if __name__ == "__main__":
    main()
