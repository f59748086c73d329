"""Monitor statistics shared by the replicas of a deployment through Redis.

Each process sends the monitored quantities of every item it scores to Redis, where a run
(rubric, run) keeps its rolling window, its first samples (the baseline), its sample count,
its alerts, a capped history and its events: bounded like the local state (trimmed lists)
and expiring ``ttl_s`` after the run was last seen (``short_ttl_s`` while the run has seen
less than a window). At most ``max_runs`` runs are listed, evicted in the local monitor's
order (short-lived runs first) and their keys deleted on eviction. The process whose
batch crosses an evaluation point evaluates the rules on the merged window with the run's pure
:class:`RunState`, and commits the alerts' new states in an optimistic transaction: each
transition is committed once, so one process, and only one, sends its event (reward log,
webhook). The dashboard, ``GET /v1/monitor`` and the Prometheus gauges show the merged
runs.

While Redis is unreachable (the link says so in ``/readyz`` and a metric) each process
monitors on its own and raises its own alerts; the batches it saw meanwhile are queued,
bounded, and sent when Redis is back, so that the merged statistics count them.

The merged runs are read back into the monitor's view by :class:`~.shared_view.SharedView`
(``shared_view``), which :class:`SharedMonitor` extends. The Redis I/O goes through a
link the server gives (``rewardsvc.storage.redis_link.RedisLink``,
with its deadlines and health): this room does not import the scoring room.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.monitor.alerts import AlertEvent
from rewardsvc.monitor.monitor import Monitor
from rewardsvc.monitor.runs import MAX_EVENTS, Mark, RunState, Sample, established, keep_rank
from rewardsvc.monitor.shared_state import (
    HISTORY_POINTS,
    Batch,
    Keys,
    decode_alert,
    decode_sample,
    encode_alert,
    encode_mark,
    encode_sample,
    evaluated,
    text,
)
from rewardsvc.monitor.shared_view import SharedView
from rewardsvc.storage.redis_link import RedisLink

log = logging.getLogger(__name__)

SHORT_LIVED_TTL_S = 3_600
"""Expiry of the keys of a run that has not yet seen a full window of samples: a churn of
one-off run names leaves nothing behind for long."""


class SharedMonitor(SharedView):
    """The :class:`Monitor`'s sink that merges its runs with other processes' in Redis
    (and, as a :class:`SharedView`, reads the merged runs back).

    ``pending_max`` bounds the batches queued while Redis is unreachable (the oldest are
    dropped first); ``ttl_s`` is how long a run's keys outlive its last batch, and
    ``short_ttl_s`` how long while the run has seen less than a window.
    """

    def __init__(
        self,
        monitor: Monitor,
        link: RedisLink,
        ttl_s: int = 7 * 86_400,
        pending_max: int = 1024,
        short_ttl_s: int = SHORT_LIVED_TTL_S,
    ):
        super().__init__(monitor, link)
        self.ttl_s = ttl_s
        self.short_ttl_s = min(short_ttl_s, ttl_s)
        self._pending: deque[Batch] = deque(maxlen=pending_max)
        self._tasks: set[asyncio.Task[None]] = set()
        self._flushing = asyncio.Lock()
        self._baselines: OrderedDict[tuple[str, str], tuple[str, list[Sample]]] = OrderedDict()

    @property
    def active(self) -> bool:
        """True while Redis is reachable: the monitor's view is then the merged one."""
        return self.link.healthy

    @property
    def pending(self) -> int:
        """Batches observed while Redis was unreachable, not yet sent."""
        return len(self._pending)

    def observe(
        self, rubric: str, run: str, version: str, samples: Sequence[Sample], now: float
    ) -> None:
        """Send a batch's samples to Redis off the scoring path (queued while unreachable)."""
        if not samples:
            return
        batch = Batch(rubric, run, version, tuple(encode_sample(s) for s in samples), now)
        if not self.link.healthy:
            self._pending.append(batch)
            return
        if not self._spawn(lambda: self._send(batch)):
            self._pending.append(batch)

    def resync(self) -> None:
        """Send the batches queued while Redis was away (called when it is back)."""
        if self._pending:
            self._spawn(self._flush)

    async def drain(self) -> None:
        """Wait for the sends in flight."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, job: Callable[[], Awaitable[None]]) -> bool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        task = loop.create_task(self._guarded(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    @staticmethod
    async def _guarded(job: Callable[[], Awaitable[None]]) -> None:
        try:
            await job()
        except Exception:
            # A monitor bug must not surface anywhere near a reward.
            log.exception("shared monitor: sending a batch failed")

    async def _send(self, batch: Batch) -> None:
        if self._pending:
            await self._flush()
        if not await self._push(batch):
            self._pending.append(batch)

    async def _flush(self) -> None:
        # In order, each batch removed once sent: a failure part-way keeps the rest.
        async with self._flushing:
            while self._pending and self.link.healthy:
                if not await self._push(self._pending[0]):
                    return
                self._pending.popleft()

    # ------------------------------------------------------------------ writes

    async def _push(self, batch: Batch) -> bool:
        """Append a batch to its run's shared state and evaluate the rules when the batch
        crosses an evaluation point; False when Redis could not take it."""
        config = self.monitor.config_for(batch.rubric)
        keys = Keys(self.link.prefix, batch.rubric, batch.run)
        n = len(batch.samples)
        member = json.dumps([batch.rubric, batch.run])
        # What this process last saw of the run (its merged view) chooses the keys' expiry
        # and rank, and whether the baseline takes these samples; corrected below when the
        # run's count says otherwise.
        prior = self.monitor.merged.get((batch.rubric, batch.run))
        guess = (prior.samples if prior is not None else 0) + n
        ttl = self._ttl(guess, config)

        def reads(p: Any) -> None:
            for key in keys.all():
                p.expire(key, ttl)
            p.hgetall(keys.meta)
            p.hgetall(keys.alerts)

        def append(p: Any) -> None:
            p.hget(keys.meta, "version")
            p.hsetnx(keys.meta, "version", batch.version)
            p.hsetnx(keys.meta, "started", repr(batch.now))
            p.hset(keys.meta, "last_seen", repr(batch.now))
            p.hincrby(keys.meta, "samples", n)
            p.zadd(self.runs_key, {member: keep_rank(guess, batch.now, config)})
            p.zcard(self.runs_key)
            p.expire(self.runs_key, self.ttl_s)
            p.rpush(keys.window, *batch.samples)
            p.ltrim(keys.window, -config.window, -1)
            if prior is None or prior.takes_baseline():
                p.rpush(keys.baseline, *batch.samples)
                p.ltrim(keys.baseline, 0, config.baseline - 1)
            reads(p)

        replies = await self.link.execute(append)
        if replies is None:
            return False
        total = int(replies[4])
        crowded = int(replies[6]) > self.monitor.max_runs
        misjudged = established(total, config) != established(guess, config)
        if (crowded or misjudged) and await self._settle(batch, config, keys, total):
            return True  # the run itself was evicted
        if replies[0] is not None and replies[0].decode() != batch.version:
            replies = await self._restart(batch, keys, total, reads)
            if replies is None:
                return True
        meta: dict[bytes, bytes] = replies[-2]
        crossed = total // config.eval_every - (total - n) // config.eval_every
        if not crossed:
            self.mirror(batch.rubric, batch.run, config, meta, replies[-1].values())
            return True
        # The samples are read only when an evaluation is due, as a local run computes
        # its signals only then.
        found = await self._samples((batch.rubric, batch.run), keys, config, meta)
        if found is not None:
            await self._evaluate(batch, config, keys, meta, *found, total, crossed)
        return True

    async def _restart(
        self, batch: Batch, keys: Keys, total: int, reads: Callable[[Any], None]
    ) -> list[Any] | None:
        """A new rubric version: a new window and baseline, as in a local run, then
        ``reads``; None when Redis is unreachable."""

        def restart(p: Any) -> None:
            p.delete(keys.window, keys.baseline)
            p.rpush(keys.window, *batch.samples)
            p.rpush(keys.baseline, *batch.samples)
            reset_at = total - len(batch.samples)
            p.hset(keys.meta, mapping={"version": batch.version, "reset_at": reset_at})
            mark = Mark(batch.now, total, "version", batch.version)
            p.rpush(keys.events, encode_mark(mark))
            p.ltrim(keys.events, -MAX_EVENTS, -1)
            reads(p)

        return await self.link.execute(restart)

    def _ttl(self, samples: int, config: MonitorConfig) -> int:
        return self.ttl_s if established(samples, config) else self.short_ttl_s

    async def _settle(self, batch: Batch, config: MonitorConfig, keys: Keys, total: int) -> bool:
        """Give the run the expiry and rank of its real count (this process may have guessed
        wrong), then evict the runs beyond ``max_runs`` from the list, lowest rank first,
        and delete their keys; True when the run itself was evicted."""
        member = json.dumps([batch.rubric, batch.run])

        def rank_and_evict(p: Any) -> None:
            for key in keys.all():
                p.expire(key, self._ttl(total, config))
            p.zadd(self.runs_key, {member: keep_rank(total, batch.now, config)}, xx=True)
            overflow = -(self.monitor.max_runs + 1)
            p.zrange(self.runs_key, 0, overflow)
            p.zremrangebyrank(self.runs_key, 0, overflow)

        replies = await self.link.execute(rank_and_evict)
        if replies is None:
            return False
        gone = [tuple(json.loads(m)) for m in replies[-2]]
        if gone:

            def delete(p: Any) -> None:
                for rubric, run in gone:
                    p.delete(*Keys(self.link.prefix, rubric, run).all())

            await self.link.execute(delete, transaction=False)
        for run in gone:
            self.monitor.merged.pop(run, None)
            self._baselines.pop(run, None)
        return (batch.rubric, batch.run) in gone

    async def _samples(
        self, run: tuple[str, str], keys: Keys, config: MonitorConfig, meta: dict[bytes, bytes]
    ) -> tuple[list[Sample], list[Sample]] | None:
        """The run's shared window and baseline samples (a complete baseline is read once
        per rubric version and kept); None when Redis is unreachable."""
        reset = f"{text(meta, 'version')}@{text(meta, 'reset_at', '0')}"
        kept = self._baselines.get(run)
        complete = kept is not None and kept[0] == reset

        def reads(p: Any) -> None:
            p.lrange(keys.window, 0, -1)
            if not complete:
                p.lrange(keys.baseline, 0, -1)

        replies = await self.link.execute(reads, transaction=False)
        if replies is None:
            return None
        window = [decode_sample(r) for r in replies[0]]
        if kept is not None and complete:
            return window, kept[1]
        baseline = [decode_sample(r) for r in replies[1]]
        if len(baseline) >= config.baseline:
            self._baselines[run] = (reset, baseline)
            self._baselines.move_to_end(run)
            while len(self._baselines) > self.monitor.max_runs:
                self._baselines.popitem(last=False)
        return window, baseline

    async def _evaluate(
        self,
        batch: Batch,
        config: MonitorConfig,
        keys: Keys,
        meta: dict[bytes, bytes],
        window: list[Sample],
        baseline: list[Sample],
        total: int,
        crossed: int,
    ) -> None:
        started = float(text(meta, "started", repr(batch.now)))
        since_reset = total - int(text(meta, "reset_at", "0"))
        outcome: list[tuple[RunState, list[AlertEvent]]] = []

        def step(current: dict[bytes, bytes]) -> Callable[[Any], object]:
            state = RunState(batch.rubric, batch.run, batch.version, config, started)
            alerts = [decode_alert(v) for v in current.values()]
            state.restore(total, since_reset, window, baseline, alerts)
            events = [e for _ in range(crossed) for e in state.evaluate(batch.now)]
            outcome[:] = [(state, events)]
            point = json.dumps({"s": total, "t": batch.now, "v": state.signals})
            marks = [encode_mark(Mark(e.time, e.sample, e.state, e.name)) for e in events]

            def writes(p: Any) -> None:
                p.delete(keys.alerts)
                if state.tracker.alerts:
                    encoded = {k: encode_alert(a) for k, a in state.tracker.alerts.items()}
                    p.hset(keys.alerts, mapping=encoded)
                p.hset(keys.meta, mapping=evaluated(state))
                p.rpush(keys.history, point)
                p.ltrim(keys.history, -HISTORY_POINTS, -1)
                if marks:
                    p.rpush(keys.events, *marks)
                    p.ltrim(keys.events, -MAX_EVENTS, -1)
                # Keys first written here expire with the run's others.
                for key in (keys.alerts, keys.history, keys.events):
                    p.expire(key, self._ttl(total, config))

            return writes

        if await self.link.update_hash(keys.alerts, step) and outcome:
            state, events = outcome[0]
            # Committed once across the replicas: this process alone tells the sinks.
            for event in events:
                self.monitor.emit(event)
            meta = {**meta, **{k.encode(): v.encode() for k, v in evaluated(state).items()}}
            self.mirror(batch.rubric, batch.run, config, meta, state.tracker.alerts.values())
