"""The running service: the objects every route shares, and the edge between the routes
and the application room.

``start_service`` composes the application (``rewardsvc.application.root``) and adds the
server's own parts: the in-flight limiter and held-work ledger, readiness probe, metrics
observer, monitor metrics and reward log. :class:`Service` (a :class:`~.gate.Gate`) has
each request planned once by the application (:meth:`Service.plan`: items per batch,
criteria and judges per rubric, then the plan's calls and prompt bytes and explain's
output checked), admits that plan's cost, runs the same plan and writes the reward log.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends

from rewardsvc.application.monitoring import alert_logger
from rewardsvc.application.root import Application, compose
from rewardsvc.application.targets import (
    INLINE_LABEL,
    RequestPlan,
    RubricTarget,
    Target,
    plan_request,
    resolve_target,
    under_rubric,
)
from rewardsvc.core.errors import ErrorKind, RequestError
from rewardsvc.core.monitor_spec import inline_rubric_name
from rewardsvc.core.recipe import Recipe
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import Judge
from rewardsvc.library.registry import Entry, Registry, Served
from rewardsvc.library.yamlfile import InvalidFile, validate_document
from rewardsvc.monitor import Monitor
from rewardsvc.protocol.rewards import RewardOptions, RewardResponse
from rewardsvc.scoring.engine import Engine
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import GroupBatch
from rewardsvc.scoring.planning import Cost
from rewardsvc.scoring.preferences import PreferenceBatch, PreferenceOptions
from rewardsvc.server import access, metrics, monitor_metrics, reading
from rewardsvc.server.admission import (
    check_explain,
    check_inline_size,
    check_rubric_size,
    check_work,
    explaining,
)
from rewardsvc.server.gate import Gate
from rewardsvc.server.guards import InflightLimiter, RetryAfter, check_batch
from rewardsvc.server.holding import HoldAwareObservers
from rewardsvc.server.ledger import Ledger
from rewardsvc.server.readiness import ReadinessProbe
from rewardsvc.server.reward_log import RewardLog
from rewardsvc.server.state import running_service
from rewardsvc.settings import Settings
from rewardsvc.storage.redis_link import RedisLink


@dataclass(kw_only=True)
class Service(Gate):
    """Everything the routes share: settings, rubric library, engine, limits (the
    :class:`~.gate.Gate`), reward log."""

    app: Application
    readiness: ReadinessProbe
    reward_log: RewardLog | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def expire_work(self) -> None:
        """Cut the judge work still running (a drain past its timeout)."""
        self.engine.expire()

    @property
    def registry(self) -> Registry:
        """The rubric library."""
        return self.app.registry

    @property
    def media_domains(self) -> list[str]:
        """The hosts whose image URLs items may carry (the pool's ``media_domains``)."""
        return self.registry.pool.media_domains

    @property
    def engine(self) -> Engine:
        """The scoring engine."""
        return self.app.engine

    @property
    def shared(self) -> RedisLink | None:
        """The Redis link shared with the other replicas, if configured."""
        return self.app.link

    @property
    def monitor(self) -> Monitor | None:
        """The reward monitor."""
        return self.app.monitor

    def judge_names(self) -> set[str]:
        """The judge names an inline rubric may refer to."""
        return set(self.engine.judges)

    def library_entry(self, rubric_id: str) -> Served:
        """A rubric, constitution, recipe or routing table of the library (one id space), or
        404 naming the field ``rubric`` (403 outside the request's key scope)."""
        access.check_rubric(rubric_id)
        found = self.registry.find(rubric_id)
        if found is not None:
            return found
        refused = [Path(f).name for f in self.registry.errors() if Path(f).stem == rubric_id]
        known = [s.document.id for s in self.registry.served()]
        if len(known) > 20:
            known = [*known[:20], "..."]
        if refused:
            message = (
                f"rubric {rubric_id!r} is not served: its file {refused[0]} does not validate "
                "(see GET /v1/rubrics)"
            )
        else:
            message = f"no rubric {rubric_id!r} in the library; known ids: {known}"
        raise RequestError(message, kind=ErrorKind.UNKNOWN_RUBRIC, field="rubric")

    def library_rubric(self, rubric_id: str) -> Rubric:
        """A rubric or constitution of the library, or 404 naming the field ``rubric`` (also
        for a recipe or routing table, where a route scores with a rubric only)."""
        found = self.library_entry(rubric_id)
        if isinstance(found, Entry):
            return found.rubric
        message = f"{rubric_id!r} is a {found.kind}: this route scores with a rubric only"
        raise RequestError(message, kind=ErrorKind.UNKNOWN_RUBRIC, field="rubric")

    def inline_rubric(self, rubric: Rubric) -> Rubric:
        """Re-validate an inline rubric against the judge pool (FastAPI validated its shape);
        413 when it is larger than max_rubric_bytes."""
        doc = rubric.model_dump(mode="json")
        check_inline_size(doc, self.settings.max_rubric_bytes)
        access.check_rubric(inline_rubric_name(rubric.id, rubric.version()))
        try:
            return validate_document(
                doc,
                Rubric,
                "<request>",
                self.registry.context,
            )
        except InvalidFile as exc:
            raise under_rubric([(p.path, p.message) for p in exc.problems]) from exc

    def target(self, value: Any) -> Target:
        """What a request's ``rubric`` names: a library rubric, recipe or routing table, or
        an inline rubric or recipe (404 or 422 naming the field; 403 outside the request's
        key scope; 413 for one larger than max_rubric_bytes)."""
        if isinstance(value, Recipe):
            doc = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
            check_inline_size(doc, self.settings.max_rubric_bytes)
        target = resolve_target(self.registry, value, self.library_rubric, self.inline_rubric)
        inline = target.metrics_label == INLINE_LABEL
        access.check_rubric(inline_rubric_name(target.id, target.version) if inline else target.id)
        return target

    def claim_run(self, run: str | None) -> None:
        """403 unless the request's key may write to ``run`` (see :mod:`.access`); 402
        ``budget_exceeded`` once the run's cost reached its budget."""
        monitor = self.monitor
        access.claim_run(run, lambda name: monitor is not None and bool(monitor.runs(run=name)))
        if monitor is not None:
            monitor.spend.check(run)

    async def plan(
        self,
        target: Target,
        items: Sequence[Any],
        options: RewardOptions,
        field_name: str = "items",
        run: str | None = None,
    ) -> RequestPlan:
        """The application's plan of scoring ``items`` with ``target``, or the refusal it
        meets before any judge is asked: the run (403, 402), the batch's size, each item
        read (a bad one rejected alone), the plan's judge calls and prompt bytes (413),
        explain's output (413)."""
        self.claim_run(run)
        check_batch(len(items), self.settings.max_items, field_name)
        read = functools.partial(
            reading.read_items, self.settings, target, items, options, self.media_domains
        )
        # After the cheap limits; off the loop unless it is quick.
        quick = reading.reads_quickly(items)
        inputs = read() if quick else await asyncio.to_thread(read)
        planned = await plan_request(target, self.engine, items, options, run, inputs=inputs)
        cost = planned.cost
        check_work(self.settings, cost.calls, cost.prompt_bytes, cost.sandbox_s)
        if options.explain:
            check_explain(self.settings, cost.shown_bytes)
        return planned

    async def score(
        self,
        rubric: Rubric | Target,
        items: Sequence[Any],
        options: RewardOptions,
        field_name: str = "items",
        metrics_label: str | None = None,
        run: str | None = None,
        planned: RequestPlan | None = None,
    ) -> RewardResponse:
        """Score a batch within the request's deadline and the work limits (items per
        batch, criteria and judges per rubric, items and judge calls in flight, explain's
        output held): the plan admitted is the plan run (``planned``, when the caller
        already planned these items with :meth:`plan`, e.g. to refuse at once; its work was
        checked there, once); log it when configured."""
        target = rubric if isinstance(rubric, Target) else RubricTarget.of(rubric, metrics_label)
        if planned is None:
            planned = await self.plan(target, items, options, field_name, run)
        cost = planned.cost
        deadline = time.monotonic() + self.settings.request_timeout_s
        with (
            explaining(self.ledger, options.explain, cost.shown_bytes),
            # Its work was checked once, when :meth:`plan` made it.
            self.admitted(len(items), cost.calls, cost.prompt_bytes, checked=True),
        ):
            response = await planned.run(deadline)
        if self.reward_log is not None:
            self.reward_log.write(response, list(items), run)
        return response

    @contextlib.contextmanager
    def _admitted_plan(self, items: int, cost: Cost, explain: bool) -> Iterator[None]:
        """A comparative plan admitted: its explain output bounded and held, its calls,
        prompt bytes and sandbox seconds checked (413) and held in flight."""
        if explain:
            check_explain(self.settings, cost.shown_bytes)
        with (
            explaining(self.ledger, explain, cost.shown_bytes),
            self.admitted(items, cost.calls, cost.prompt_bytes, cost.sandbox_s),
        ):
            yield

    async def score_groups(
        self,
        rubric: Rubric,
        groups: list[GroupIn],
        options: GroupOptions,
        *,
        run: str | None,
        raw: Sequence[Any] = (),
    ) -> GroupBatch:
        """Groups of completions scored relative to each other (``POST /v1/groups``),
        admitted by the calls and bytes of the questions planned and the sandbox seconds
        of their code graders (413 before anything runs), logged one line per
        group with ``run`` (``raw``, the request's groups, supply the metadata)."""
        self.claim_run(run)
        count = sum(len(g.rollouts) for g in groups)
        check_batch(count, self.settings.max_items, "groups")
        check_rubric_size(self.settings, rubric)
        comparer = self.engine.comparer()
        deadline = time.monotonic() + self.settings.request_timeout_s
        plan = await comparer.plan_groups(rubric, groups, options, deadline)
        with self._admitted_plan(count, plan.cost, options.explain):
            batch = await comparer.score_groups(
                rubric, groups, options, plan, deadline=deadline, run=run
            )
        if self.reward_log is not None:
            self.reward_log.write_groups(batch, raw, run)
        return batch

    async def judge_preferences(
        self,
        rubric: Rubric,
        pairs: list[GroupIn],
        options: PreferenceOptions,
        *,
        run: str | None,
        raw: Sequence[Any] = (),
    ) -> PreferenceBatch:
        """Pairs judged in both orders (``POST /v1/preferences``), admitted by the questions
        planned and their code graders' sandbox seconds, logged one line per pair with
        ``run`` (``raw``, the request's pairs, supply the metadata)."""
        self.claim_run(run)
        check_batch(2 * len(pairs), self.settings.max_items, "pairs")
        check_rubric_size(self.settings, rubric)
        comparer = self.engine.comparer()
        deadline = time.monotonic() + self.settings.request_timeout_s
        plan = await comparer.plan_preferences(rubric, pairs, options, deadline)
        with self._admitted_plan(2 * len(pairs), plan.cost, options.explain):
            batch = await comparer.judge_preferences(
                rubric, pairs, options, plan, deadline=deadline, run=run
            )
        if self.reward_log is not None:
            self.reward_log.write_preferences(batch, raw, run)
        return batch

    async def score_rubric(
        self,
        rubric_id: str,
        items: list[dict[str, Any]],
        options: RewardOptions,
        field_name: str = "items",
        *,
        run: str | None = None,
        planned: RequestPlan | None = None,
    ) -> RewardResponse:
        """Score against a library rubric (the compatibility routes' entry point);
        ``field_name`` names the items' field in the caller's protocol, for errors;
        ``planned``, the caller's plan of these items (see :meth:`score`)."""
        target = self.target(rubric_id)
        return await self.score(target, items, options, field_name, run=run, planned=planned)

    async def aclose(self) -> None:
        """Stop the background tasks, close the application (judges, graders, webhook,
        link) and the reward log."""
        self.stop.set()
        await self.app.aclose()
        if self.reward_log is not None:
            await asyncio.to_thread(self.reward_log.close)
        gc.unfreeze()


ServiceDep = Annotated[Service, Depends(running_service)]


async def start_service(
    settings: Settings,
    registry: Registry | None = None,
    judges: Mapping[str, Judge] | None = None,
) -> Service:
    """Compose the application (registry and judges unless given) with the server's
    metrics observer, reward log and limits, and start its background tasks."""
    reward_log = None
    if settings.reward_log:
        reward_log = RewardLog(
            settings.reward_log, settings.reward_log_max_bytes, settings.reward_log_backups
        )
    service: Service | None = None

    def admit(items: int, calls: int, prompt_bytes: int) -> AbstractContextManager[None]:
        # The monitor's probes (canaries, golden sets) take in-flight slots as requests do;
        # their runners start below, once the service exists.
        assert service is not None
        return service.admitted(items, calls, prompt_bytes)

    app = await compose(
        settings,
        registry,
        judges,
        observers=[metrics.PrometheusObserver()],
        wrap=HoldAwareObservers,
        on_event=None if reward_log is None else alert_logger(reward_log),
        admit=admit,
    )
    if app.monitor is not None:
        monitor_metrics.attach(app.monitor, settings.monitor_metric_runs)
    retry_after = RetryAfter(settings.retry_after_s)
    service = Service(
        settings=settings,
        app=app,
        limiter=InflightLimiter(settings.max_inflight, settings.max_inflight_calls, retry_after),
        ledger=Ledger(settings.max_held_bytes, settings.max_held_per_key, retry_after=retry_after),
        readiness=ReadinessProbe(app.engine.judges, app.sandbox),  # type: ignore[arg-type]  # Judges, as JudgeLike
        reward_log=reward_log,
    )
    app.start(service.stop, reload=settings.reload)
    # What start-up built (modules, library, judges: about 100k objects) lives as long as the
    # service: kept out of the collector's full passes, each of which stalled the event loop
    # for about 0.1 s scanning it all. ``aclose`` gives it back to the collector.
    gc.freeze()
    return service
