"""A request's planned work, checked before it is admitted: a ``/v1/rewards`` request's
(judge calls, prompt bytes, sandbox seconds) once, when the service plans it
(``Service.plan``; admitting the same plan holds its slots without checking it again); its
sandbox seconds at the busy host's cap (``WALL_CAP`` times each run's wall clock: what a
starved run may hold)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool_doc, settings_for

from rewardsvc.core.errors import TooLarge
from rewardsvc.core.pool import JudgePool
from rewardsvc.server import admission, gate, service

RUBRIC = {
    "id": "once",
    "criteria": [{"id": "clear", "text": "The answer is clear."}],
    "judges": ["primary"],
}


async def test_a_rewards_request_checks_its_work_once(
    tmp_path: Path, fake: FakeJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[tuple[int, int, float]] = []

    def counting(settings: Any, calls: int, prompt_bytes: int, sandbox_s: float = 0.0) -> None:
        checked.append((calls, prompt_bytes, sandbox_s))
        admission.check_work(settings, calls, prompt_bytes, sandbox_s)

    for module in (service, gate):
        monkeypatch.setattr(module, "check_work", counting)
    pool = JudgePool.model_validate(fake_pool_doc(fake.url, fake.url))
    (tmp_path / "rubrics").mkdir()
    items = [{"id": f"i{n}", "prompt": "Say hi.", "completion": f"hi {n}"} for n in range(3)]
    async with app_client(settings_for(tmp_path / "rubrics"), pool) as (client, _, _):
        reply = await client.post("/v1/rewards", json={"rubric": RUBRIC, "items": items})
    assert reply.status_code == 200, reply.text
    assert [calls for calls, _, _ in checked] == [3], checked


def test_sandbox_seconds_are_admitted_at_the_busy_hosts_cap(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, max_sandbox_seconds=200)
    admission.check_work(settings, 1, 0, 60.0)  # 180 s at the cap: fits
    # 80 s of runs may hold the sandbox 240 s on a busy host (WALL_CAP 3): over 200.
    with pytest.raises(TooLarge, match="max_sandbox_seconds") as refused:
        admission.check_work(settings, 1, 0, 80.0)
    assert "plans 80 s" in str(refused.value) and "240 s" in str(refused.value)
    assert refused.value.field == "max_sandbox_seconds"
