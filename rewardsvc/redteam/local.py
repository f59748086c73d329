"""Scoring in this process for the red-team search and its replay, as the service scores
(through the application room, with no cache and no monitor)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rewardsvc.application.root import compose_engine
from rewardsvc.application.targets import score_batch
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.library.registry import Registry, load_pool
from rewardsvc.protocol.rewards import RewardOptions


class EngineScorer:
    """A library rubric scored by an engine of the pool's judges."""

    def __init__(self, rubric: Rubric, version: str, judges: dict[str, Judge]) -> None:
        self.rubric = rubric
        self.version = version
        self.judges = judges
        self.engine = compose_engine(judges, cached=False)

    @classmethod
    def build(cls, rubric_id: str, rubrics_dir: Path, pool_path: Path) -> EngineScorer:
        """From a rubric id of the library at ``rubrics_dir``, or the path of a rubric file
        (a rubric outside the library, such as one written for the items), and a judge
        pool file."""
        pool = load_pool(pool_path)
        registry = Registry(rubrics_dir, pool)
        path = Path(rubric_id)
        is_file = path.suffix in (".yaml", ".yml") and path.is_file()
        entry = registry.load(path) if is_file else registry.get(rubric_id)
        return cls(entry.rubric, entry.version, build_judges(pool))

    def identities(self) -> dict[str, str]:
        """The cache identity of each judge the rubric uses."""
        names = [ref.name for ref in self.rubric.judges]
        return {n: self.judges[n].cache_identity() for n in names if n in self.judges}

    async def score(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One wire result per item, as ``POST /v1/rewards`` without the cache."""
        options = RewardOptions(use_cache=False)
        response = await score_batch(self.engine, self.rubric, items, options)
        results: list[dict[str, Any]] = response.model_dump(mode="json")["results"]
        return results

    async def aclose(self) -> None:
        """Close the judges and the grader workers."""
        await self.engine.aclose()
        if self.engine.graders is not None:
            await asyncio.to_thread(self.engine.graders.close)
