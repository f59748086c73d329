"""Reading a request's raw items into the engine's input, one item at a time.

Whatever a policy emitted, an item is either read into a rollout or rejected on its own
with the field at fault: a malformed item, text the judges cannot be sent (a lone UTF-16
surrogate, which has no UTF-8 encoding, or a NUL), never fails the batch.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from rewardsvc.core.errors import FieldProblem, Loc, field_problems
from rewardsvc.core.rollout import ItemIn, Rollout, ScoreOptions, render_completion, render_text
from rewardsvc.server.wire import Item, RewardOptions

MAX_ID_CHARS = 256


def _bad_char(text: str) -> str | None:
    """Why ``text`` cannot be graded, or None: a NUL, or a lone surrogate."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate {text[exc.start]!r} (not valid Unicode text)"
    return None


def unreadable_text(value: Any, loc: Loc = ()) -> FieldProblem | None:
    """The first string inside ``value`` (keys included) holding a NUL or a lone surrogate."""
    if isinstance(value, str):
        reason = _bad_char(value)
        return FieldProblem(loc, reason) if reason else None
    if isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(key, str) and (reason := _bad_char(key)):
                return FieldProblem(loc, f"has a key that {reason}")
            problem = unreadable_text(sub, (*loc, str(key)))
            if problem is not None:
                return problem
    elif isinstance(value, list):
        for n, sub in enumerate(value):
            problem = unreadable_text(sub, (*loc, n))
            if problem is not None:
                return problem
    return None


def echo_id(value: str) -> str:
    """An id safe to echo: itself, or with NULs and lone surrogates written as escapes."""
    if _bad_char(value) is None:
        return value[:MAX_ID_CHARS]
    escaped = value.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
    return escaped[:MAX_ID_CHARS]


def read_item(index: int, raw: Any) -> ItemIn:
    """One raw item of a request as the engine's input; a malformed one is rejected with
    its problems (paths such as ``items[3].completion``), never raising."""
    fallback_id = str(index)
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        fallback_id = echo_id(raw["id"])
    bad = unreadable_text(raw, ("items", index))
    if bad is not None:
        return ItemIn(fallback_id, None, str(bad))
    try:
        item = Item.model_validate(raw)
    except ValidationError as exc:
        problems = field_problems(exc.errors(), raw, prefix=("items", index))
        return ItemIn(fallback_id, None, "; ".join(str(p) for p in problems))
    rollout = Rollout(render_text(item.prompt), render_completion(item.completion), item.reference)
    return ItemIn(item.id if item.id is not None else fallback_id, rollout)


def score_options(options: RewardOptions) -> ScoreOptions:
    """The engine's form of a request's options."""
    return ScoreOptions(
        judges=tuple(options.judges) if options.judges is not None else None,
        rule=options.rule,
        min_judges=options.min_judges,
        use_cache=options.use_cache,
    )
