"""The policy's text inside what trainers send: OpenRLHF's ``query`` (templated prompt and
response, decoded with special tokens kept) and slime's ``response``, and their labels as
reference text (or, for a label carrying ``criteria``, the sample's own rubric). Used by the
trainer compatibility routes (:mod:`.compat`).

The texts are untrusted and can be long: nothing here backtracks on them.
"""

from __future__ import annotations

import json
import re
from typing import Any

# End-of-turn / end-of-text / padding tokens that a decoded sequence keeps at its end when
# decoded with skip_special_tokens=False (OpenRLHF decodes its query that way).
SPECIAL_TOKENS = ("</s>", "<eos>", "<pad>", "<end_of_turn>", "<｜end▁of▁sentence｜>")
# ChatML/Llama-3/Phi style tokens: <|im_end|>, <|endoftext|>, <|eot_id|>, <|end|>, ...
_BAR_TOKEN = re.compile(r"<\|[A-Za-z0-9_.:\-]{1,40}\|>\Z")


def strip_trailing_special_tokens(text: str) -> str:
    """``text`` without the special tokens (and whitespace between them) at its end."""
    # A loop over suffixes rather than one regex with nested repetition: the text is
    # untrusted, and such a regex backtracks quadratically on long runs of whitespace.
    while True:
        text = text.rstrip()
        for token in SPECIAL_TOKENS:
            if text.endswith(token):
                text = text[: -len(token)]
                break
        else:
            match = _BAR_TOKEN.search(text, max(0, len(text) - 44))
            if match is None:
                return text
            text = text[: match.start()]


def _common_prefix_length(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


_PROMPT_TAIL = 32
"""Characters of the prompt's end searched for in a query whose prompt was cut."""


def _after_prompt_tail(query: str, prompt: str) -> int | None:
    """Where the response starts in a query holding only the end of ``prompt`` (OpenRLHF cuts
    over-long prompts from the left): the end of the longest suffix of the prompt that the
    query starts with."""
    tail = prompt[-_PROMPT_TAIL:]
    start = query.find(tail)
    while start != -1:
        end = start + len(tail)
        if prompt.endswith(query[:end]):
            return end
        start = query.find(tail, start + 1)
    return None


def response_from_query(query: str, prompt: str | None) -> str:
    """The policy's response inside an OpenRLHF ``query`` (templated prompt + response).

    ``query[len(prompt):]`` when the prompt is a prefix of the query; the text after the
    prompt's first occurrence when something (a BOS token) precedes it; the text after the
    prompt's end when OpenRLHF cut the prompt from the left; otherwise (the tokenizer round
    trip changed the prompt text) the text after the longest common prefix. Trailing
    end-of-text tokens are stripped.
    """
    if prompt and query.startswith(prompt):
        response = query[len(prompt) :]
    elif prompt and prompt in query:
        # The first occurrence: a policy that repeats its prompt must not hide what it
        # wrote before the repeat.
        response = query[query.index(prompt) + len(prompt) :]
    elif prompt and (cut := _after_prompt_tail(query, prompt)) is not None:
        response = query[cut:]
    elif prompt:
        response = query[_common_prefix_length(query, prompt) :]
    else:
        response = query
    return strip_trailing_special_tokens(response)


def label_text(label: Any) -> str | list[Any] | None:
    """A trainer's label as the item's reference: None for no label, chat messages (a list
    of objects with a ``role``, whose image parts are read as an item's) as they are, JSON
    text for another structured one."""
    # OpenRLHF sends "" when the dataset has no label column; that is "no reference".
    if label is None or label == "":
        return None
    if isinstance(label, str):
        return label
    if (
        isinstance(label, list)
        and label
        and all(isinstance(m, dict) and "role" in m for m in label)
    ):
        return label
    return json.dumps(label, ensure_ascii=False, sort_keys=True)


RUBRIC_LABEL_KEY = "criteria"
"""The key of a label that carries the sample's own rubric: ``{"criteria": [...],
"reference": "..."}``, as an object or as its JSON text (OpenRLHF's labels are strings)."""


def label_fields(label: Any) -> dict[str, Any]:
    """A trainer's label as item fields: ``reference``, and ``criteria`` when the label
    carries the sample's own rubric (then its ``reference``, if any, is the reference)."""
    value = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            value = json.loads(label)
        except ValueError:
            value = label  # a reference that merely starts with a brace
    if isinstance(value, dict) and RUBRIC_LABEL_KEY in value:
        return {"reference": label_text(value.get("reference")), "criteria": value["criteria"]}
    return {"reference": label_text(label)}
