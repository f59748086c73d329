"""Readiness: which judges answer, probed at most every few seconds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import httpx

from rewardsvc.judges.judge import Judge

READY_TTL_S = 5.0  # how long a /readyz answer is reused before judges are probed again
PROBE_TIMEOUT_S = 2.0  # per judge base URL, for GET {base_url}/models


class ReadinessProbe:
    """Answers /readyz from a few-second cache of judge probes (``GET {base_url}/models``)."""

    def __init__(self, judges: Mapping[str, Judge], client: httpx.AsyncClient):
        self.judges = judges
        self.client = client
        self._lock = asyncio.Lock()
        self._checked_at = -1e9
        self._reachable: dict[str, bool] = {}

    async def _probe_url(self, url: str, api_key: str) -> bool:
        try:
            reply = await self.client.get(
                url.rstrip("/") + "/models",
                headers={"Authorization": f"Bearer {api_key}"},
                timeout=PROBE_TIMEOUT_S,
            )
        except httpx.HTTPError:
            return False
        return reply.status_code == 200

    async def _probe_judge(self, judge: Judge) -> bool:
        try:
            key = judge.config.api_key()
        except KeyError:
            return False
        urls = [str(u) for u in judge.config.base_urls]
        answers = await asyncio.gather(*(self._probe_url(u, key) for u in urls))
        return any(answers)

    async def reachable(self) -> dict[str, bool]:
        """Which judges answered, probing again when the last answer is older than READY_TTL_S."""
        async with self._lock:
            if time.monotonic() - self._checked_at > READY_TTL_S:
                names = list(self.judges)
                answers = await asyncio.gather(*(self._probe_judge(self.judges[n]) for n in names))
                self._reachable = dict(zip(names, answers, strict=True))
                self._checked_at = time.monotonic()
            return dict(self._reachable)
