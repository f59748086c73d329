"""Reading a request's raw items (and groups or pairs) into the engine's input, one at a time.

Whatever a policy emitted, an item is either read into a rollout or rejected on its own
with the field at fault: a malformed item, text the judges cannot be sent (a lone UTF-16
surrogate, which has no UTF-8 encoding, or a NUL), never fails the batch.

Messages with tool calls, tool messages, non-text content parts and Responses-API items
are read into a :class:`~rewardsvc.core.trajectory.Trajectory`: every call keeps its id,
name and arguments, every result the id of its call, and a non-text part becomes a
placeholder (never dropped silently). Plain strings stay plain rollouts.

An image part (``image_url``, ``input_image``) is checked by the ``media`` room and becomes
an :class:`~rewardsvc.core.media.Image` of the rollout, numbered in the order the item
holds them (prompt, completion, then a reference given as messages), with its marker where
it stood in the text; an image refused rejects its item alone, naming the part
(``items[3].completion[1].content[0].image_url``).
Markers are removed from every text of the request first, so a policy cannot forge one.

The texts of an item that came from its dataset row (the prompt, the reference, its own
criteria) are scanned by the detectors as they are read: what they raise rides on the
rollout as ``dataset:<flag>`` (``Rollout.data_flags``). Reading is CPU work proportional to
the request: the server runs it in a worker thread, after its cheap limits.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from rewardsvc.core.errors import FieldProblem, Loc, field_problems, placed
from rewardsvc.core.media import MARK_CLOSE, MARK_OPEN, strip_markers
from rewardsvc.core.rollout import ItemIn, Rollout, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.trajectory import Trajectory
from rewardsvc.core.trajectory_events import Event, ToolCall, placeholder
from rewardsvc.media.collect import ItemImages, MediaReader
from rewardsvc.media.rules import IMAGE_PARTS
from rewardsvc.protocol.comparative import GroupItem, PairIn
from rewardsvc.protocol.items import Item, Message, ResponseItem, Text
from rewardsvc.protocol.rewards import RewardOptions
from rewardsvc.safety.detectors import dataset_flags
from rewardsvc.scoring.group_plan import GroupIn

from .item_rubrics import ItemRubrics

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


def _marked(value: Any) -> bool:
    """Whether any string inside ``value`` (keys included) holds a marker character."""
    stack = [value]
    while stack:
        top = stack.pop()
        if isinstance(top, str):
            if MARK_OPEN in top or MARK_CLOSE in top:
                return True
        elif isinstance(top, dict):
            stack.extend(top)
            stack.extend(top.values())
        elif isinstance(top, list):
            stack.extend(top)
    return False


def unmarked(value: Any) -> Any:
    """``value`` with the image markers' characters removed from every string (keys
    included); the same object when it holds none (a batch without them is not copied)."""
    return _stripped(value) if _marked(value) else value


def _stripped(value: Any) -> Any:
    if isinstance(value, str):
        return strip_markers(value)
    if isinstance(value, dict):
        return {_stripped(k): _stripped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    return value


def echo_id(value: str) -> str:
    """An id safe to echo: itself, or with NULs and lone surrogates written as escapes."""
    if _bad_char(value) is None:
        return value[:MAX_ID_CHARS]
    escaped = value.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
    return escaped[:MAX_ID_CHARS]


def read_item(
    index: int, raw: Any, rubrics: ItemRubrics | None = None, media: MediaReader | None = None
) -> ItemIn:
    """One raw item of a request as the engine's input; a malformed one is rejected with
    its problems (relative to the item, and written ``items[3].completion`` in its error),
    never raising (but for what ``rubrics.permit`` raises). An item with its own
    ``criteria`` gets its rubric from ``rubrics`` (without it, it is rejected); its images
    are checked by ``media`` (by default: data URLs within the default bounds)."""
    fallback_id = str(index)
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        fallback_id = echo_id(raw["id"])
    bad = unreadable_text(raw)
    if bad is not None:
        return rejected_item(fallback_id, index, [bad])
    raw = unmarked(raw)
    try:
        item = Item.model_validate(raw)
    except ValidationError as exc:
        return rejected_item(fallback_id, index, field_problems(exc.errors(), raw))
    item_id = item.id if item.id is not None else fallback_id
    images = (media or MediaReader()).item()
    rollout = rollout_of(item, images)
    if images.problems:
        return rejected_item(item_id, index, images.problems)
    own = _own_rubric(rubrics, item.criteria, ("criteria",))
    if isinstance(own, list):
        return rejected_item(item_id, index, own)
    return ItemIn(item_id, _flagged(rollout, rubrics, own), rubric=own)


def rejected_item(item_id: str, index: int, problems: Sequence[FieldProblem]) -> ItemIn:
    """The item at ``index`` rejected for ``problems`` (relative to the item)."""
    return ItemIn(item_id, None, placed(("items", index), problems), problems=tuple(problems))


def _flagged(rollout: Rollout, rubrics: ItemRubrics | None, own: Rubric | None) -> Rollout:
    """``rollout`` with the attack shapes of its dataset texts: its prompt, its reference
    and the criteria it brought (``own``'s, scanned once per rubric)."""
    criteria = rubrics.flags_of(own) if rubrics is not None else ()
    found = {*dataset_flags([rollout.prompt, rollout.reference]), *criteria}
    return replace(rollout, data_flags=tuple(sorted(found))) if found else rollout


def _own_rubric(
    rubrics: ItemRubrics | None, criteria: Any, loc: Loc
) -> Rubric | list[FieldProblem] | None:
    """The rubric of an item's (or group's) own criteria at ``loc``, why they make none,
    or None when it has none."""
    if criteria is None:
        return None
    return (rubrics or ItemRubrics(None)).rubric_for(criteria, loc)


TEXT_PARTS = ("text", "input_text", "output_text", "summary_text", "reasoning_text")


def _parts_text(
    content: str | list[dict[str, Any]] | None, images: ItemImages | None = None, loc: Loc = ()
) -> tuple[str, int]:
    """Content (at ``loc``) as text, and how many non-text parts became placeholders; an
    image part becomes the marker of an image of ``images`` (without them, a placeholder)."""
    if content is None:
        return "", 0
    if isinstance(content, str):
        return content, 0
    out: list[str] = []
    non_text = 0
    for n, part in enumerate(content):
        kind = str(part.get("type", ""))
        if kind in IMAGE_PARTS and images is not None:
            out.append(images.take(part, (*loc, n)))
        elif kind in TEXT_PARTS and isinstance(part.get("text"), str):
            out.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            out.append(part["refusal"])
        else:
            # Audio, files, unknown parts: the judge reads text only, and says so.
            out.append(placeholder(kind.removeprefix("input_").removesuffix("_url") or "part"))
            non_text += 1
    return "".join(out), non_text


def _arguments(value: str | dict[str, Any] | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _message_events(m: Message, images: ItemImages | None, loc: Loc) -> list[Event]:
    text, non_text = _parts_text(m.content, images, (*loc, "content"))
    events: list[Event] = []
    if m.reasoning_content:
        events.append(Event("reasoning", text=m.reasoning_content))
    if m.role == "tool":
        events.append(Event("result", "tool", text, call_id=m.tool_call_id, non_text=non_text))
        return events
    if text or non_text or not m.tool_calls:
        events.append(Event("message", m.role, text, non_text=non_text))
    for call in m.tool_calls or ():
        name, arguments = call.function.name, _arguments(call.function.arguments)
        events.append(Event("call", call=ToolCall(name, arguments, call.id)))
    return events


def _item_events(item: ResponseItem, images: ItemImages | None, loc: Loc) -> list[Event]:
    if item.type in ("function_call", "custom_tool_call", "mcp_call"):
        arguments = item.input if item.type == "custom_tool_call" else item.arguments
        # An MCP call holds its own output and has no call id: its item id ties the two.
        call_id = item.id if item.type == "mcp_call" else item.call_id
        call = ToolCall(item.name or "", _arguments(arguments), call_id)
        events = [Event("call", call=call)]
        if item.type == "mcp_call" and item.output is not None:
            text, non_text = _parts_text(item.output, images, (*loc, "output"))
            events.append(Event("result", "tool", text, call_id=call_id, non_text=non_text))
        return events
    if item.type in ("function_call_output", "custom_tool_call_output"):
        text, non_text = _parts_text(item.output, images, (*loc, "output"))
        return [Event("result", "tool", text, call_id=item.call_id, non_text=non_text)]
    if item.type == "reasoning":
        text, _ = _parts_text(item.summary or item.content)
        return [Event("reasoning", text=text)]
    # An item type the judge cannot read (a web search, a computer action, ...): in place.
    return [Event("message", "assistant", placeholder(item.type), non_text=1)]


def events_of(
    value: Text, role: str, images: ItemImages | None = None, loc: Loc = ()
) -> tuple[Event, ...]:
    """Wire messages or items (at ``loc``) as trajectory events; a string is one message
    of ``role``. Image parts become ``images``' markers (without them, placeholders)."""
    if isinstance(value, str):
        return (Event("message", role, value),)
    events: list[Event] = []
    for n, entry in enumerate(value):
        if isinstance(entry, Message):
            events.extend(_message_events(entry, images, (*loc, n)))
        else:
            events.extend(_item_events(entry, images, (*loc, n)))
    return tuple(events)


def trajectory_of(
    prompt: Text, completion: Text, images: ItemImages | None = None, at: Loc = ("completion",)
) -> Trajectory:
    """The trajectory of a prompt (the task) and a completion (the policy's events, at
    ``at`` in the item), their image parts collected in ``images``."""
    task = events_of(prompt, "user", images, ("prompt",))
    return Trajectory(task, events_of(completion, "assistant", images, at))


def reference_of(value: Text | None, images: ItemImages | None = None) -> str | None:
    """An item's reference as text: a string as it is; messages as their texts, one
    paragraph each (roles aside: a reference is an answer, not a conversation), their
    image parts collected in ``images`` after the prompt's and the completion's."""
    if value is None or isinstance(value, str):
        return value
    events = events_of(value, "assistant", images, ("reference",))
    return "\n\n".join(e.text for e in events if e.text)


def rollout_of(item: Item, images: ItemImages | None = None, at: Loc = ("completion",)) -> Rollout:
    """An item's rollout: plain text for two strings; otherwise its trajectory, with the
    prompt and completion rendered as plain text (as they always were for plain chat), its
    images (collected in ``images``, prompt, completion then reference; the completion is
    at ``at``) and its workspace ``files`` sorted by path."""
    files = tuple(sorted((item.files or {}).items()))
    trajectory = None
    prompt, completion = item.prompt, item.completion
    if not (isinstance(prompt, str) and isinstance(completion, str)):
        trajectory = trajectory_of(prompt, completion, images, at)
        prompt = prompt if isinstance(prompt, str) else trajectory.plain("task")
        completion = trajectory.plain("events")
    reference = reference_of(item.reference, images)
    found = tuple(images.images) if images is not None else ()
    return Rollout(prompt, completion, reference, trajectory, files=files, images=found)


def score_options(options: RewardOptions, run: str | None = None) -> ScoreOptions:
    """The engine's form of a request's options (and the run it belongs to)."""
    return ScoreOptions(
        judges=tuple(options.judges) if options.judges is not None else None,
        rule=options.rule,
        min_judges=options.min_judges,
        use_cache=options.use_cache,
        run=run,
    )


def read_group(
    index: int,
    raw: Any,
    field: str = "groups",
    parts: Sequence[str] = ("completions",),
    rubrics: ItemRubrics | None = None,
    media: MediaReader | None = None,
) -> GroupIn:
    """One raw group (``completions``) or pair (``parts`` ``a``, ``b``) as rollouts, or
    rejected naming its field; never raises. A group with its own ``criteria`` gets its
    rubric from ``rubrics`` (without it, it is rejected); its images are checked by
    ``media`` (an image refused rejects the group, naming its part)."""
    fallback = str(index)
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        fallback = echo_id(raw["id"])
    bad = unreadable_text(raw, (field, index))
    if bad is not None:
        return GroupIn(fallback, (), str(bad))
    raw = unmarked(raw)
    model = GroupItem if parts == ("completions",) else PairIn
    try:
        parsed = model.model_validate(raw)
    except ValidationError as exc:
        problems = field_problems(exc.errors(), raw, prefix=(field, index))
        return GroupIn(fallback, (), "; ".join(str(p) for p in problems))
    rollouts, refused = _group_rollouts(parsed, parts, media or MediaReader())
    group_id = parsed.id if parsed.id is not None else fallback
    if refused:
        return GroupIn(group_id, (), placed((field, index), refused))
    own = _own_rubric(rubrics, parsed.criteria, (field, index, "criteria"))
    if isinstance(own, list):
        return GroupIn(group_id, (), placed((), own))
    return GroupIn(group_id, tuple(_flagged(r, rubrics, own) for r in rollouts), rubric=own)


def _group_rollouts(
    parsed: GroupItem | PairIn, parts: Sequence[str], media: MediaReader
) -> tuple[list[Rollout], list[FieldProblem]]:
    """A group's (or pair's) rollouts, and the problems of the images they hold (an image
    of the prompt, which every rollout holds, named once)."""
    texts = parsed.completions if isinstance(parsed, GroupItem) else [parsed.a, parsed.b]
    workspaces: list[dict[str, str] | None] = [None] * len(texts)
    if isinstance(parsed, GroupItem) and parsed.files is not None:
        workspaces = list(parsed.files)  # one per completion (checked by GroupItem)
    rollouts: list[Rollout] = []
    refused: list[FieldProblem] = []
    for n, (text, files) in enumerate(zip(texts, workspaces, strict=True)):
        images = media.item()
        one = Item(prompt=parsed.prompt, completion=text, reference=parsed.reference, files=files)
        at = ("completions", n) if isinstance(parsed, GroupItem) else (parts[n],)
        rollouts.append(rollout_of(one, images, at))
        refused.extend(p for p in images.problems if p not in refused)
    return rollouts, refused
