"""Defusing untrusted text before it goes into a judge prompt.

Two dangers of graded text that a fence alone does not stop:

- **Control tokens.** vLLM tokenizes a rendered chat with special tokens
  recognized, so a string such as ``<|im_end|>`` in a completion becomes a real
  turn boundary and escapes any fence. ``Defuser`` breaks every such string with
  an invisible word joiner after its first character: the judge reads the same
  characters, the tokenizer no longer matches a special token. It covers a
  maintained list of template families (``CONTROL_FAMILIES``) plus, when the
  judge configuration passes them, the judge model's own special tokens
  (``special_tokens_from_tokenizer_config``).
- **Pathological fence runs.** The fence around graded text is one backtick
  longer than the longest run inside it, so 100,000 backticks would triple the
  prompt. ``collapse_backtick_runs`` replaces every run longer than
  ``FENCE_RUN_LIMIT`` with a short marker, which bounds the fence at
  ``FENCE_RUN_LIMIT + 1`` backticks while keeping it unclosable.

Patterns here use the standard ``re`` module for substitution speed; each is a
literal alternation or a bounded repetition, so every match attempt is bounded
and a pass is linear in the text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from rewardsvc.core.media import has_markers, image_marker, split_markers

WORD_JOINER = "\u2060"
FENCE_RUN_LIMIT = 16

# Chat-template control strings, by template family. Each pattern matches whole
# tokens; the defuser inserts a word joiner after a match's first character.
CONTROL_FAMILIES: dict[str, str] = {
    # ChatML (<|im_start|>), Llama 3 (<|start_header_id|>, <|eot_id|>), Phi (<|end|>),
    # harmony (<|channel|>), GPT-2 style (<|endoftext|>), DeepSeek (<｜User｜>, fullwidth bars).
    "pipe_tokens": r"<[|｜][^|｜<>\n]{1,48}[|｜]>",
    # Gemma (<start_of_turn>), SentencePiece (<s>, </s>), reasoning and tool tags, and
    # sentence boundaries spelled out (<beginning_of_sentence>).
    "angle_tokens": (
        r"</?(?:s|bos|eos|pad|unk|mask|sep|cls|think|tool_call|tool_response|start_of_turn|"
        r"end_of_turn|start_of_image|end_of_image|im_start|im_end|beginning_of_sentence|"
        r"begin_of_sentence|end_of_sentence)>"
    ),
    # T5 and UL2 sentinels (<extra_id_0> .. <extra_id_99>).
    "t5_sentinels": r"<extra_id_\d{1,4}>",
    # ByteDance Seed (<seed:bos>, <seed:eos>, <seed:think>, </seed:think>, ...).
    "seed_tokens": r"</?seed:[A-Za-z_]{1,32}>",
    # Cohere Command (<BOS_TOKEN>, <EOS_TOKEN>; its turn tokens are pipe tokens).
    "cohere_tokens": r"<(?:BOS|EOS|MASK)_TOKEN>",
    # Gemma's reserved and unused vocabulary slots (<reserved_106>, <unused0>).
    "reserved_tokens": r"<(?:reserved_|unused)\d{1,5}>",
    # Mistral ([INST], [SYSTEM_PROMPT], [TOOL_CALLS], ...).
    "bracket_tokens": (
        r"\[/?(?:INST|SYSTEM_PROMPT|TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS|TOOL_CONTENT|"
        r"THINK|IMG|IMG_BREAK|IMG_END|PREFIX|MIDDLE|SUFFIX|CALL_ID|ARGS)\]"
    ),
    # Llama 2 system block.
    "llama2_sys": r"<</?SYS>>",
}

# One pattern for all families; case-insensitive for the angle tokens as in the
# templates' own spelling variants (<EOS>, <Start_Of_Turn>) a tokenizer may hold.
CONTROL_PATTERN = "|".join(
    f"(?i:{p})" if name == "angle_tokens" else f"(?:{p})" for name, p in CONTROL_FAMILIES.items()
)
# What the ``control_tokens`` flag looks for: the same, less the Mistral tokens that are
# also ordinary command-line usage words ([ARGS], [PREFIX], [IMG]...). Those are still
# defused (harmless) but do not raise a flag.
CONTROL_FLAG_PATTERN = CONTROL_PATTERN.replace(
    CONTROL_FAMILIES["bracket_tokens"],
    r"\[/?(?:INST|SYSTEM_PROMPT|TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS|TOOL_CONTENT|THINK)\]",
)
_BACKTICK_RUN = re.compile(f"`{{{FENCE_RUN_LIMIT + 1},}}")

_TOKEN_KEYS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "pad_token",
    "sep_token",
    "cls_token",
    "mask_token",
)


def _content(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    content = value.get("content") if isinstance(value, Mapping) else None
    return content if isinstance(content, str) else None


def special_tokens_from_tokenizer_config(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The special tokens named in a Hugging Face ``tokenizer_config.json`` or ``tokenizer.json``.

    Reads ``added_tokens_decoder`` and ``added_tokens`` entries marked special,
    ``additional_special_tokens`` and the ``bos``/``eos``/... token fields. The result
    is meant for ``Defuser(extra_tokens=...)``.
    """
    found: set[str] = set()
    decoder = config.get("added_tokens_decoder")
    entries = list(decoder.values()) if isinstance(decoder, Mapping) else []
    added = config.get("added_tokens")
    if isinstance(added, list):
        entries += added
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("special"):
            token = _content(entry)
            if token:
                found.add(token)
    extra = config.get("additional_special_tokens")
    for entry in extra if isinstance(extra, list) else []:
        token = _content(entry)
        if token:
            found.add(token)
    for key in _TOKEN_KEYS:
        token = _content(config.get(key))
        if token:
            found.add(token)
    return tuple(sorted(found))


class Defuser:
    """Breaks chat control tokens in untrusted text: the maintained families plus extra tokens.

    ``extra_tokens`` are exact strings, typically a judge model's special tokens
    (``special_tokens_from_tokenizer_config``). Tokens of one character cannot be
    broken and are ignored; tokens the families already cover add nothing.

    Every occurrence is broken, overlapping ones too: in three newlines a token of two
    (``"\\n\\n"``) starts twice, and both get a word joiner, so none is left whole.
    """

    def __init__(self, extra_tokens: Iterable[str] = ()) -> None:
        families = re.compile(CONTROL_PATTERN)
        extra = sorted(
            {t for t in extra_tokens if len(t) >= 2 and not families.fullmatch(t)},
            key=lambda t: (-len(t), t),
        )
        self.extra_tokens: tuple[str, ...] = tuple(extra)
        pattern = CONTROL_PATTERN
        if extra:
            pattern = "|".join(re.escape(t) for t in extra) + "|" + pattern
        self._pattern = re.compile(pattern)
        # A match is one character at which a token starts; the scan resumes right after
        # it, so a token starting inside another (an overlap) is broken too.
        self._starts = re.compile(f"(?=(?:{pattern})).", re.DOTALL)

    @property
    def fingerprint(self) -> str:
        """Identifies the rendered text this defuser produces (for judge cache identity)."""
        if not self.extra_tokens:
            return "default"
        digest = hashlib.sha256("\x00".join(self.extra_tokens).encode("utf-8", "replace"))
        return "tokens:" + digest.hexdigest()[:16]

    def defuse(self, text: str) -> str:
        """``text`` with a word joiner after the first character of every control token."""
        return self._starts.sub(_break, text)

    def finds(self, text: str) -> bool:
        """Whether ``text`` holds a control token."""
        return self._pattern.search(text) is not None


def _break(match: re.Match[str]) -> str:
    return match.group(0) + WORD_JOINER


DEFAULT_DEFUSER = Defuser()


def defuse(text: str) -> str:
    """``text`` with the maintained families of control tokens broken (``Defuser``)."""
    return DEFAULT_DEFUSER.defuse(text)


def backtick_marker(length: int) -> str:
    """What a run of ``length`` backticks becomes in a judge prompt (no backtick in it)."""
    return f"[{length} backticks]"


def collapse_backtick_runs(text: str) -> str:
    """``text`` with every run of more than ``FENCE_RUN_LIMIT`` backticks replaced by a marker."""
    return _BACKTICK_RUN.sub(lambda m: backtick_marker(len(m.group(0))), text)


def sanitize(text: str, defuser: Defuser = DEFAULT_DEFUSER) -> str:
    """Untrusted text as it goes inside a judge prompt's fence: runs collapsed, tokens broken;
    an image marker (``rewardsvc.core.media``) kept whole, for the judge's prompt to show."""
    if has_markers(text):
        # Each run between markers alone: no defuser token can match into a marker.
        return "".join(
            image_marker(p) if isinstance(p, int) else defuser.defuse(collapse_backtick_runs(p))
            for p in split_markers(text)
        )
    return defuser.defuse(collapse_backtick_runs(text))
