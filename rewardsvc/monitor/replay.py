"""Replay a reward log into a monitor: the log's lines become the batches the service saw.

The reward log (written by the server's ``reward_log`` module) has one JSON line per
returned item, with its ``rubric``, ``version``, ``run``, ``reward``, ``status``, ``flags``,
``criteria`` (each criterion's mean score), ``item_version`` (an item scored with its own
criteria: their rubric's version) and ``group`` (``<request>:<prompt key>``: the
items of one prompt in one request share it), and one line per group of
``POST /v1/groups`` (``kind: group``, its ``rewards``). Event lines (alerts, versions)
and preference lines are not traffic and are skipped. Consecutive item lines of one
request are one batch, as the service observed them; a group line is a batch of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

from rewardsvc.core.results import (
    BatchResult,
    CriterionOutcome,
    ItemReward,
    JudgeOutcome,
    Status,
    Usage,
)
from rewardsvc.monitor.monitor import DEFAULT_RUN, Monitor

STATUS_OF: dict[str, Status] = {s: s for s in get_args(Status)}
LOG_JUDGE = "log"
"""The judge name the replayed items' criterion scores are filed under (the log keeps
their mean over the judges, not each judge's)."""


class BadLine(ValueError):
    """A log line that is not a reward line this reader understands (the message says why)."""


def item_of(line: Mapping[str, Any], index: int) -> ItemReward:
    """The engine result of one reward line."""
    status = status_of(line)
    reward = line.get("reward")
    if reward is not None and not isinstance(reward, int | float):
        raise BadLine(f"reward {reward!r} is not a number")
    criteria = line.get("criteria") or {}
    if not isinstance(criteria, dict) or not all(
        isinstance(v, int | float) for v in criteria.values()
    ):
        raise BadLine("criteria is not an object of numbers")
    group, own = line.get("group"), line.get("item_version")
    outcome = JudgeOutcome(
        None if reward is None else float(reward),
        criteria={str(c): CriterionOutcome(float(v)) for c, v in criteria.items()},
    )
    return ItemReward(
        str(line.get("id", index)),
        None if reward is None else float(reward),
        status,
        judges={LOG_JUDGE: outcome} if criteria else {},
        flags=[str(f) for f in line.get("flags") or []],
        group=None if group is None else str(group),
        version=own if isinstance(own, str) else None,
    )


def group_items(line: Mapping[str, Any]) -> list[ItemReward]:
    """The items of one ``kind: group`` line: one per completion, all in one group."""
    rewards = line.get("rewards")
    if not isinstance(rewards, list):
        raise BadLine("a group line without a rewards list")
    status = status_of(line)
    gid = str(line.get("id", ""))
    return [
        ItemReward(
            f"{gid}[{i}]",
            None if r is None else float(r),
            status if r is not None else "judge_error",
            group=gid,
        )
        for i, r in enumerate(rewards)
    ]


def status_of(line: Mapping[str, Any]) -> Status:
    """The line's status; :class:`BadLine` for anything else."""
    status = STATUS_OF.get(str(line.get("status")))
    if status is None:
        raise BadLine(f"status {line.get('status')!r} is not one of {sorted(STATUS_OF)}")
    return status


@dataclass
class Replay:
    """Feeds reward lines of one run to ``monitor``, a batch per request."""

    monitor: Monitor
    run: str
    rubric: str | None = None
    lines: int = 0
    _key: tuple[str, str, str] | None = None
    _items: list[ItemReward] = field(default_factory=list)

    def feed(self, line: Mapping[str, Any]) -> None:
        """Take one parsed line (lines of other runs and rubrics, and events, are skipped);
        raises :class:`BadLine` for a reward line it cannot read."""
        if "event" in line or line.get("kind") == "preference":
            return
        if (line.get("run") or DEFAULT_RUN) != self.run:
            return
        rubric, version = line.get("rubric"), line.get("version")
        if not isinstance(rubric, str) or not isinstance(version, str):
            raise BadLine("rubric and version must be strings")
        if self.rubric is not None and rubric != self.rubric:
            return
        self.lines += 1
        if line.get("kind") == "group":
            self.flush()
            self._observe(rubric, version, group_items(line))
            return
        group = line.get("group")
        request = str(group).split(":", 1)[0] if group is not None else None
        key = (rubric, version, request) if request is not None else None
        if key is None or key != self._key:
            self.flush()
        item = item_of(line, len(self._items))
        if key is None:
            self._observe(rubric, version, [item])
            return
        self._key = key
        self._items.append(item)

    def flush(self) -> None:
        """Observe the batch being gathered."""
        if self._key is not None and self._items:
            self._observe(self._key[0], self._key[1], self._items)
        self._key, self._items = None, []

    def _observe(self, rubric: str, version: str, items: list[ItemReward]) -> None:
        self.monitor.observe(
            rubric, version, self.run, BatchResult(rubric, version, items, Usage())
        )
