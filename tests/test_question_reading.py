"""A question reads answers per scale from tables built once per scale (``Question.match``,
``Question.normalized``): they must read every token exactly as the plain definitions do
(scan the choices in order, case and whitespace ignored; ``(value - low) / (high - low)``)."""

from __future__ import annotations

import math

import pytest

from rewardsvc.judges.answers import distribution
from rewardsvc.judges.questions import HOLISTIC_RANGE, Question


def _match(q: Question, answer: str) -> str | None:
    key = answer.strip().lower()
    return next((c for c in q.choices if c.lower() == key), None)


def _normalized(q: Question, choice: str) -> float:
    value = q.values[q.choices.index(choice)]
    return (value - min(q.values)) / (max(q.values) - min(q.values))


def _likert(low: int, high: int) -> Question:
    values = tuple(range(low, high + 1))
    return Question("q", tuple(str(v) for v in values), values)


SCALES = [
    Question("q", ("yes", "no"), (1, 0)),
    _likert(1, 5),
    _likert(0, 10),
    _likert(*HOLISTIC_RANGE),
    Question("q", ("A", "B", "C"), (2, 1, 0)),  # a comparison's labels
    Question("q", ("Yes", "yes", "no"), (1, 0, 0)),  # choices that fold alike: the first
]
TOKENS = [
    "yes",
    " yes",
    "Yes",
    "YES\n",
    "no",
    " No ",
    "y",
    "",
    " ",
    "3",
    " 3",
    "10",
    "a",
    " b",
    "C",
    "maybe",
    "yes no",
    "\t9",
]


@pytest.mark.parametrize("question", SCALES, ids=lambda q: "/".join(q.choices))
def test_a_scale_reads_every_token_as_the_plain_definitions_do(question: Question) -> None:
    for token in TOKENS:
        assert question.match(token) == _match(question, token)
    for choice in question.choices:
        assert question.normalized(choice) == _normalized(question, choice)
    with pytest.raises(ValueError):
        question.normalized("not a choice")


def test_a_scale_of_one_value_still_fails_to_normalize() -> None:
    flat = Question("q", ("1", "2"), (3, 3))
    assert flat.match(" 2") == "2"
    with pytest.raises(ZeroDivisionError):
        flat.normalized("1")


def test_the_distribution_is_the_same_twice_over_one_scale() -> None:
    # The second question of a scale reads from the tables the first one built.
    top = [("yes", -0.2231435513142097), (" Yes", -3.0), ("no", -1.6094379124341005), ("x", -1.0)]
    first = distribution(Question("a", ("yes", "no"), (1, 0)), top)
    again = distribution(Question("b", ("yes", "no"), (1, 0)), top)
    assert first == again
    assert first[0]["yes"] > first[0]["no"] and sum(first[0].values()) == pytest.approx(1.0)


def _plain_distribution(
    q: Question, top: list[tuple[str, float]]
) -> tuple[dict[str, float], float]:
    best: dict[str, float] = {}
    for token, logprob in top:
        best[token] = max(math.exp(logprob), best.get(token, 0.0))
    mass = dict.fromkeys(q.choices, 0.0)
    for token, p in best.items():
        choice = _match(q, token)
        if choice is not None:
            mass[choice] += p
    total = sum(mass.values())
    probs = {c: m / total for c, m in mass.items()}
    return probs, sum(p * _normalized(q, c) for c, p in probs.items())


@pytest.mark.parametrize("question", SCALES, ids=lambda q: "/".join(q.choices))
def test_the_distribution_reads_as_the_plain_definitions_do(question: Question) -> None:
    top = [(t, -0.1 * n) for n, t in enumerate(TOKENS + [f" {c}" for c in question.choices])]
    probs, mean, _ = distribution(question, top)
    plain_probs, plain_mean = _plain_distribution(question, top)
    assert probs == plain_probs and mean == min(1.0, max(0.0, plain_mean))
