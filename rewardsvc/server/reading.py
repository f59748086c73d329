"""Reading a request's items, groups and pairs: after the cheap limits, off the event loop.

Reading is CPU work in proportion to the body: every item validated, every distinct set of
item criteria made into a rubric and validated, every dataset text scanned by the
detectors (the application's plan counts the cost after). A body near ``max_body_bytes``
takes seconds of it, so the limits that need no reading come first (how many items,
groups' completions, pairs: 413 at once), then the reading runs in a worker thread
(``asyncio.to_thread``, which carries the request's API-key grant along), and the loop
keeps serving others. A batch of a few kilobytes without item criteria
(:func:`reads_quickly`: most trainer batches) is read on the loop: that takes tens of
microseconds, less than the hand-off to a thread and back.

Item criteria are dataset text and make a rubric the request wrote: :func:`item_rubrics`
bounds them (an inline rubric's ``max_rubric_bytes``, as JSON, per item; ``max_criteria``)
and asks the request's key for the right an inline rubric of the same content needs,
``inline:<rubric id>@<version>`` (``inline:*`` or ``inline:<rubric id>@*`` in the key's
``rubrics``). Every route that takes item criteria reads them through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from rewardsvc.application.item_rubrics import ItemRubrics
from rewardsvc.application.items import read_group, read_item
from rewardsvc.application.targets import Target
from rewardsvc.core.monitor_spec import inline_rubric_name
from rewardsvc.core.rollout import ItemIn
from rewardsvc.core.rubric import Rubric
from rewardsvc.media.collect import MediaReader
from rewardsvc.media.rules import MediaRules
from rewardsvc.protocol.rewards import CriteriaOptions, RewardOptions
from rewardsvc.scoring.group_plan import GroupIn
from rewardsvc.server import access
from rewardsvc.server.admission import check_rubric_size
from rewardsvc.server.guards import check_batch
from rewardsvc.settings import Settings

PAIR_PARTS = ("a", "b")
INLINE_READ_CHARS = 16_384
"""The most text (characters of strings and keys, 8 per other value) a batch read on the
event loop holds: its reading takes well under a millisecond."""
"""The completions of a pair (``/v1/preferences``)."""


def permit_item_rubric(made: Rubric) -> None:
    """403 unless the request's key may use ``made``, a rubric made with an item's own
    criteria, as an inline rubric (its name ``inline:<id>@<version>``)."""
    if access.restricted():  # an unrestricted key may: its version is not hashed for this
        access.check_rubric(inline_rubric_name(made.id, made.version()))


def item_rubrics(
    settings: Settings, template: Rubric | None, options: CriteriaOptions
) -> ItemRubrics:
    """How a request's items (groups, pairs) make their own rubrics from ``template``:
    within the limits of criteria per rubric and of an inline rubric's size, with the
    key's right to an inline rubric."""
    return ItemRubrics(
        template,
        options.criteria_mode,
        options.criteria_format,
        settings.max_criteria,
        settings.max_rubric_bytes,
        permit_item_rubric,
    )


def media_reader(settings: Settings, domains: Sequence[str] = ()) -> MediaReader:
    """The reader of one request's images: the bounds of ``settings``, and the judge
    pool's ``domains`` whose URLs are passed on untouched."""
    rules = MediaRules(
        max_bytes=settings.max_image_bytes,
        max_per_item=settings.max_images_per_item,
        max_pixels=settings.max_image_pixels,
        max_side=settings.max_image_side,
        domains=frozenset(domains),
    )
    return MediaReader(rules)


def read_items(
    settings: Settings,
    target: Target,
    items: Sequence[Any],
    options: RewardOptions,
    domains: Sequence[str] = (),
) -> list[ItemIn]:
    """The items read (each with its own rubric where it brings criteria, its images
    checked, URLs allowed of the pool's ``domains`` only); 413 when a rubric they are
    judged with exceeds the criteria or judges per rubric. CPU work: run it in a worker
    thread."""
    for rubric in target.judged_rubrics():
        check_rubric_size(settings, rubric)
    rubrics = item_rubrics(settings, target.template, options)
    media = media_reader(settings, domains)
    inputs = [read_item(i, raw, rubrics, media) for i, raw in enumerate(items)]
    own = {id(i.rubric): i.rubric for i in inputs if i.rubric is not None}
    for rubric in own.values():
        check_rubric_size(settings, rubric)
    return inputs


def reads_quickly(items: Sequence[Any], budget: int = INLINE_READ_CHARS) -> bool:
    """Whether raw ``items`` are read in less time than a hand-off to a worker thread: none
    brings criteria of its own (each set becomes a rubric, validated), and together they
    hold at most ``budget`` characters of text and keys (8 for any other value) and no
    ``data:`` URL (an image, decoded as it is read), counted until the budget is spent
    (measuring a large body costs no more than a small one)."""
    if any(isinstance(i, dict) and i.get("criteria") is not None for i in items):
        return False
    left = budget
    stack: list[Any] = list(items)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if value[:5].lower() == "data:":
                return False  # an image: its decode may take milliseconds
            left -= len(value)
        elif isinstance(value, dict):
            left -= 8 + sum(len(k) for k in value)
            stack.extend(value.values())
        elif isinstance(value, list):
            left -= 8
            stack.extend(value)
        else:
            left -= 8
        if left < 0:
            return False
    return True


def completions_in(raw: Sequence[Any], parts: Sequence[str]) -> int:
    """How many completions raw groups (``completions`` lists) or pairs hold, counted
    before anything is read (a group that is not an object counts none)."""
    if tuple(parts) == PAIR_PARTS:
        return len(PAIR_PARTS) * len(raw)
    counts = (g.get("completions") if isinstance(g, dict) else None for g in raw)
    return sum(len(c) for c in counts if isinstance(c, list))


async def read_groups(
    settings: Settings,
    rubric: Rubric,
    options: CriteriaOptions,
    raw: Sequence[Any],
    field: str = "groups",
    parts: Sequence[str] = ("completions",),
    domains: Sequence[str] = (),
) -> list[GroupIn]:
    """Each raw group (or pair: ``parts`` ``a``, ``b``) read on its own, with its own
    criteria where it brings them, its images checked (URLs allowed of ``domains`` only):
    413 naming ``field`` first when they hold more than ``max_items`` completions, then
    read in a worker thread."""
    check_batch(completions_in(raw, parts), settings.max_items, field)
    rubrics = item_rubrics(settings, rubric, options)
    media = media_reader(settings, domains)

    def read() -> list[GroupIn]:
        return [read_group(i, one, field, parts, rubrics, media) for i, one in enumerate(raw)]

    return await asyncio.to_thread(read)
