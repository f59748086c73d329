"""The reward log: one JSON line per returned item, written off the event loop.

A line per result of ``POST /v1/rewards`` and of the trainer routes (``rubric``, ``version``,
``id``, ``reward``, ``status``, ``uncertainty``, ``flags``, ``metadata`` and ``run`` when
given; ``criteria``, each criterion's mean score over the judges, ``item_version`` for an item
scored with its own criteria, and ``group``, the same for the items of one prompt in one
request and null for an item without a prompt field, which ``rewardsvc rubrics health
--log`` reads); a line per group of ``POST /v1/groups``
(``kind: group``, ``rewards`` in completion order) and per pair of ``POST /v1/preferences``
(``kind: preference``, ``p_a_better``, ``label``); alert and version events have ``event`` instead.

Lines go through the standard logging machinery: a queue handler on the event loop's side
and a listener thread that writes them to a size-rotated file. Every line is ASCII JSON
(``\\ud800`` for a lone surrogate, whatever a policy or client put in the metadata), so no
line can fail to encode; a write that fails anyway (a full disk) is counted in
``rewardsvc_reward_log_errors_total`` and the writer goes on with the next line.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import queue
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewardsvc.core.rollout import prompt_key
from rewardsvc.protocol.rewards import RewardResponse, RewardResult, RubricRef
from rewardsvc.scoring.groups import GroupBatch, GroupReward
from rewardsvc.scoring.preferences import Preference, PreferenceBatch
from rewardsvc.server import holding, metrics

log = logging.getLogger(__name__)


def _criteria(result: RewardResult) -> dict[str, float]:
    """Each criterion's mean score over the judges that scored it."""
    scores: dict[str, list[float]] = {}
    for judge in result.judges.values():
        for cid, outcome in judge.criteria.items():
            if outcome.score is not None:
                scores.setdefault(cid, []).append(outcome.score)
    return {cid: sum(v) / len(v) for cid, v in scores.items()}


def _group(request: str, raw: Any) -> str | None:
    """The item's group key: its request and its prompt's key (None without a prompt)."""
    if not isinstance(raw, dict) or raw.get("prompt") is None:
        return None
    return f"{request}:{prompt_key(raw['prompt'])}"


class _CountingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating file handler that counts the lines it wrote and those it could not."""

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        metrics.REWARD_LOG_LINES.inc()

    def handleError(self, record: logging.LogRecord) -> None:
        metrics.REWARD_LOG_ERRORS.inc()
        log.warning("reward log: a line could not be written to %s", self.baseFilename)


class RewardLog:
    """Appends one JSON line per result to ``path``, rotated at ``max_bytes``."""

    def __init__(self, path: Path, max_bytes: int = 256 * 1024 * 1024, backups: int = 5):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = _CountingFileHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="ascii", delay=True
        )
        handler.setFormatter(logging.Formatter("%(message)s"))
        self._queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self._listener = logging.handlers.QueueListener(self._queue, handler)
        self._handler = handler
        self._listener.start()

    def _put(self, line: str) -> None:
        record = logging.LogRecord("rewardsvc.rewards", logging.INFO, "", 0, line, None, None)
        self._queue.put(record)

    def write(self, response: RewardResponse, items: Sequence[Any], run: str | None = None) -> None:
        """Queue one line per result of ``response`` (``items`` supply the metadata); kept
        back instead while a held request scores (``rewardsvc.server.holding``)."""
        pairs = list(zip(items, response.results, strict=False))
        tries = holding.current()
        if tries is not None:
            tries.keep_lines(self.write_results, response.rubric, pairs, run)
        else:
            self.write_results(response.rubric, pairs, run)

    def write_results(
        self,
        rubric: RubricRef,
        pairs: Sequence[tuple[Any, RewardResult]],
        run: str | None = None,
    ) -> None:
        """Queue one line per (raw item, result) of ``rubric``."""
        head = {"rubric": rubric.id, "version": rubric.version}
        request = uuid.uuid4().hex[:12]  # a prompt's items are one group within a request
        for raw, result in pairs:
            self._result(
                raw,
                run,
                head,
                result,
                {"reward": result.reward},
                criteria=_criteria(result),
                # An item scored with its own criteria: its rubric's version, by which the
                # monitor tells its criteria from the rubric's (rubrics health --log).
                **({"item_version": result.version} if result.version is not None else {}),
                group=_group(request, raw),
                # Only when the rubric or recipe declares objectives: lines stay as they were.
                **({"objectives": result.objectives} if result.objectives is not None else {}),
            )

    def write_groups(self, batch: GroupBatch, groups: Sequence[Any], run: str | None) -> None:
        """Queue one line per scored group of ``POST /v1/groups`` (``kind: group``, the
        rewards of its completions in order; ``groups`` supply the metadata)."""
        self._comparisons(
            "group",
            batch,
            groups,
            run,
            lambda r: {
                "method": batch.method,
                "rewards": r.rewards,
                "position_consistency": r.position_consistency,
            },
        )

    def write_preferences(
        self, batch: PreferenceBatch, pairs: Sequence[Any], run: str | None
    ) -> None:
        """Queue one line per judged pair of ``POST /v1/preferences`` (``kind:
        preference``; ``pairs`` supply the metadata)."""
        self._comparisons(
            "preference",
            batch,
            pairs,
            run,
            lambda r: {"p_a_better": r.p_a_better, "label": r.label, "consistent": r.consistent},
        )

    def _comparisons(
        self,
        kind: str,
        batch: GroupBatch | PreferenceBatch,
        raws: Sequence[Any],
        run: str | None,
        verdict: Callable[[Any], dict[str, Any]],
    ) -> None:
        results: Sequence[GroupReward | Preference] = batch.results
        head = {"kind": kind, "rubric": batch.rubric_id, "version": batch.version}
        for raw, result in zip(raws, results, strict=False):
            self._result(raw, run, head, result, verdict(result))

    def _result(
        self,
        raw: Any,
        run: str | None,
        head: dict[str, Any],
        result: RewardResult | GroupReward | Preference,
        verdict: dict[str, Any],
        **after: Any,
    ) -> None:
        """One result's line: ``head`` (what scored it), its id, ``verdict`` (its rewards),
        then the status, uncertainty and flags that every kind of result has, then
        ``after`` (what only some kinds have)."""
        self._line(
            raw,
            run,
            **head,
            id=result.id,
            **verdict,
            status=result.status,
            uncertainty=result.uncertainty,
            flags=result.flags,
            **after,
        )

    def _line(self, raw: Any, run: str | None, **fields: Any) -> None:
        metadata = raw.get("metadata") if isinstance(raw, dict) else None
        record = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            **fields,
            "metadata": metadata if isinstance(metadata, dict) else {},
        }
        if run is not None:
            record["run"] = run
        self._put(json.dumps(record, ensure_ascii=True, default=str))

    def event(self, kind: str, **fields: Any) -> None:
        """Queue one event line (an alert, a rubric version change) beside the rewards."""
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        self._put(
            json.dumps({"time": now, "event": kind, **fields}, ensure_ascii=True, default=str)
        )

    def close(self) -> None:
        """Write everything queued, then stop the writer thread."""
        self._listener.stop()
        self._handler.close()
