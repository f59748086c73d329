"""How a judge's answer is read from its reply: the scale's distribution from the logprobs
at the answer position (:func:`distribution`, the one reading of a logprob for every
method, shape and reader: logprob, batched, comparisons, reasoning judges), a short
free-text answer (:func:`parse_answer`) and a structured JSON one
(:func:`parse_structured`). An answer that cannot be read raises :class:`Unparseable`.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable

from rewardsvc.judges.questions import Question

# Below this total probability on the scale tokens, a logprob answer is an error, not a
# score. With constrained decoding the scale (and its prefixes) holds nearly all the mass.
MIN_SCALE_MASS = 1e-3
# A logprob above 0 is a probability above 1: only float rounding may put one there.
LOGPROB_ROUNDING = 1e-3


class Unparseable(Exception):
    """The judge answered, but not with something on the scale."""


def probability(token: str, logprob: float) -> float:
    """The probability of one alternative: ``exp(logprob)`` (``-inf``: 0). Raises
    :class:`Unparseable` for a logprob that is NaN (the shapes' mark of a missing or
    unreadable one, ``shapes.DAMAGED``) or above 0 by more than rounding (``+inf``
    included): a damaged answer has no score, and leaving its entry out would renormalise
    the rest into a confident one."""
    if math.isnan(logprob) or logprob > LOGPROB_ROUNDING:
        raise Unparseable(f"the logprob of {token!r} is {logprob!r}, not a log-probability")
    return math.exp(min(logprob, 0.0))


def distribution(
    question: Question, top: Iterable[tuple[str, float]]
) -> tuple[dict[str, float], float, float]:
    """Scale probabilities, mean and variance from ``(token, logprob)`` alternatives.

    Every logprob is read by :func:`probability` (one that is not a log-probability fails
    the reading); a token listed twice counts once, at its higher probability (the decoded
    token's own, where a byte-fallback token of the same text shadowed it in a completion's
    ``top_logprobs`` map). Tokens are matched to answers with whitespace stripped and case
    ignored; the probabilities of variants (``"yes"``, ``" yes"``, ``"Yes"``) add up; the
    result is renormalized over the scale. Raises :class:`Unparseable` when no scale token
    is among the alternatives.
    """
    best: dict[str, float] = {}
    for token, logprob in top:
        best[token] = max(probability(token, logprob), best.get(token, 0.0))
    mass = dict.fromkeys(question.choices, 0.0)
    answers = question.answers  # the question's own match, looked up once per reading
    for token, p in best.items():
        choice = answers.get(token.strip().lower())
        if choice is not None:
            mass[choice] += p
    total = sum(mass.values())
    if not total > 0.0:
        raise Unparseable(
            f"no scale token {list(question.choices)} among the top logprobs {sorted(best)}"
        )
    if total < MIN_SCALE_MASS:
        # Renormalizing a vanishing mass would turn noise into a confident-looking score.
        raise Unparseable(f"the scale tokens carry only {total:.2g} of the probability")
    probs = {c: m / total for c, m in mass.items()}
    points = question.points
    mean = sum(p * points[c] for c, p in probs.items())
    variance = sum(p * (points[c] - mean) ** 2 for c, p in probs.items())
    return probs, min(1.0, max(0.0, mean)), max(0.0, variance)


def parse_answer(question: Question, text: str) -> str | None:
    """The scale answer in a short free-text reply, if there is exactly one way to read it."""
    choice = question.match(text)
    if choice is not None:
        return choice
    words = text.strip().split()
    if not words:
        return None
    return question.match(words[0].strip(".,:;!?\"'()[]*"))


def parse_structured(question: Question, text: str) -> str:
    """The answer of a structured (JSON) reply; raises :class:`Unparseable`."""
    start = text.find("{")
    if start < 0:
        raise Unparseable("no JSON object in the reply")
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise Unparseable(f"invalid JSON: {exc.msg}") from exc
    if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str | int):
        raise Unparseable('the JSON reply has no "answer"')
    choice = question.match(str(obj["answer"]))
    if choice is None:
        raise Unparseable(f"answer {obj['answer']!r} is not one of {list(question.choices)}")
    return choice


def top_logprobs(question: Question, most: int) -> int:
    """How many alternatives to ask for at the constrained answer position (at most ``most``).

    Only tokens that spell a prefix of an answer ("y", "ye", "yes", "n", "no")
    can carry probability there, so more than that many alternatives adds
    nothing. Asking for more also does harm on /completions, whose
    ``top_logprobs`` is a dict keyed by token text: byte-fallback tokens
    that spell the same text ("<0x34>" for "4", near-zero probability) then
    enter the list and overwrite the real entries (seen with Gemma 3 on
    vLLM 0.32: the digits' probabilities came back as e^-39).
    """
    return max(1, min(most, _prefixes(question.choices)))


@functools.lru_cache(maxsize=64)  # one entry per scale: a handful
def _prefixes(choices: tuple[str, ...]) -> int:
    return len({c[:i] for c in choices for i in range(1, len(c) + 1)})
