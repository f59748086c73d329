"""Scoring in this process for the red-team search and its replay, as the service scores
(through the application room, with no cache and no monitor)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rewardsvc.application.root import Application, compose_local, load_registry
from rewardsvc.application.targets import score_batch
from rewardsvc.core.rubric import Rubric
from rewardsvc.protocol.rewards import RewardOptions
from rewardsvc.settings import Settings


class EngineScorer:
    """A library rubric scored by an application of the pool's judges."""

    def __init__(self, rubric: Rubric, version: str, app: Application) -> None:
        self.rubric = rubric
        self.version = version
        self.app = app
        self.engine = app.engine

    @classmethod
    async def build(cls, rubric_id: str, settings: Settings) -> EngineScorer:
        """From a rubric id of the library of ``settings``, or the path of a rubric file
        (a rubric outside the library, such as one written for the items), scored by the
        judge pool of ``settings``."""
        registry = await asyncio.to_thread(load_registry, settings)
        path = Path(rubric_id)
        is_file = path.suffix in (".yaml", ".yml") and path.is_file()
        entry = await asyncio.to_thread(registry.load, path) if is_file else registry.get(rubric_id)
        return cls(entry.rubric, entry.version, await compose_local(settings, registry))

    def identities(self) -> dict[str, str]:
        """The cache identity of each judge the rubric uses."""
        names = [ref.name for ref in self.rubric.judges]
        return {n: self.app.judges[n].cache_identity() for n in names if n in self.app.judges}

    async def score(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One wire result per item, as ``POST /v1/rewards`` without the cache."""
        options = RewardOptions(use_cache=False)
        response = await score_batch(self.engine, self.rubric, items, options)
        results: list[dict[str, Any]] = response.model_dump(mode="json")["results"]
        return results

    async def aclose(self) -> None:
        """Close the application (judges and grader workers)."""
        await self.app.aclose()
