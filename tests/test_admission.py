"""Admission counts the plan: the judge calls a request is admitted with are the calls its
plan makes, for every kind of question and target, and nothing is judged before admission.

Each request goes to the service with fake judges (``fakejudge.py``, and the scripted
reward-model server of ``test_reward_model_paths``); ``Gate.admitted`` is recorded to read
what admission weighed, and the fakes count what reached them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import test_reward_model_paths as reward_model
from fakejudge import FakeJudge
from test_api_support import app_client, fake_pool_doc, settings_for
from test_reward_model_paths import Pooling

from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rollout import ItemIn, Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import Judge
from rewardsvc.scoring.engine import Engine
from rewardsvc.server.gate import Gate

RUBRICS = {
    # A judge answering all criteria in one call: one call per item, not one per criterion.
    "batched": """\
id: batched
criteria:
  - {id: correct, text: The answer is correct.}
  - {id: shown, text: The answer shows its work.}
  - {id: polite, text: The answer is polite.}
judges: [batcher]
""",
    # A grader criterion makes no judge call.
    "graded": """\
id: graded
requires_reference: true
criteria:
  - {id: polite, text: The answer is polite.}
  - {id: exact, category: essential, grader: {type: numeric}}
judges: [primary]
""",
    # A step criterion is asked once per assistant step.
    "stepped": """\
id: stepped
criteria:
  - {id: final, text: The task is done.}
  - {id: step, text: The step helps., scope: step}
judges: [primary]
""",
    # A reward model scores the item, and each step as the trajectory up to it.
    "scored": """\
id: scored
criteria:
  - {id: final, text: Right.}
  - {id: step, text: Helps., scope: step}
judges: [rm]
""",
    "quality": """\
id: quality
criteria:
  - {id: correct, text: The answer is correct.}
  - {id: clear, text: The answer is clear.}
judges: [primary, secondary]
""",
}

RECIPE = """\
kind: recipe
id: gated
components:
  - {id: answer, weight: 0.5, grader: {type: exact}}
  - {id: quality, weight: 0.5, rubric: quality}
gates:
  - {component: answer, threshold: 1.0, floor: 0.1}
"""

ROUTING = """\
kind: routing
id: mixed
routes:
  chat: quality
  math: graded
"""


def plain(n: int, **extra: Any) -> dict[str, Any]:
    """A distinct item (no two calls of a request are the same call)."""
    return {"id": f"i{n}", "prompt": f"What is {n}+{n}?", "completion": str(2 * n), **extra}


def stepped(n: int, steps: int = 3) -> dict[str, Any]:
    """An item whose completion has ``steps`` assistant steps."""
    completion: list[dict[str, str]] = []
    for k in range(steps):
        if k:
            completion.append({"role": "user", "content": "go on"})
        completion.append({"role": "assistant", "content": f"Step {k} of item {n}."})
    return {"id": f"s{n}", "prompt": f"Task {n}.", "completion": completion}


CASES = {
    "batched judge": ("batched", [plain(n) for n in range(4)], 4),
    "grader criterion": ("graded", [plain(n, reference=str(2 * n)) for n in range(3)], 3),
    "step criterion": ("stepped", [stepped(n) for n in range(2)], 2 * (1 + 3)),
    "reward model": ("scored", [stepped(n) for n in range(2)], 2 * (1 + 3)),
    "recipe": ("gated", [plain(1, reference="2"), plain(2, reference="5")], 2 * 2 * 2),
    "routing table": (
        "mixed",
        [
            plain(1, metadata={"data_source": "chat"}),
            plain(2, reference="4", metadata={"data_source": "math"}),
            plain(3, metadata={"data_source": "chat"}),
        ],
        2 * 2 * 2 + 1,  # each route's plan: not the costliest route's for every item
    ),
}
"""Target, items, and the judge calls their plan makes (made, served or skipped)."""


@pytest.fixture
def library(tmp_path: Path) -> Path:
    folder = tmp_path / "rubrics"
    (folder / "recipes").mkdir(parents=True)
    for name, text in RUBRICS.items():
        (folder / f"{name}.yaml").write_text(text)
    (folder / "recipes" / "gated.yaml").write_text(RECIPE)
    (folder / "recipes" / "mixed.yaml").write_text(ROUTING)
    return folder


pooling = reward_model.server
"""The scripted reward-model server (the fixture of ``test_reward_model_paths``)."""


class Served:
    """The service over the library, the fakes, and what admission was asked."""

    def __init__(self, client: httpx.AsyncClient, fakes: list[FakeJudge], rm: Pooling):
        self.client, self.fakes, self.rm = client, fakes, rm
        self.admitted: list[tuple[int, int, int]] = []

    def requests(self) -> int:
        """The judge requests every fake received."""
        return sum(f.script.requests for f in self.fakes) + len(self.rm.bodies)


@contextlib.asynccontextmanager
async def serving(
    library: Path, pooling: tuple[Pooling, str], monkeypatch: pytest.MonkeyPatch, **limits: Any
) -> AsyncIterator[Served]:
    with FakeJudge() as one, FakeJudge() as two:
        doc = fake_pool_doc(one.url, two.url)
        doc["judges"]["batcher"] = {**doc["judges"]["primary"], "method": "batched"}
        rm = {"model": "rm", "base_urls": [pooling[1]], "method": "reward_model", "retries": 0}
        doc["judges"]["rm"] = rm
        settings = settings_for(library, **limits)
        async with app_client(settings, JudgePool.model_validate(doc)) as (client, _, _):
            served = Served(client, [one, two], pooling[0])
            admitted = Gate.admitted

            def recording(
                gate: Gate, items: int, calls: int, prompt_bytes: int = 0, **checked: Any
            ) -> Any:
                served.admitted.append((items, calls, prompt_bytes))
                return admitted(gate, items, calls, prompt_bytes, **checked)

            monkeypatch.setattr(Gate, "admitted", recording)
            yield served


@pytest.mark.parametrize("case", list(CASES))
async def test_the_calls_admitted_are_the_calls_the_plan_makes(
    case: str, library: Path, pooling: tuple[Pooling, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target, items, planned = CASES[case]
    async with serving(library, pooling, monkeypatch) as served:
        reply = await served.client.post("/v1/rewards", json={"rubric": target, "items": items})
        assert reply.status_code == 200, reply.text
        usage = reply.json()["usage"]
        assert [calls for _, calls, _ in served.admitted] == [planned]
        made = usage["judge_calls"] + usage["cache_hits"] + usage["judge_calls_skipped"]
        assert made == planned, usage
        assert served.requests() == usage["judge_calls"]
        # The fakes' answers may not parse (a batched reply): a failed call is still a call.
        assert "rejected" not in {r["status"] for r in reply.json()["results"]}


async def test_a_plan_within_max_inflight_calls_is_admitted_where_the_estimate_was_over(
    library: Path, pooling: tuple[Pooling, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four items of a batched judge make four calls (the old estimate counted twelve)."""
    items = [plain(n) for n in range(4)]
    async with serving(library, pooling, monkeypatch, max_inflight_calls=4) as served:
        reply = await served.client.post("/v1/rewards", json={"rubric": "batched", "items": items})
        assert reply.status_code == 200, reply.text
        assert reply.json()["usage"]["judge_calls"] == 4


async def test_a_plan_over_max_inflight_calls_is_refused_before_any_judge_call(
    library: Path, pooling: tuple[Pooling, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two items of three steps plan eight calls (the old estimate counted four)."""
    items = [stepped(n) for n in range(2)]
    async with serving(library, pooling, monkeypatch, max_inflight_calls=6) as served:
        reply = await served.client.post("/v1/rewards", json={"rubric": "stepped", "items": items})
        assert reply.status_code == 413, reply.text
        body = reply.json()
        assert (body["error"], body["field"]) == ("too_much_work", "max_inflight_calls")
        assert "8 judge calls" in body["message"]
        assert served.requests() == 0
        assert served.admitted == []


async def test_a_batched_call_carries_its_prompt_bytes_once(
    library: Path, pooling: tuple[Pooling, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five long items of a batched judge plan five calls of about 92 KB each, within the
    smallest max_prompt_bytes_per_request (the old estimate counted each criterion's)."""
    items = [plain(n, completion=f"{n} " + "x" * 90_000) for n in range(5)]
    bound = 1024 * 1024
    async with serving(library, pooling, monkeypatch, max_prompt_bytes_per_request=bound) as s:
        reply = await s.client.post("/v1/rewards", json={"rubric": "batched", "items": items})
        assert reply.status_code == 200, reply.text
        [(_, calls, prompt_bytes)] = s.admitted
        assert calls == 5
        assert 5 * 90_000 < prompt_bytes <= bound


async def test_a_plan_is_made_without_a_judge_call_and_runs_as_planned() -> None:
    rubric = Rubric.model_validate(
        {
            "id": "two",
            "criteria": [{"id": "a", "text": "Right."}, {"id": "b", "text": "Clear."}],
            "judges": ["primary"],
        }
    )
    items = [ItemIn(f"i{n}", Rollout(f"Question {n}?", f"Answer {n}.")) for n in range(3)]
    with FakeJudge() as fake:
        config = JudgeConfig(model="fake", base_urls=[fake.url], retries=0, timeout_s=5)
        engine = Engine({"primary": Judge("primary", config)})
        try:
            plan = await engine.plan(rubric, items)
            assert (plan.cost.calls, fake.script.requests) == (6, 0)
            some = plan.only([2, 0])
            assert some.cost.calls == 4
            result = await engine.run(some)
        finally:
            await engine.aclose()
    assert [r.id for r in result.items] == ["i2", "i0"]
    assert result.usage.judge_calls == fake.script.requests == 4
