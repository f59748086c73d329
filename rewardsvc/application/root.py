"""The composition root: the one place the scoring machinery is built and closed.

:func:`compose` builds what the service runs on (registry, judges, graders with the
sandbox lanes of the code graders, cache,
calibration windows, Redis link, monitor with its observer, webhook and canaries) as an
:class:`Application`; :func:`load_registry` is the one construction of the rubric library
from settings. The server's lifespan and ``rewardsvc serve`` build theirs here, and so do
the CLI's ``score``/``probe``, ``rewardsvc eval`` and the red team, through
:func:`compose_local` (the same settings, without cache, Redis link or monitor), never by
a copy of this wiring.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.core.observe import NULL_OBSERVER, Observer, Observers
from rewardsvc.core.pool import JudgePool
from rewardsvc.graders.registry import Graders
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.library.registry import Registry, load_pool
from rewardsvc.monitor import AlertEvent, CanaryRunner, Monitor, load_canaries
from rewardsvc.monitor.golden_runner import GoldenRunner
from rewardsvc.monitor.golden_set import load_golden
from rewardsvc.sandbox.backend import Backend, NoBackend
from rewardsvc.sandbox.bubblewrap import BubblewrapBackend
from rewardsvc.sandbox.lanes import SandboxLanes
from rewardsvc.scoring.engine import Engine
from rewardsvc.settings import Settings
from rewardsvc.storage.cache import VerdictCache
from rewardsvc.storage.calibration import CalibrationWindows
from rewardsvc.storage.redis_link import RedisLink

from .monitoring import (
    GOLDEN_LABEL,
    Admit,
    MonitorObserver,
    Webhook,
    canary_scorer,
    fan_out,
    image_canaries,
    monitor_config,
    share_monitor,
)


@dataclass
class Application:
    """What scoring runs on; :meth:`aclose` closes everything it built. ``judges`` are the
    engine's, as judges (the engine sees them only as what it asks)."""

    registry: Registry
    engine: Engine
    judges: Mapping[str, Judge]
    link: RedisLink | None = None
    monitor: Monitor | None = None
    webhook: Webhook | None = None
    canaries: CanaryRunner | None = None
    golden: GoldenRunner | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def sandbox(self) -> Backend | None:
        """The sandbox backend the code graders run on (None without graders)."""
        graders = self.engine.graders
        return None if graders is None or graders.sandbox is None else graders.sandbox.backend

    def start(self, stop: asyncio.Event, reload: bool = False) -> None:
        """Start the canary and golden runners and (with ``reload``) the library watcher
        until ``stop``."""
        if self.canaries is not None:
            self.tasks.append(asyncio.create_task(self.canaries.run_forever(stop)))
        if self.golden is not None:
            self.tasks.append(asyncio.create_task(self.golden.run_forever(stop)))
        if reload:
            self.tasks.append(asyncio.create_task(self.registry.watch(stop)))

    async def aclose(self) -> None:
        """Stop the background tasks, close judges, graders, the webhook and the link."""
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.engine.aclose()
        if self.engine.graders is not None:
            await asyncio.to_thread(self.engine.graders.close)
        if self.monitor is not None and self.monitor.sink is not None:
            # Batches still on their way to the other replicas' view of the run.
            await self.monitor.sink.drain()
            await self.monitor.spend.drain()
        if self.webhook is not None:
            await self.webhook.aclose()
        if self.link is not None:
            await self.link.aclose()


def settings_with(
    rubrics: str | Path | None = None, judges: str | Path | None = None, **given: Any
) -> Settings:
    """The settings of the environment, with what a command line gave instead of their own
    (each value that is not None): the rubric library, the judge pool, and any other
    setting by its name (``port=8001``). The one place a command builds its settings."""
    paths: dict[str, Any] = {"rubrics_dir": rubrics, "judge_pool": judges, **given}
    return Settings(**{key: value for key, value in paths.items() if value is not None})


def load_registry(
    settings: Settings, pool: JudgePool | None = None, observer: Observer = NULL_OBSERVER
) -> Registry:
    """The rubric library of ``settings``, validated against ``pool`` (by default the judge
    pool file of ``settings``), its files bounded by ``settings.max_rubric_bytes``."""
    if pool is None:
        pool = load_pool(Path(settings.judge_pool))
    return Registry(Path(settings.rubrics_dir), pool, observer, settings.max_rubric_bytes)


def sandbox_backend(settings: Settings) -> Backend:
    """The sandbox backend ``settings`` name (nothing is run to build it: whether it works
    is its ``availability()``, asked by the lanes and by readiness)."""
    if settings.sandbox_backend == "bubblewrap":
        return BubblewrapBackend()
    return NoBackend("the sandbox is turned off (REWARDSVC_SANDBOX_BACKEND=none)")


def _engine(
    judges: Mapping[str, Judge],
    settings: Settings,
    cached: bool,
    link: RedisLink | None,
    observer: Observer,
) -> Engine:
    """The engine over ``judges``, with graders (and the sandbox lanes of the code graders)
    and calibration windows; with ``cached``,
    the verdict cache of ``settings`` (shared through ``link``)."""
    cache = None
    if cached:
        cache = VerdictCache(
            settings.cache_size,
            settings.cache_path,
            max_bytes=settings.cache_max_bytes,
            file_max_entries=settings.cache_file_max_entries,
            file_max_bytes=settings.cache_file_max_bytes,
            shared=link,
            observer=observer,
        )
    return Engine(
        judges,
        cache,
        settings.max_text_chars,
        observer=observer,
        windows=CalibrationWindows(shared=link),
        graders=Graders(
            settings.grader_workers,
            settings.grader_timeout_s,
            sandbox=SandboxLanes(
                sandbox_backend(settings), settings.sandbox_lanes, settings.sandbox_queue
            ),
        ),
    )


async def compose(
    settings: Settings,
    registry: Registry | None = None,
    judges: Mapping[str, Judge] | None = None,
    *,
    observers: Sequence[Observer] = (),
    wrap: Callable[[list[Observer]], Observer] = Observers,
    on_event: Callable[[AlertEvent], None] | None = None,
    cached: bool = True,
    monitored: bool = True,
    admit: Admit | None = None,
) -> Application:
    """Build the application: registry and judges unless given, the engine, and (with
    ``cached``) cache and Redis link, (with ``monitored``) monitor, webhook, canaries and
    golden sets, whose re-scores are admitted through ``admit`` (the server's gate).
    ``observers`` see every batch beside the monitor's, joined by ``wrap``; alert events
    go to ``on_event`` and the webhook."""
    webhook = None
    monitor = None
    watching = list(observers)
    if monitored:
        webhook = Webhook(settings.monitor_webhook) if settings.monitor_webhook else None

        def configured(rubric_id: str) -> MonitorConfig:
            # Read late: the registry is resolved below, before anything is scored.
            assert registry is not None
            return monitor_config(registry, rubric_id)

        monitor = Monitor(
            configured,
            max_runs=settings.monitor_max_runs,
            on_event=fan_out(on_event, webhook),
            budget_of=settings.run_budget_of,
        )
        watching.append(MonitorObserver(monitor))
    observer = wrap(watching)
    registry = await _registry(settings, registry, observer)
    judges = judges if judges is not None else build_judges(registry.pool, observer=observer)
    link = await _link(settings, observer) if cached else None
    if monitor is not None:
        share_monitor(monitor, link)
    engine = _engine(judges, settings, cached, link, observer)
    assert engine.graders is not None
    await asyncio.to_thread(engine.graders.warm)  # math-verify's import is not an item's deadline
    app = Application(registry, engine, judges, link, monitor, webhook)
    if monitor is not None:
        app.canaries = await _canaries(settings, registry, engine, monitor, admit)
        app.golden = await _golden(settings, registry, engine, judges, monitor, admit)
    return app


async def compose_local(
    settings: Settings, registry: Registry | None = None, judges: Mapping[str, Judge] | None = None
) -> Application:
    """The application for scoring in this process (the CLI's ``score`` and ``probe``,
    ``rewardsvc eval``, the red team): built from ``settings`` as the server's is (limits,
    graders, calibration windows, judges), without the server's parts: no verdict cache
    (a run measures the judges, and never shares the server's cache file), no Redis link,
    no monitor."""
    return await compose(settings, registry, judges, cached=False, monitored=False)


async def _registry(settings: Settings, registry: Registry | None, observer: Observer) -> Registry:
    """The given registry reporting to ``observer``, else the library of ``settings``."""
    if registry is not None:
        registry.observer = observer
        return registry
    return await asyncio.to_thread(load_registry, settings, None, observer)


async def _link(settings: Settings, observer: Observer) -> RedisLink | None:
    """The Redis link of ``settings`` (started), or None without ``redis_url``."""
    if settings.redis_url is None:
        return None
    link = RedisLink(
        settings.redis_url.get_secret_value(),
        password=settings.redis_password(),
        timeout_s=settings.redis_timeout_s,
        prefix=settings.redis_prefix,
        verdict_ttl_s=settings.redis_verdict_ttl_s,
        observer=observer,
    )
    await link.start()
    return link


async def _canaries(
    settings: Settings, registry: Registry, engine: Engine, monitor: Monitor, admit: Admit | None
) -> CanaryRunner | None:
    """The canary runner over the library's canaries, or None without canaries or budget."""
    canaries = await asyncio.to_thread(load_canaries, Path(settings.rubrics_dir) / "canaries")
    if not canaries or settings.canary_budget <= 0:
        return None
    return CanaryRunner(
        monitor,
        canaries,
        {e.rubric.id: [j.name for j in e.rubric.judges] for e in registry.entries()},
        canary_scorer(engine, lambda rubric_id: registry.get(rubric_id).rubric, admit=admit),
        settings.canary_interval_s,
        settings.canary_budget,
        images=await asyncio.to_thread(image_canaries, registry),
    )


async def _golden(
    settings: Settings,
    registry: Registry,
    engine: Engine,
    judges: Mapping[str, Judge],
    monitor: Monitor,
    admit: Admit | None,
) -> GoldenRunner | None:
    """The golden runner over the library's golden sets, or None without sets or budget."""
    sets = await asyncio.to_thread(load_golden, Path(settings.rubrics_dir) / "golden")
    if not sets or settings.golden_budget <= 0:
        return None

    async def identify(name: str) -> dict[str, str] | None:
        judge = judges.get(name)
        # A stand-in judge given by a caller (tests, benches) reports no identity.
        return await judge.served_identity() if isinstance(judge, Judge) else None

    return GoldenRunner(
        monitor,
        sets,
        {e.rubric.id: [j.name for j in e.rubric.judges] for e in registry.entries()},
        canary_scorer(
            engine, lambda rubric_id: registry.get(rubric_id).rubric, GOLDEN_LABEL, admit
        ),
        identify,
        settings.golden_interval_s,
        settings.golden_every_batches,
        settings.golden_budget,
    )
