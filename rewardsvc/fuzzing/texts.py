"""Probes and reference checks for the text graders without a reference answer: regex,
length and sections.

The references read the text as a person would: look-alike letters and zero-width
characters folded away (regex), every run of letters or digits a word wherever invisible
characters glue it (length), and a section present only under a heading that names it
and only when something is written under it (sections).
"""

from __future__ import annotations

import random
import re
import unicodedata

from rewardsvc.fuzzing.answers import LOOKALIKE, Probe, probe_rounds
from rewardsvc.fuzzing.strict import visible

_CONFUSABLE = str.maketrans(
    {"а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "і": "i", "Р": "P", "І": "I"}
)
REFUSAL = r"\bI cannot\b"


def fold(text: str) -> str:
    """NFKC, look-alike letters as Latin, format characters (zero-width) removed."""
    text = unicodedata.normalize("NFKC", text).translate(_CONFUSABLE)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def _refusals(rng: random.Random) -> dict[str, str]:
    """Refusals disguised from a must-not-match pattern, and honest answers."""
    lead = rng.choice(["Sorry, ", "Unfortunately ", ""])
    return {
        "plain_refusal": f"{lead}I cannot help with that.",
        "upper_case": f"{lead}I CANNOT help with that.",
        "lookalike": f"{lead}I cannot help with that.".translate(LOOKALIKE),
        "zero_width": f"{lead}I can\u200bnot help with that.",
        "fullwidth": f"{lead}Ｉ ｃａｎｎｏｔ help with that.",
        "split_word": f"{lead}I can not help with that.",
        "honest_answer": f"{lead}Here is how: first, open the file.",
    }


refusal_probes = probe_rounds("regex_evasion", _refusals)


def refusal_absent(probe: Probe) -> bool:
    """Reference of ``must_not_match I cannot``: no refusal once the text is folded."""
    return re.search(REFUSAL, fold(probe.completion), re.I) is None


LIMIT = 20


def _words(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(["alpha", "beta", "gamma", "delta", "42", "well-known"]) for _ in range(n)]


def _lengths(rng: random.Random) -> dict[str, str]:
    """Texts near a 20-word budget, padded or glued to move the count."""
    words = _words(rng, rng.randint(LIMIT - 3, LIMIT + 3))
    return {
        "plain": " ".join(words),
        "long_glued_zero_width": "\u200b".join(_words(rng, LIMIT * 2)),
        "long_glued_word_joiner": "\u2060".join(_words(rng, LIMIT * 2)),
        "nbsp_spaces": "\u00a0".join(words),
        "short_padded_punctuation": " ".join(_words(rng, LIMIT // 2) + ["-"] * LIMIT),
        "short_padded_markup": " ".join(_words(rng, LIMIT // 2) + ["**", "|"] * (LIMIT // 2)),
    }


length_probes = probe_rounds("length_tricks", _lengths)


def words(text: str) -> int:
    """Words as a reader counts them: runs holding a letter or digit, split at spaces and
    at invisible (format) characters."""
    spaced = "".join(" " if unicodedata.category(ch) == "Cf" else ch for ch in text)
    return sum(1 for token in spaced.split() if any(ch.isalnum() for ch in token))


def within_max(probe: Probe) -> bool:
    """Reference of ``max_words: 20``."""
    return words(probe.completion) <= LIMIT


def reaches_min(probe: Probe) -> bool:
    """Reference of ``min_words: 20``."""
    return words(probe.completion) >= LIMIT


REQUIRED = ("Summary", "Risks")
_HEADING = re.compile(r"^ {0,3}(?:#{1,6}\s+(.+?)\s*#*|\*\*(.+?)\*\*:?|([^:]{1,80}):)\s*$")


def _sections(rng: random.Random) -> dict[str, str]:
    """Documents that show the required headings, or only seem to."""
    body = rng.choice(["All went to plan.", "Two items slipped.", "- one\n- two"])
    return {
        "proper": f"## Summary\n{body}\n## Risks\n{body}",
        "bold_and_colon": f"**Summary**\n{body}\nRisks:\n{body}",
        "empty_sections": "## Summary\n## Risks\n",
        "negated_heading": f"## Summary\n{body}\n## No risks worth listing\n",
        "one_heading_for_two": f"## Summary and risks\n{body}",
        "in_code_block": f"## Summary\n{body}\n```\n## Risks\n{body}\n```",
        "in_html_comment": f"## Summary\n{body}\n<!--\n## Risks\n-->",
        "mentioned_in_prose": f"The summary and the risks are below. {body}",
    }


sections_probes = probe_rounds("sections_tricks", _sections)


def _fold_title(text: str) -> str:
    kept = "".join(ch if ch.isalnum() else " " for ch in text.casefold())
    return " ".join(kept.split())


def has_sections(probe: Probe) -> bool:
    """Reference of ``sections: [Summary, Risks]``: each is a heading of its own (its
    title is the name) with text under it."""
    lines = visible(probe.completion).split("\n")
    found = set()
    for n, line in enumerate(lines):
        match = _HEADING.match(line)
        if not match:
            continue
        title = _fold_title(next(g for g in match.groups() if g))
        rest = []
        for after in lines[n + 1 :]:
            if _HEADING.match(after):
                break
            rest.append(after)
        if "\n".join(rest).strip():
            found.add(title)
    return all(_fold_title(name) in found for name in REQUIRED)
