"""Where ``label`` and ``eval`` get their verdicts: the service over HTTP (``--url``) or an
engine built in this process from the rubric library and judge pool.

Both answer in the wire shapes of ``POST /v1/rewards`` and ``POST /v1/preferences`` (as
JSON dicts), so the evaluation code reads one format whichever way it ran.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Protocol

import httpx

from rewardsvc.application.item_rubrics import ItemRubrics
from rewardsvc.application.items import read_group
from rewardsvc.application.root import Application, compose_local, load_registry
from rewardsvc.application.targets import score_batch
from rewardsvc.application.wire import preference_response
from rewardsvc.core.criteria_formats import CriteriaFormatName
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.yamlfile import parse_yaml, read_text, validate_document
from rewardsvc.protocol.rewards import RewardOptions
from rewardsvc.scoring.preferences import PreferenceOptions, judge_preferences
from rewardsvc.settings import Settings


class Scorer(Protocol):
    """Rewards and preferences for raw rows, in the service's wire shapes."""

    rubric: Rubric

    async def rewards(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        """``POST /v1/rewards`` for ``items``."""
        ...

    async def preferences(self, pairs: list[dict[str, Any]], margin: float) -> dict[str, Any]:
        """``POST /v1/preferences`` for ``pairs``."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def is_rubric_file(rubric: str) -> bool:
    """Whether ``--rubric`` names a YAML file (scored inline) rather than a library id."""
    return rubric.endswith((".yaml", ".yml")) and Path(rubric).is_file()


class LocalScorer:
    """An application in this process, composed from the service's settings as the
    server's is, without cache or monitor (graders included: a rubric's grader criteria
    are scored as they are served)."""

    def __init__(
        self,
        rubric: Rubric,
        app: Application,
        timeout_s: float | None = None,
        criteria_format: CriteriaFormatName = "rewardsvc",
    ) -> None:
        self.rubric = rubric
        self.app = app
        self.engine = app.engine
        self.timeout_s = timeout_s
        self.criteria_format: CriteriaFormatName = criteria_format

    @classmethod
    async def build(
        cls, rubric: str, settings: Settings, criteria_format: CriteriaFormatName = "rewardsvc"
    ) -> LocalScorer:
        """From a rubric id of the library of ``settings`` (or a rubric YAML file), scored
        by its judge pool; rows' own ``criteria`` are read in ``criteria_format``."""
        registry = await asyncio.to_thread(load_registry, settings)
        if is_rubric_file(rubric):
            path = Path(rubric)
            doc = parse_yaml(await asyncio.to_thread(read_text, path), str(path))
            found = validate_document(doc, Rubric, str(path), registry.context)
        else:
            found = registry.get(rubric).rubric
        app = await compose_local(settings, registry)
        return cls(found, app, criteria_format=criteria_format)

    def _deadline(self) -> float | None:
        return None if self.timeout_s is None else time.monotonic() + self.timeout_s

    async def rewards(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        """Score items as ``POST /v1/rewards`` would, without the cache."""
        options = RewardOptions(use_cache=False, criteria_format=self.criteria_format)
        response = await score_batch(
            self.engine, self.rubric, items, options, None, self._deadline()
        )
        return response.model_dump(mode="json")

    async def preferences(self, pairs: list[dict[str, Any]], margin: float) -> dict[str, Any]:
        """Judge pairs as ``POST /v1/preferences`` would."""
        rubrics = ItemRubrics(self.rubric, format=self.criteria_format)
        read = [read_group(i, raw, "pairs", ("a", "b"), rubrics) for i, raw in enumerate(pairs)]
        batch = await judge_preferences(
            self.app.judges,
            self.rubric,
            read,
            PreferenceOptions(margin=margin),
            deadline=self._deadline(),
        )
        return preference_response(batch).model_dump(mode="json")

    async def aclose(self) -> None:
        """Close the application (judges and grader workers)."""
        await self.app.aclose()


class RemoteScorer:
    """A running service at ``url`` (its API key, if any, in ``api_key``)."""

    def __init__(
        self,
        url: str,
        rubric: str,
        api_key: str | None = None,
        timeout_s: float = 600,
        criteria_format: CriteriaFormatName = "rewardsvc",
    ):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.AsyncClient(
            base_url=url.rstrip("/"), headers=headers, timeout=timeout_s
        )
        self.rubric_arg = rubric
        self.criteria_format = criteria_format
        self.rubric: Rubric
        self._inline: dict[str, Any] | None = None

    async def load(self) -> RemoteScorer:
        """Fetch the rubric (or read the YAML file) so that rules can be recomputed."""
        if is_rubric_file(self.rubric_arg):
            path = Path(self.rubric_arg)
            self.rubric = validate_document(
                parse_yaml(read_text(path), str(path)), Rubric, str(path)
            )
            self._inline = self.rubric.model_dump(mode="json")
        else:
            reply = await self.client.get(f"/v1/rubrics/{self.rubric_arg}")
            reply.raise_for_status()
            self.rubric = Rubric.model_validate(reply.json()["rubric"])
        return self

    def _rubric_field(self) -> Any:
        return self._inline if self._inline is not None else self.rubric_arg

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = await self.client.post(path, json=body)
        if reply.status_code != 200:
            raise RuntimeError(f"{path} answered {reply.status_code}: {reply.text[:300]}")
        answer: dict[str, Any] = reply.json()
        return answer

    async def rewards(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        """``POST /v1/rewards`` without the cache."""
        options = {"use_cache": False, "criteria_format": self.criteria_format}
        body = {"rubric": self._rubric_field(), "items": items, "options": options}
        return await self._post("/v1/rewards", body)

    async def preferences(self, pairs: list[dict[str, Any]], margin: float) -> dict[str, Any]:
        """``POST /v1/preferences``."""
        options = {"margin": margin, "criteria_format": self.criteria_format}
        body = {"rubric": self._rubric_field(), "pairs": pairs, "options": options}
        return await self._post("/v1/preferences", body)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()
