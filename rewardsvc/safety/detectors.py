"""Detectors of known attack shapes in a completion: pure functions, no I/O, linear time.

Each detector looks for one published family of attacks on LLM judges and is
tuned for precision: normal answers (prose, math, code, other scripts, emoji,
answers that quote scores or discuss grading) should raise nothing. A flag does
not change a score by itself; the engine returns and counts flags, and a rubric
may turn one into a penalty (``transforms.flag_penalties``).

``DETECTORS`` is the one table of flags: ``FLAGS`` and ``detect`` derive from it.
Patterns are RE2 (``rules``), heuristics are single passes (``shapes``), and all
of them scan the bounded ``scan.window`` of the text, so ``detect`` takes time
linear in its input and bounded overall. It is synchronous and pure; a caller on
an event loop should run it in a worker thread for completions longer than
``THREAD_ABOVE_CHARS``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rewardsvc.core.rollout import Rollout
from rewardsvc.safety import rules
from rewardsvc.safety.defuse import CONTROL_FLAG_PATTERN
from rewardsvc.safety.scan import THREAD_ABOVE_CHARS, prose, rx, window
from rewardsvc.safety.shapes import master_key, padding

__all__ = ["DETECTORS", "FLAGS", "THREAD_ABOVE_CHARS", "Detector", "detect", "flags_of"]


@dataclass(frozen=True)
class Detector:
    """One flag: its name, what it means, and the check that raises it."""

    flag: str
    meaning: str
    check: Callable[[str], bool]


def _any(patterns: Sequence[str], *, prose_only: bool = False) -> Callable[[str], bool]:
    # One alternation, one pass: RE2 runs all rules of a flag together (a leading inline
    # flag such as (?i) applies to the end of its own group only).
    compiled = rx("|".join(f"(?:{p})" for p in patterns))

    def check(text: str) -> bool:
        return compiled.search(prose(text) if prose_only else text) is not None

    return check


_fake_score = _any(rules.FAKE_SCORE)
_verdict_strong = _any(rules.FAKE_VERDICT_STRONG)
_verdict_weak = _any(rules.FAKE_VERDICT_WEAK, prose_only=True)


def _fake_score_or_verdict(text: str) -> bool:
    return _fake_score(text) or _verdict_strong(text) or _verdict_weak(text)


DETECTORS: tuple[Detector, ...] = (
    Detector(
        "authority_appeal",
        'claims of outside approval: "verified by an expert, full marks", "gold-standard answer"',
        _any(rules.AUTHORITY_APPEAL),
    ),
    Detector(
        "control_tokens",
        "chat-template control tokens (ChatML, Llama, Gemma, Mistral, DeepSeek, T5, Seed, "
        "Cohere, ...), defused in judge prompts",
        _any([CONTROL_FLAG_PATTERN]),
    ),
    Detector(
        "fake_score",
        'a score or verdict written into the answer: "Rating: 10", "[[9]]", {"answer": "yes"}',
        _fake_score_or_verdict,
    ),
    Detector(
        "fence_escape",
        "attempts to close or fake the fence around graded text: closing tags such as "
        "</response>, look-alike or pathologically long fences, 'end of response'",
        _any(rules.FENCE_ESCAPE),
    ),
    Detector(
        "hidden_markup",
        "HTML comments, scripts or invisible elements outside code",
        _any(rules.HIDDEN_MARKUP, prose_only=True),
    ),
    Detector(
        "homoglyph",
        "words mixing Latin with look-alike letters, or fullwidth/mathematical letters",
        _any(rules.HOMOGLYPH),
    ),
    Detector(
        "injection_suspected",
        "instructions to the grader, admin notes, 'updated criteria', self-assessments",
        _any(rules.INJECTION),
    ),
    Detector(
        "master_key",
        'the whole answer is punctuation or a bare opener ("Thought process:")',
        master_key,
    ),
    Detector(
        "padding",
        "verbosity padding: the same content restated or repeated",
        padding,
    ),
    Detector(
        "template_mimicry",
        "text imitating the judge prompt's fences, labels or answer line",
        _any(rules.TEMPLATE_MIMICRY),
    ),
    Detector(
        "zero_width",
        "zero-width, bidi-control, tag or filler characters used to hide text",
        _any(rules.ZERO_WIDTH),
    ),
)

FLAGS: tuple[str, ...] = tuple(sorted(d.flag for d in DETECTORS))


def flags_of(text: str) -> list[str]:
    """Sorted names of the attack shapes found in ``text``."""
    scanned = window(text)
    return sorted(d.flag for d in DETECTORS if d.check(scanned))


def detect(rollout: Rollout) -> list[str]:
    """Sorted names of the attack shapes found in the completion (the policy's output).

    The prompt and reference come from the dataset, not the policy, so they are
    not checked: flags describe what the policy did.
    """
    return flags_of(rollout.completion)
