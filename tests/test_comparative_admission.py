"""``/v1/groups`` and ``/v1/preferences`` check a request's planned work once, at the gate
(calls, prompt bytes and sandbox seconds together); on ca8fbfa the service checked it
before the gate and the gate again without the sandbox seconds. What the check refuses
is in ``test_admission`` and ``test_sandbox_admission_groups``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool, settings_for, write_library

from rewardsvc.server import admission, gate, service


async def test_each_comparative_request_checks_its_work_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[tuple[Any, ...]] = []

    def check(*args: Any) -> None:
        checked.append(args[1:])
        admission.check_work(*args)

    monkeypatch.setattr(gate, "check_work", check)
    monkeypatch.setattr(service, "check_work", check)
    group = {"id": "g", "prompt": "What is 2+2?", "completions": ["4", "5"]}
    pair = {"id": "p", "prompt": "What is 2+2?", "a": "4", "b": "5"}
    settings = settings_for(write_library(tmp_path / "rubrics"))
    with FakeJudge() as fake:
        async with app_client(settings, fake_pool(fake.url, fake.url)) as (http, _, _):
            grouped = await http.post("/v1/groups", json={"rubric": "tiny", "groups": [group]})
            assert grouped.status_code == 200, grouped.text
            assert len(checked) == 1, checked
            paired = await http.post("/v1/preferences", json={"rubric": "tiny", "pairs": [pair]})
            assert paired.status_code == 200, paired.text
            assert len(checked) == 2, checked
    # Calls and prompt bytes of the plan, and its sandbox seconds (none: no code grader).
    assert all(len(args) == 3 and args[0] > 0 and args[2] == 0 for args in checked), checked
