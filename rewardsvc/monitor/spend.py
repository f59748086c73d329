"""What each run has cost, and the budgets that stop it.

Every batch the monitor observes adds its ``usage.cost`` (the judges' prices times the
tokens their replies counted; cache hits cost nothing) to its run: the run name of the
request, over every rubric it used (a trainer's job is one run). A run may have a budget
(``Spend.budget_of``, from the settings): once its cost reaches it, :meth:`Spend.check`
refuses new scoring for the run with :class:`BudgetExceeded`, a typed refusal (kind
``budget_exceeded``, which the server answers 402), and the ``budget_exceeded`` alert fires once (to
the reward log and the webhook, like the monitor's own alerts). Work already admitted
finishes, so a run may end a little past its cap: by what was in flight when it crossed.

Shared across replicas: with a Redis link (:meth:`Spend.share`), every batch's cost is
added to the run's counter there (``INCRBYFLOAT``, atomic), whose reply is the cost of the
run over every replica; the replica whose addition crosses the cap, and only that one, fires
the alert. A replica checks the latest total it has seen, so each other replica may score one
more batch of a run before it learns the cap was passed. While Redis is unreachable, costs
are counted locally and added to the shared counter when it is back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from rewardsvc.core.errors import ErrorKind, Refused
from rewardsvc.core.results import Usage
from rewardsvc.monitor.alerts import AlertEvent
from rewardsvc.storage.redis_link import RedisLink

log = logging.getLogger(__name__)

BUDGET_ALERT = "budget_exceeded"
DEFAULT_RUN = "default"


class BudgetExceeded(Refused):
    """New scoring of a run whose cost reached its budget (kind ``budget_exceeded``)."""

    def __init__(self, run: str, cost: float, budget: float):
        message = (
            f"run {run!r} has cost {cost:.6g} of its budget of {budget:g}: new scoring for it "
            "is refused (raise the run's budget, or continue under a new run name)"
        )
        super().__init__(message, kind=ErrorKind.BUDGET_EXCEEDED, field="run")
        self.run, self.cost, self.budget = run, cost, budget


@dataclass
class RunCost:
    """One run's spending: its cost (over every replica when shared), calls and rewards
    counted here, and its budget."""

    run: str
    cost: float = 0.0
    judge_calls: int = 0
    rewards: int = 0
    budget: float | None = None
    exceeded_since: float | None = None
    last_seen: float = 0.0
    unsent: float = 0.0
    """Cost not yet added to the shared counter (Redis away)."""

    @property
    def cost_per_reward(self) -> float | None:
        """The mean cost of one reward of this run (counted here)."""
        return self.cost / self.rewards if self.rewards else None

    @property
    def exceeded(self) -> bool:
        """True once the run's cost reached its budget."""
        return self.budget is not None and self.cost >= self.budget


class Spend:
    """Cost per run and budgets (see the module doc); at most ``max_runs`` runs are kept,
    the least recently seen dropped first (a dropped run's shared counter stays)."""

    def __init__(
        self,
        budget_of: Callable[[str], float | None] | None = None,
        on_event: Callable[[AlertEvent], None] | None = None,
        clock: Callable[[], float] = time.time,
        max_runs: int = 4096,
    ) -> None:
        self.budget_of = budget_of or (lambda _run: None)
        self.on_event = on_event
        self.clock = clock
        self.max_runs = max_runs
        self._runs: OrderedDict[str, RunCost] = OrderedDict()
        self._link: RedisLink | None = None
        self._ttl_s = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def share(self, link: RedisLink, ttl_s: int) -> None:
        """Keep each run's cost in Redis through ``link``, expiring ``ttl_s`` after its last
        batch."""
        self._link, self._ttl_s = link, ttl_s

    def _run(self, run: str | None) -> RunCost:
        name = run or DEFAULT_RUN
        entry = self._runs.get(name)
        if entry is None:
            entry = self._runs[name] = RunCost(name)
            while len(self._runs) > self.max_runs:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(name)
        entry.budget = self.budget_of(name)
        return entry

    def check(self, run: str | None) -> None:
        """Raise :class:`BudgetExceeded` when ``run``'s cost has reached its budget."""
        name = run or DEFAULT_RUN
        entry = self._runs.get(name)
        budget = self.budget_of(name)
        if entry is not None and budget is not None and entry.cost >= budget:
            raise BudgetExceeded(name, entry.cost, budget)

    def add(self, rubric: str, run: str | None, usage: Usage, rewards: int) -> None:
        """Count a batch of ``rewards`` items under ``run`` (never raises)."""
        entry = self._run(run)
        entry.last_seen = self.clock()
        entry.judge_calls += usage.judge_calls
        entry.rewards += rewards
        cost = usage.cost or 0.0
        if cost <= 0:
            return
        if self._link is None:
            entry.cost += cost
            self._crossed(rubric, entry, entry.cost - cost, entry.cost)
            return
        entry.unsent += cost
        self._spawn(self._send(rubric, entry))

    def _crossed(self, rubric: str, entry: RunCost, before: float, after: float) -> None:
        """Fire the budget alert when the run's cost went from under its budget to it."""
        budget = entry.budget
        if entry.exceeded and entry.exceeded_since is None:
            entry.exceeded_since = self.clock()
        if budget is None or not before < budget <= after:
            return
        now = self.clock()
        event = AlertEvent(rubric, entry.run, BUDGET_ALERT, "firing", now, 0, after, budget)
        log.warning("run %r reached its budget: %.6g of %g", entry.run, entry.cost, budget)
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:
                log.exception("budget alert sink failed for run %r", entry.run)

    async def _send(self, rubric: str, entry: RunCost) -> None:
        """Add the run's unsent cost to its shared counter; the reply is the run's total."""
        link, delta = self._link, entry.unsent
        if link is None or delta <= 0:
            return
        key = f"{link.prefix}:spend:{entry.run}".encode()
        entry.unsent = 0.0
        replies = await link.execute(
            lambda pipe: pipe.incrbyfloat(key, delta).expire(key, self._ttl_s)
        )
        if replies is None:
            # Redis away: counted here meanwhile, sent with the run's next batch.
            entry.unsent += delta
            entry.cost += delta
            self._crossed(rubric, entry, entry.cost - delta, entry.cost)
            return
        total = float(replies[0])
        entry.cost = max(entry.cost, total)
        # The replica whose addition crossed the cap fires; the others see it as passed.
        self._crossed(rubric, entry, total - delta, total)

    def _spawn(self, job: Coroutine[Any, Any, None]) -> None:
        try:
            task = asyncio.get_running_loop().create_task(job)
        except RuntimeError:
            job.close()
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait until every cost counted so far has reached the shared counter."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def runs(self) -> list[RunCost]:
        """The runs kept, most recently seen first."""
        return list(reversed(self._runs.values()))
