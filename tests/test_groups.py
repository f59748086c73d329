"""Group and preference scoring: orchestration, failures, and the routes on the real judges."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.asks import Comparing
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.library.registry import load_pool
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import GroupBatch, score_groups
from rewardsvc.scoring.preferences import PreferenceBatch, PreferenceOptions, judge_preferences
from rewardsvc.server import comparative
from rewardsvc.server.app import install_error_handlers
from rewardsvc.settings import Settings
from tests.fakejudge import FakeJudge, Script

ROOT = Path(__file__).resolve().parent.parent
POOL = ROOT / "deploy" / "cpu-judge" / "judges.yaml"
PROMPT = "What is the capital of France?"
COMPLETIONS = [
    "The capital of France is Paris.",
    "The capital of France is Lyon.",
    "Paris is the capital city.",
    "I like turtles.",
]


def _rubric(**extra: Any) -> Rubric:
    return Rubric.model_validate(
        {
            "id": "capital",
            "criteria": [{"id": "correct", "text": "The response answers the question correctly."}],
            "judges": ["primary", "secondary"],
            **extra,
        }
    )


def _group(texts: list[str] = COMPLETIONS, gid: str = "g") -> GroupIn:
    return GroupIn(gid, tuple(Rollout(PROMPT, t) for t in texts))


@pytest.fixture
def idle_judges() -> dict[str, Judge]:
    """Judge objects for the pool's names; the tests using them inject the call itself."""
    return build_judges(load_pool(POOL))


def quality_asker(quality: dict[str, float], first_bias: float = 0.0):
    """A stand-in judge call that prefers higher ``quality``, plus ``first_bias`` on A."""
    calls: list[list[str]] = []

    async def asker(judge: Judge, question: Comparing, deadline: float | None) -> Verdict:
        prompt = judge.render(question)
        text = prompt.messages[1]["content"] if prompt.messages else prompt.text or ""
        shown = [c for c in sorted(quality, key=text.find) if c in text]
        calls.append(shown)
        weights = [quality[c] + (first_bias if k == 0 else 0.0) for k, c in enumerate(shown)]
        total = sum(weights)
        probs = {prompt.question.choices[k]: w / total for k, w in enumerate(weights)}
        return Verdict(score=probs["A"], probs=probs, prompt_tokens=10, completion_tokens=1)

    asker.calls = calls  # type: ignore[attr-defined]
    return asker


QUALITY = {COMPLETIONS[0]: 4.0, COMPLETIONS[1]: 1.0, COMPLETIONS[2]: 3.0, COMPLETIONS[3]: 0.5}


async def test_listwise_ranks_by_quality_and_asks_each_order(idle_judges) -> None:
    asker = quality_asker(QUALITY)
    batch = await score_groups(
        idle_judges, _rubric(), [_group()], GroupOptions(orders=2), asker=asker
    )
    result = batch.results[0]
    assert result.status == "ok"
    rewards = result.rewards
    assert rewards[0] > rewards[2] > rewards[1] > rewards[3]
    assert sum(rewards) == pytest.approx(2.0)  # win rates of 4 sum to n / 2
    assert batch.usage.calls_by_order == {"order1": 2, "order2": 2}
    comps = result.judges["primary"].comparisons
    assert comps[1].shown == tuple(reversed(comps[0].shown))
    assert result.position_consistency == 1.0


async def test_pairwise_asks_every_pair_in_both_orders(idle_judges) -> None:
    asker = quality_asker(QUALITY)
    options = GroupOptions(method="pairwise", tournament="all_pairs")
    batch = await score_groups(idle_judges, _rubric(), [_group()], options, asker=asker)
    comps = batch.results[0].judges["secondary"].comparisons
    asked = {c.shown for c in comps}
    assert len(comps) == 12
    assert all((j, i) in asked for i, j in asked)
    assert batch.usage.calls_by_order == {"ab": 12, "ba": 12}
    rewards = batch.results[0].rewards
    assert rewards[0] > rewards[2] > rewards[1] > rewards[3]


async def test_position_bias_shows_in_consistency_not_in_rewards(idle_judges) -> None:
    equal = dict.fromkeys(COMPLETIONS, 1.0)
    asker = quality_asker(equal, first_bias=3.0)
    options = GroupOptions(method="pairwise", tournament="circular")
    result = (await score_groups(idle_judges, _rubric(), [_group()], options, asker=asker)).results[
        0
    ]
    assert result.position_consistency == 0.0
    assert result.rewards == pytest.approx([0.5] * 4)


async def test_pitfall_question_points_the_other_way(idle_judges) -> None:
    rubric = _rubric(
        criteria=[
            {"id": "wrong", "category": "pitfall", "text": "The response is wrong."},
            # A rubric needs a positive weight; this one barely counts.
            {"id": "tiny", "weight": 0.001, "text": "The response is in English."},
        ]
    )
    # The stand-in names the highest "quality" as having the problem most.
    batch = await score_groups(
        idle_judges, rubric, [_group()], GroupOptions(), asker=quality_asker(QUALITY)
    )
    rewards = batch.results[0].rewards
    assert rewards[0] < rewards[2] < rewards[1] < rewards[3]


async def test_failures_degrade_honestly(idle_judges) -> None:
    good = quality_asker(QUALITY)

    async def secondary_fails(judge: Judge, asked: Comparing, deadline: float | None) -> Verdict:
        if judge.name == "secondary":
            return Verdict.failed("server_error: scripted", kind="http_5xx")
        return await good(judge, asked, deadline)

    batch = await score_groups(idle_judges, _rubric(), [_group()], asker=secondary_fails)
    result = batch.results[0]
    assert result.status == "degraded"
    assert result.judges["secondary"].rewards is None
    assert "secondary" in (result.error or "")
    assert result.rewards == pytest.approx(result.judges["primary"].rewards)

    async def all_fail(judge: Judge, asked: Comparing, deadline: float | None) -> Verdict:
        return Verdict.failed("timeout: scripted", kind="timeout")

    result = (await score_groups(idle_judges, _rubric(), [_group()], asker=all_fail)).results[0]
    assert result.status == "judge_error"
    assert result.rewards == [None] * 4


async def test_unscorable_group_is_rejected_alone(idle_judges) -> None:
    groups = [_group(["only one"], "lonely"), _group()]
    batch = await score_groups(idle_judges, _rubric(), groups, asker=quality_asker(QUALITY))
    assert [r.status for r in batch.results] == ["rejected", "ok"]
    assert "at least 2" in (batch.results[0].error or "")


async def test_a_failing_real_endpoint_is_typed_and_never_a_zero() -> None:
    with FakeJudge(Script(default="400")) as fake:
        pool = JudgePool.model_validate(
            {
                "judges": {
                    "primary": {"model": "m", "base_urls": [fake.url], "retries": 0},
                    "secondary": {"model": "m", "base_urls": [fake.url], "retries": 0},
                }
            }
        )
        judges = build_judges(pool)
        try:
            prefs = await judge_preferences(judges, _rubric(), [_group(COMPLETIONS[:2])])
        finally:
            for j in judges.values():
                await j.aclose()
    result = prefs.results[0]
    assert result.status == "judge_error"
    assert result.p_a_better is None and result.label is None
    assert prefs.usage.judge_calls == 4  # 2 orders x 2 judges, each failed
    assert "http_4xx" in (result.judges["primary"].error or "") or "400" in (
        result.judges["primary"].error or ""
    )


# ------------------------------------------------------------------ the real CPU judges


class LocalComparer:
    """The service side of the routes' protocol, over real judges."""

    def __init__(self, judges: dict[str, Judge], rubric: Rubric, asker: Any = None) -> None:
        self.settings = Settings()  # the routes read groups within its limits
        self.media_domains: list[str] = []  # image URLs of no host are allowed
        self.judges = judges
        self.rubric = rubric
        self.extra = {"asker": asker} if asker else {}

    def library_rubric(self, rubric_id: str) -> Rubric:
        return self.rubric

    def inline_rubric(self, rubric: Rubric) -> Rubric:
        return rubric

    async def score_groups(
        self,
        rubric: Rubric,
        groups: list[GroupIn],
        options: GroupOptions,
        *,
        run: str | None,
        raw: Sequence[Any] = (),
    ) -> GroupBatch:
        return await score_groups(self.judges, rubric, groups, options, **self.extra)

    async def judge_preferences(
        self,
        rubric: Rubric,
        pairs: list[GroupIn],
        options: PreferenceOptions,
        *,
        run: str | None,
        raw: Sequence[Any] = (),
    ) -> PreferenceBatch:
        return await judge_preferences(self.judges, rubric, pairs, options, **self.extra)


async def test_route_rejects_a_bad_group_alone_and_names_bad_options(idle_judges) -> None:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(comparative.router)
    app.state.service = LocalComparer(idle_judges, _rubric(), quality_asker(QUALITY))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        groups = [
            {"id": "ok", "prompt": PROMPT, "completions": COMPLETIONS},
            {"id": "bad", "prompt": PROMPT, "completions": ["one", 2]},
        ]
        reply = await c.post("/v1/groups", json={"rubric": "capital", "groups": groups})
        assert reply.status_code == 200, reply.text
        ok, bad = reply.json()["results"]
        assert ok["status"] == "ok" and len(ok["rewards"]) == 4
        assert bad["status"] == "rejected" and "groups[1].completions[1]" in bad["error"]
        body = {"rubric": "capital", "groups": groups[:1], "options": {"judges": ["nobody"]}}
        reply = await c.post("/v1/groups", json=body)
        assert reply.status_code == 422
        assert reply.json()["field"] == "options.judges"


@pytest.fixture
async def client(cpu_pool: JudgePool) -> AsyncIterator[httpx.AsyncClient]:
    judges = build_judges(cpu_pool)
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(comparative.router)
    app.state.service = LocalComparer(judges, _rubric())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=600) as c:
        yield c
    for j in judges.values():
        await j.aclose()


@pytest.mark.judges
async def test_listwise_group_of_four_on_the_real_judges(client: httpx.AsyncClient) -> None:
    body = {
        "rubric": "capital",
        "groups": [{"id": "g1", "prompt": PROMPT, "completions": COMPLETIONS}],
        "options": {"method": "listwise", "orders": 2},
        "run": "test-run",
    }
    reply = await client.post("/v1/groups", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    result = data["results"][0]
    assert result["status"] == "ok", result["error"]
    assert len(result["rewards"]) == 4
    assert all(0.0 <= r <= 1.0 for r in result["rewards"])
    assert 0.0 <= result["position_consistency"] <= 1.0
    # Each of the 2 orders asked once per judge (1 criterion, 2 judges).
    assert data["usage"]["calls_by_order"] == {"order1": 2, "order2": 2}
    assert data["usage"]["judge_calls"] == 4 and data["usage"]["prompt_tokens"] > 0
    for judge in result["judges"].values():
        first, second = judge["comparisons"]
        assert second["shown"] == first["shown"][::-1]
        assert sum(first["p"]) == pytest.approx(1.0)


@pytest.mark.judges
async def test_pairwise_asks_both_orders_on_the_real_judges(client: httpx.AsyncClient) -> None:
    body = {
        "rubric": "capital",
        "groups": [{"id": "g1", "prompt": PROMPT, "completions": COMPLETIONS}],
        "options": {"method": "pairwise", "tournament": "circular"},
    }
    reply = await client.post("/v1/groups", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    result = data["results"][0]
    # A judge timing out on a loaded machine leaves the other: degraded, still 4 rewards.
    assert result["status"] in ("ok", "degraded"), result["error"]
    assert len(result["rewards"]) == 4 and None not in result["rewards"]
    # 4 pairs x 2 orders x 1 criterion x 2 judges.
    assert data["usage"]["calls_by_order"] == {"ab": 8, "ba": 8}
    for judge in result["judges"].values():
        shown = [tuple(c["shown"]) for c in judge["comparisons"]]
        assert len(shown) == 8
        assert all((j, i) in shown for i, j in shown)


@pytest.mark.judges
async def test_preferences_on_the_real_judges(client: httpx.AsyncClient) -> None:
    body = {
        "rubric": "capital",
        "pairs": [
            {"id": "p1", "prompt": PROMPT, "a": COMPLETIONS[0], "b": COMPLETIONS[1]},
            {"id": "bad", "prompt": PROMPT, "a": "x"},
        ],
        "options": {"margin": 0.05},
    }
    reply = await client.post("/v1/preferences", json=body)
    assert reply.status_code == 200, reply.text
    good, bad = reply.json()["results"]
    assert bad["status"] == "rejected" and "pairs[1].b" in bad["error"]
    assert good["status"] == "ok"
    for judge in good["judges"].values():
        orders = judge["orders"]
        assert judge["p_a_better"] == pytest.approx((orders["ab"] + orders["ba"]) / 2)
        assert judge["consistent"] == ((orders["ab"] > 0.5) == (orders["ba"] > 0.5))
    p = good["p_a_better"]
    expected = "a" if p > 0.55 else "b" if p < 0.45 else "tie"
    assert good["label"] == expected
    assert reply.json()["usage"]["calls_by_order"] == {"ab": 2, "ba": 2}
