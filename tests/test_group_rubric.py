"""Groups and preferences are questions of the engine's executor and honour the rubric:
a drain cuts their calls, a comparison is rendered once, essential gates cap, graders
grade, and the features a comparison cannot honour are refused naming their field."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge, Script
from test_api_support import app_client, fake_pool, settings_for, write_library
from test_groups import COMPLETIONS, PROMPT, QUALITY, _group, quality_asker

from rewardsvc.core.errors import RequestError
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.comparative import FencedGroup
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.library.registry import load_pool
from rewardsvc.scoring.group_plan import GroupIn, GroupOptions
from rewardsvc.scoring.groups import score_groups
from rewardsvc.scoring.preferences import judge_preferences
from rewardsvc.storage.cache import VerdictCache

ROOT = Path(__file__).resolve().parent.parent
POOL = ROOT / "deploy" / "cpu-judge" / "judges.yaml"
CLEAR = {"id": "clear", "text": "The response is clear."}
GATE = {
    "id": "correct",
    "category": "essential",
    "text": "The response names Paris as the capital.",
    "gate": 0.5,
    "cap": 0.0,
}


def rubric(*criteria: dict[str, Any], **extra: Any) -> Rubric:
    return Rubric.model_validate(
        {"id": "capital", "criteria": list(criteria), "judges": ["primary", "secondary"], **extra}
    )


@pytest.fixture
def judges() -> Iterator[dict[str, Judge]]:
    """Judge objects for the pool's names; the tests answer their calls themselves."""
    yield build_judges(load_pool(POOL))


@pytest.fixture
def absolute(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each judge's criterion-on-an-item question answered here: 1 when the completion
    names Paris. Returns the criteria asked, one entry per call."""
    asked: list[str] = []

    real = Judge.ask

    async def ask(self: Judge, question: Any, *, deadline: float | None = None) -> Any:
        if not isinstance(question, CriterionOnItem):  # a comparison: asked of the judge
            return await real(self, question, deadline=deadline)
        asked.append(question.criterion.id)
        score = 1.0 if "Paris" in question.rollout.completion else 0.0
        return Verdict(score=score, prompt_tokens=10, completion_tokens=1)

    monkeypatch.setattr(Judge, "ask", ask)
    return asked


# ------------------------------------------------------------------ one executor


async def test_a_drain_cuts_comparison_calls_in_flight(tmp_path: Path) -> None:
    """On bd29102 the groups' calls ran outside the engine's expiry: a drain left them
    waiting for the judges (here they failed as ``timeout`` after the judges' 5 s)."""
    with FakeJudge(Script(default="stall")) as one, FakeJudge(Script(default="stall")) as two:
        pool = fake_pool(one.url, two.url)
        async with app_client(settings_for(write_library(tmp_path / "r")), pool) as running:
            client, app, _ = running
            body = {"rubric": "tiny", "groups": [_raw_group()]}
            posted = asyncio.ensure_future(client.post("/v1/groups", json=body))
            while one.script.requests + two.script.requests == 0:
                await asyncio.sleep(0.01)
            app.state.service.expire_work()
            reply = await asyncio.wait_for(posted, 60)
    assert reply.status_code == 200, reply.text
    result = reply.json()["results"][0]
    assert result["status"] == "judge_error" and result["rewards"] == [None] * 4
    kinds = {c["error_kind"] for j in result["judges"].values() for c in j["comparisons"]}
    assert kinds == {"deadline"}


def _raw_group() -> dict[str, Any]:
    return {"id": "g", "prompt": PROMPT, "completions": COMPLETIONS}


async def test_a_comparison_is_rendered_once_inside_its_turn(
    judges: dict[str, Judge], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On bd29102 a cache miss rendered each prompt twice (8 renders for 4 calls): once for
    its cache key, outside the judge's turn, and again to send it."""
    renders = []
    real = FencedGroup.block

    def block(self: FencedGroup, shown: Any) -> str:
        renders.append(tuple(shown))
        return real(self, shown)

    monkeypatch.setattr(FencedGroup, "block", block)
    cache = VerdictCache(100)
    asker = quality_asker(QUALITY)
    batch = await score_groups(
        judges, rubric(CLEAR), [_group()], GroupOptions(orders=2), asker=asker, cache=cache
    )
    assert batch.usage.judge_calls == 4
    assert len(renders) == 4
    again = await score_groups(
        judges, rubric(CLEAR), [_group()], GroupOptions(orders=2), asker=asker, cache=cache
    )
    assert again.usage.cache_hits == 4 and len(renders) == 4  # keyed by inputs: no render
    assert again.results[0].rewards == batch.results[0].rewards


# ------------------------------------------------------------------ the rubric honoured


async def test_an_essential_gate_caps_the_completions_below_it(
    judges: dict[str, Judge], absolute: list[str]
) -> None:
    """On bd29102 the gate was ignored: the completions not naming Paris kept their win
    rates (Lyon's about 0.19); the gated criterion was compared as text instead."""
    asker = quality_asker(QUALITY)
    batch = await score_groups(judges, rubric(GATE, CLEAR), [_group()], asker=asker)
    result = batch.results[0]
    assert result.status == "ok"
    rewards = result.rewards
    assert rewards[1] == 0.0 and rewards[3] == 0.0  # Lyon, turtles: below the gate, capped
    assert rewards[0] is not None and rewards[2] is not None
    assert rewards[0] > 0.0 and rewards[2] > 0.0
    assert absolute == ["correct"] * 8  # asked of each of 4 completions by 2 judges
    assert len(asker.calls) == 2 * 2  # only "clear" is compared: 2 orders x 2 judges


async def test_a_preference_honours_the_gate(judges: dict[str, Judge], absolute: list[str]) -> None:
    """On bd29102 the pair's P(a better) ignored that b fails the essential gate."""
    asker = quality_asker({COMPLETIONS[1]: 4.0, COMPLETIONS[0]: 1.0})  # prefers Lyon
    pair = GroupIn("p", (Rollout(PROMPT, COMPLETIONS[0]), Rollout(PROMPT, COMPLETIONS[1])))
    prefs = await judge_preferences(judges, rubric(GATE, CLEAR), [pair], asker=asker)
    assert prefs.results[0].p_a_better == 1.0 and prefs.results[0].label == "a"


async def test_a_grader_criterion_is_graded_not_sent_to_the_judges(tmp_path: Path) -> None:
    """On bd29102 a grader's criterion was compared by the judges as text (an empty one):
    8 judge requests instead of 4, and the rewards blind to the grader."""
    names_paris = {"id": "paris", "grader": {"type": "regex", "pattern": "Paris"}, "weight": 5}
    inline = {"id": "capital", "criteria": [names_paris, CLEAR], "judges": ["primary", "secondary"]}
    with FakeJudge() as one, FakeJudge() as two:
        pool = fake_pool(one.url, two.url)
        async with app_client(settings_for(write_library(tmp_path / "r")), pool) as running:
            body = {"rubric": inline, "groups": [_raw_group()]}
            reply = await running[0].post("/v1/groups", json=body)
        sent = one.script.requests + two.script.requests
    assert reply.status_code == 200, reply.text
    data = reply.json()
    result = data["results"][0]
    assert result["status"] == "ok", result["error"]
    assert sent == 2 * 2  # only "clear" compared: 2 orders x 2 judges
    rewards = result["rewards"]
    assert min(rewards[0], rewards[2]) > max(rewards[1], rewards[3])  # the Paris answers


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (
            {"criteria": [CLEAR, {**CLEAR, "id": "step", "scope": "step"}]},
            "rubric.criteria[1].scope",
        ),
        ({"objectives": {"clarity": {"criteria": ["clear"]}}}, "rubric.objectives"),
    ],
)
async def test_a_feature_a_comparison_cannot_honour_is_refused_naming_it(
    judges: dict[str, Judge], extra: dict[str, Any], field: str
) -> None:
    """On bd29102 step criteria were compared as episode criteria and objectives dropped."""
    base: dict[str, Any] = {"criteria": [CLEAR], **extra}
    refused = rubric(*base.pop("criteria"), **base)
    with pytest.raises(RequestError) as error:
        await score_groups(judges, refused, [_group()], asker=quality_asker(QUALITY))
    assert error.value.field == field
    with pytest.raises(RequestError) as error:
        await judge_preferences(judges, refused, [_group(COMPLETIONS[:2])])
    assert error.value.field == field


async def test_preferences_refuse_calibration(judges: dict[str, Judge]) -> None:
    """On bd29102 a calibrated rubric's preferences were silently uncalibrated."""
    calibrated = rubric(CLEAR, aggregation={"calibration": "zscore"})
    with pytest.raises(RequestError) as error:
        await judge_preferences(judges, calibrated, [_group(COMPLETIONS[:2])])
    assert error.value.field == "rubric.aggregation.calibration"


async def test_groups_calibrate_each_judge_before_the_judges_combine(
    judges: dict[str, Judge],
) -> None:
    """On bd29102 calibration was ignored: the rewards were the raw win rates. With rank
    calibration over this request's 8 scores per judge (two equal groups), each reward is
    its score's mid-rank percentile in the judge's window."""
    calibrated = rubric(CLEAR, aggregation={"calibration": "rank", "calibration_window": 8})
    groups = [_group(gid="one"), _group(gid="two")]
    batch = await score_groups(judges, calibrated, groups, asker=quality_asker(QUALITY))
    for result in batch.results:
        assert result.status == "ok"
        assert result.rewards == pytest.approx([0.875, 0.375, 0.625, 0.125])


GATED_INLINE = {"id": "capital", "criteria": [GATE, CLEAR], "judges": ["primary", "secondary"]}


async def test_a_gate_question_is_the_one_rewards_ask_and_shares_its_verdicts(
    tmp_path: Path,
) -> None:
    """On bd29102 groups asked no gate question: /v1/rewards found nothing cached."""
    with FakeJudge() as one, FakeJudge() as two:
        pool = fake_pool(one.url, two.url)
        async with app_client(settings_for(write_library(tmp_path / "r")), pool) as running:
            client = running[0]
            grouped = await client.post(
                "/v1/groups", json={"rubric": GATED_INLINE, "groups": [_raw_group()]}
            )
            assert grouped.status_code == 200, grouped.text
            item = {"id": "i", "prompt": PROMPT, "completion": COMPLETIONS[0]}
            rewarded = await client.post(
                "/v1/rewards", json={"rubric": GATED_INLINE, "items": [item]}
            )
    assert rewarded.status_code == 200, rewarded.text
    assert rewarded.json()["usage"]["cache_hits"] == 2  # the gate, for each judge


async def test_admission_counts_the_calls_planned(tmp_path: Path) -> None:
    """Admission weighs the questions actually planned: 4 comparisons of ``clear`` and 8
    gate questions (4 completions x 2 judges). On bd29102 it counted 8 comparisons."""
    settings = settings_for(write_library(tmp_path / "r"), max_inflight_calls=11)
    with FakeJudge() as one, FakeJudge() as two:
        async with app_client(settings, fake_pool(one.url, two.url)) as running:
            body = {"rubric": GATED_INLINE, "groups": [_raw_group()]}
            reply = await running[0].post("/v1/groups", json=body)
        assert one.script.requests + two.script.requests == 0
    assert reply.status_code == 413, reply.text
    assert "plans 12 judge calls" in reply.text


async def test_a_group_bringing_a_step_criterion_is_rejected_alone(
    judges: dict[str, Judge],
) -> None:
    """On bd29102 a group's own step criterion was compared as an episode criterion."""
    own = rubric(CLEAR, {**CLEAR, "id": "step", "scope": "step"})
    stepped = GroupIn("stepped", _group().rollouts, rubric=own)
    batch = await score_groups(
        judges, rubric(CLEAR), [stepped, _group()], asker=quality_asker(QUALITY)
    )
    assert [r.status for r in batch.results] == ["rejected", "ok"]
    assert (batch.results[0].error or "").startswith("groups[0].criteria: criterion 'step'")


async def test_a_grader_that_cannot_score_leaves_the_group_without_rewards(
    judges: dict[str, Judge],
) -> None:
    """Without graders a grader criterion gives no score: the group is judge_error with
    null rewards, never a 0 (on bd29102 the criterion was compared as text: ok)."""
    names_paris = {"id": "paris", "grader": {"type": "regex", "pattern": "Paris"}}
    batch = await score_groups(
        judges, rubric(names_paris, CLEAR), [_group()], asker=quality_asker(QUALITY)
    )
    result = batch.results[0]
    assert result.status == "judge_error" and result.rewards == [None] * 4
    assert "grader paris completions[0]" in (result.error or "")
