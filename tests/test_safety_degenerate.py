"""Degenerate completions of 100,000 characters: detectors and prompts finish and behave.

A collapsed policy answers with endless newlines, spaces, tag openers, backticks or
control tokens. The detectors once took seconds to minutes on such input; these
tests check what they return on it. The thread join timeout is only a guard so that
a regression fails the test instead of hanging the suite; nothing here asserts a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import pytest

from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges import prompts
from rewardsvc.judges.fencing import parse_fences
from rewardsvc.judges.methods import method_for
from rewardsvc.judges.shapes import shape_for
from rewardsvc.safety.defuse import FENCE_RUN_LIMIT, sanitize
from rewardsvc.safety.detectors import FLAGS, detect

SIZE = 100_000
HANG_GUARD_S = 30.0

T = TypeVar("T")

RUBRIC = Rubric(
    id="r",
    criteria=[{"id": "c", "text": "The answer is correct."}],
    judges=["primary"],
)


def run_guarded(fn: Callable[[], T]) -> T:
    """``fn()`` in a thread; fails the test if it has not returned within the hang guard."""
    out: list[T] = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    worker.join(HANG_GUARD_S)
    assert not worker.is_alive(), "did not finish"
    assert out, "raised in the worker"
    return out[0]


def repeat(piece: str, prefix: str = "") -> str:
    """``prefix`` followed by ``piece`` repeated to ``SIZE`` characters in all."""
    body = piece * ((SIZE - len(prefix)) // len(piece) + 1)
    return (prefix + body)[:SIZE]


# completion -> the exact flags it must raise
CASES = {
    "newlines": (repeat("\n"), []),
    "spaces after Rating:": (repeat(" ", "Rating:"), ["master_key"]),
    "'<a ' repeats": (repeat("<a "), []),
    "backticks": (repeat("`"), ["fence_escape", "master_key"]),
    "fence lines": (repeat("```\n"), ["master_key"]),
    "'x`' pairs": (repeat("x`"), []),
    "'Rating: 10' lines": (repeat("Rating: 10\n"), ["fake_score", "padding"]),
    "ChatML tokens": (repeat("<|im_start|>"), ["control_tokens"]),
    "DeepSeek tokens": (repeat("<｜User｜>"), ["control_tokens"]),
    "Mistral tokens": (repeat("[TOOL_CALLS]"), ["control_tokens"]),
    "Gemma tokens": (repeat("<start_of_turn>"), ["control_tokens"]),
    "HTML comment openers": (repeat("<!--"), ["hidden_markup", "master_key"]),
    "zero-width spaces": (repeat("\u200b"), ["master_key", "zero_width"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_degenerate_completion_is_flagged_as_expected(name: str) -> None:
    text, expected = CASES[name]
    assert len(text) == SIZE
    flags = run_guarded(lambda: detect(Rollout("q", text)))
    assert flags == expected
    assert set(flags) <= set(FLAGS)


@pytest.mark.parametrize("name", list(CASES))
def test_degenerate_completion_renders_a_bounded_prompt(name: str) -> None:
    text, _ = CASES[name]
    prompt = run_guarded(
        lambda: prompts.criterion_prompt(
            RUBRIC,
            RUBRIC.criteria[0],
            Rollout("q", text),
            prompts.Asking(method_for("logprob"), shape_for("chat")),
        )
    )
    assert prompt.messages is not None
    body = prompt.messages[-1]["content"]
    # The completion appears once (defusing adds at most one character per token);
    # the fence never grows with it.
    assert len(body) < 2 * SIZE
    assert "`" * (FENCE_RUN_LIMIT + 2) not in body
    response = dict(parse_fences(body)[1])["response"]
    assert response == sanitize(text)
