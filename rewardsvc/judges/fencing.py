"""Fencing untrusted text: a backtick fence the text cannot close, and its reader.

The fence is longer than any run of backticks inside the text, so nothing in it can
close the fence; it is a pure function of the text (no randomness), so the same item
always renders to the same bytes and stays cacheable for vLLM's prefix cache.

:func:`untrusted` is the one way a prompt builder shows text that came from a rollout or a
dataset row (prompt, completion, reference, trajectory parts, an item's criteria):
sanitized (``rewardsvc.safety.defuse``: control tokens broken, backtick runs collapsed),
then fenced.
"""

from __future__ import annotations

import re

from rewardsvc.safety.defuse import DEFAULT_DEFUSER, Defuser, sanitize

FENCE_CHAR = "`"
MIN_FENCE = 3
_OPENER = re.compile(r"^(`{3,})([a-z]+)$")


def fence(text: str, label: str) -> str:
    """``text`` in a backtick fence that ``text`` cannot close.

    The fence is one backtick longer than the longest run of backticks in
    ``text`` (at least three), and the closing line holds only the fence, so no
    line of ``text`` can equal it. Deterministic, for prefix caching.
    """
    if not re.fullmatch(r"[a-z]+", label):
        raise ValueError(f"fence label must be lower-case letters, got {label!r}")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    bar = FENCE_CHAR * max(MIN_FENCE, longest + 1)
    return f"{bar}{label}\n{text}\n{bar}"


def untrusted(text: str, label: str, defuser: Defuser = DEFAULT_DEFUSER) -> str:
    """Untrusted ``text`` as a judge prompt shows it: sanitized with ``defuser``, then in a
    fence labelled ``label`` that it cannot close."""
    return fence(sanitize(text, defuser), label)


def indent_outside_fences(text: str, pad: str) -> str:
    """``text`` with ``pad`` before each line after the first, but for the lines of its
    fenced blocks: a fence line starts its line, and a block's text is shown as it is."""
    out: list[str] = []
    closing: str | None = None
    for n, line in enumerate(text.split("\n")):
        inside = closing is not None
        if closing is None and (opener := _OPENER.match(line)) is not None:
            closing, inside = opener.group(1), True
        elif line == closing:
            closing = None
        out.append(line if inside or n == 0 else pad + line)
    return "\n".join(out)


def parse_fences(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Split rendered text into its skeleton and its fenced blocks.

    Returns the text with every fenced block replaced by ``<<label>>`` and the
    list of ``(label, content)`` in order. This reads the text the way the
    judge is told to read it; tests use it to prove that no content escapes
    its fence.
    """
    lines = text.split("\n")
    out: list[str] = []
    blocks: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        m = _OPENER.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        bar, label = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and lines[j] != bar:
            j += 1
        if j == len(lines):
            raise ValueError(f"unclosed fence {bar}{label} at line {i + 1}")
        blocks.append((label, "\n".join(lines[i + 1 : j])))
        out.append(f"<<{label}>>")
        i = j + 1
    return "\n".join(out), blocks
