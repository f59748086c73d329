"""Context limits: refuse a judge call that cannot fit, before sending it.

vLLM refuses a prompt longer than the model's context with a 400; that failure is
certain and permanent, so it should not cost a call, a retry or a slot. Counting tokens
exactly needs the judge's tokenizer (one more call); instead :func:`least_tokens` gives
a lower bound from the text alone, and a prompt is refused only when even that bound
does not fit. Prompts near the limit are sent, and vLLM's 400 catches the rest (it is
classified as ``context_overflow`` too).

The bound relies on what the tokenizers of the usual judge families (Llama, Qwen,
Mistral, Gemma, SmolLM) share: a token never spans two words, a number needs a token
per few digits, a long word needs a token per few dozen letters, and a run of spaces,
newlines or punctuation needs a token per :data:`MAX_TOKEN_CHARS` characters (such runs
compress well: SmolLM2 spends one token on 64 spaces). ``tests/test_judges_real.py``
checks the bound against vLLM's ``/tokenize`` on the CPU judges, degenerate inputs
included.
"""

from __future__ import annotations

import math
import re

from rewardsvc.core.pool import JudgeConfig

# Characters of a run of spaces or punctuation that one token can hold at most: SmolLM2
# holds 64 spaces in one token; twice that leaves room for vocabularies with longer runs.
MAX_TOKEN_CHARS = 128
# Letters of one word that one token can hold at most (long words split; 32 is generous).
MAX_WORD_CHARS_PER_TOKEN = 32
# Digits per token at most (SmolLM2 and Gemma: 1; Llama 3 and Qwen: up to 3).
MAX_DIGITS_PER_TOKEN = 3

_CHUNKS = re.compile(r"([^\W\d_]+)|(\d+)|([\W_]+)")


def least_tokens(text: str) -> int:
    """A lower bound on the tokens any of the usual judge tokenizers spends on ``text``."""
    count = 0
    for word, number, other in _CHUNKS.findall(text):
        if word:
            count += math.ceil(len(word) / MAX_WORD_CHARS_PER_TOKEN)
        elif number:
            count += math.ceil(len(number) / MAX_DIGITS_PER_TOKEN)
        else:
            # A token may take one character of a neighbouring run (" the", "?\n").
            count += max(0, len(other) - 2) // MAX_TOKEN_CHARS
    return count


def context_tokens(config: JudgeConfig) -> int | None:
    """The judge's context length in tokens, when the pool gives one."""
    value = getattr(config, "max_context_tokens", None)
    return int(value) if value is not None else None
