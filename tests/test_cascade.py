"""Cascades of judges: routing by the escalation rule, the deciding stage on the wire, usage
per stage, admission of the worst case, and failures that are null, never 0.

Stage judges are in-process stubs (their score per criterion scripted) for the routing,
and ``fakejudge.py`` servers over HTTP for admission and failures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakejudge import FakeJudge
from pydantic import ValidationError
from test_api_support import app_client, fake_pool_doc, settings_for

from rewardsvc.application.targets import score_batch
from rewardsvc.cli import main
from rewardsvc.core.errors import RequestError
from rewardsvc.core.monitor_spec import MonitorConfig
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.results import CriterionOutcome, ItemReward, JudgeOutcome, StageUsage, Usage
from rewardsvc.core.rollout import ItemIn, Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.judge import build_judges
from rewardsvc.monitor.runs import RunState
from rewardsvc.protocol.rewards import RewardOptions
from rewardsvc.scoring.engine import Engine


class Stub:
    """A judge whose P(yes) is ``score(criterion id)``; None fails with ``kind``."""

    def __init__(self, name: str, score: Callable[[str], float | None], kind: str = "http_5xx"):
        self.name, self.score, self.kind = name, score, kind
        self.asked: list[str] = []

    def cache_identity(self) -> str:
        return f"stub:{self.name}"

    async def ask(self, question: Any, *, deadline: float | None = None) -> Verdict:
        assert isinstance(question, CriterionOnItem)
        await asyncio.sleep(0)
        cid = question.criterion.id
        self.asked.append(cid)
        value = self.score(cid)
        if value is None:
            return Verdict.failed(f"{self.kind}: stub down", kind=self.kind)  # type: ignore[arg-type]
        return Verdict(
            value, 0.01, {"yes": value, "no": 1 - value}, prompt_tokens=7, completion_tokens=1
        )

    async def aclose(self) -> None:
        pass


def cascaded(escalate: dict[str, Any] | None = None, **cascade: Any) -> Rubric:
    """Three criteria, a cheap stage then an expensive one."""
    stages = cascade.pop("stages", None) or [
        {"judges": ["small"], "escalate": escalate or {"kind": "band", "lo": 0.2, "hi": 0.8}},
        {"judges": ["big"]},
    ]
    judges = [name for stage in stages for name in stage["judges"]]
    return Rubric.model_validate(
        {
            "id": "cascaded",
            "criteria": [
                {"id": "a", "text": "A holds."},
                {"id": "b", "text": "B holds."},
                {"id": "c", "text": "C holds."},
            ],
            "judges": judges,
            "cascade": {"stages": stages, **cascade},
        }
    )


ITEMS = [{"id": "i0", "prompt": "q", "completion": "an answer"}]
SURE = {"a": 0.95, "b": 0.5, "c": 0.05}.get  # b is in the band [0.2, 0.8]


async def test_only_uncertain_criteria_reach_the_next_stage_and_say_which_decided():
    small, big = Stub("small", SURE), Stub("big", lambda _: 0.3)
    engine = Engine({"small": small, "big": big})
    response = await score_batch(engine, cascaded(), ITEMS)
    assert sorted(small.asked) == ["a", "b", "c"]
    assert big.asked == ["b"]
    [result] = response.results
    assert result.status == "ok"
    row = result.judges["cascade"].criteria
    assert {c: s.stage for c, s in row.items()} == {"a": 1, "b": 2, "c": 1}
    assert {c: s.score for c, s in row.items()} == {"a": 0.95, "b": 0.3, "c": 0.05}
    # The reward is the rubric's mean of the deciding stages' answers.
    assert result.reward == pytest.approx((0.95 + 0.3 + 0.05) / 3)
    usage = response.usage
    assert [(s.judges, s.questions, s.judge_calls) for s in usage.stages] == [
        (["small"], 3, 3),
        (["big"], 1, 1),
    ]
    assert usage.judge_calls == 4 and usage.prompt_tokens == 4 * 7


async def test_scope_item_escalates_the_whole_item():
    small, big = Stub("small", SURE), Stub("big", lambda _: 0.3)
    engine = Engine({"small": small, "big": big})
    response = await score_batch(engine, cascaded(scope="item"), ITEMS)
    assert sorted(big.asked) == ["a", "b", "c"]
    stages = {s.stage for s in response.results[0].judges["cascade"].criteria.values()}
    assert stages == {2}


async def test_entropy_and_disagreement_rules_route():
    small, big = Stub("small", SURE), Stub("big", lambda _: 0.3)
    entropy = cascaded({"kind": "entropy", "above": 0.5})
    await score_batch(Engine({"small": small, "big": big}), entropy, ITEMS)
    assert big.asked == ["b"]  # H(0.95) and H(0.05) ~ 0.29, H(0.5) = 1
    agree, split, big = (
        Stub("s1", SURE),
        Stub("s2", {"a": 0.9, "b": 0.5, "c": 0.7}.get),
        Stub("big", lambda _: 0.3),
    )
    stages = [
        {"judges": ["s1", "s2"], "escalate": {"kind": "disagreement", "above": 0.3}},
        {"judges": ["big"]},
    ]
    engine = Engine({"s1": agree, "s2": split, "big": big})
    response = await score_batch(engine, cascaded(stages=stages), ITEMS)
    assert big.asked == ["c"]  # 0.05 vs 0.7
    row = response.results[0].judges["cascade"].criteria
    assert row["a"].score == pytest.approx((0.95 + 0.9) / 2)


async def test_a_stage_down_is_null_with_its_kind_never_0():
    small, big = Stub("small", lambda _: None, kind="timeout"), Stub("big", lambda _: 0.9)
    response = await score_batch(Engine({"small": small, "big": big}), cascaded(), ITEMS)
    [result] = response.results
    assert (result.status, result.reward) == ("judge_error", None)
    assert {s.error_kind for s in result.judges["cascade"].criteria.values()} == {"timeout"}
    assert big.asked == []


async def test_uncertain_then_next_stage_down_is_null_with_its_kind():
    small, big = Stub("small", SURE), Stub("big", lambda _: None, kind="http_5xx")
    response = await score_batch(Engine({"small": small, "big": big}), cascaded(), ITEMS)
    [result] = response.results
    assert (result.status, result.reward) == ("judge_error", None)
    row = result.judges["cascade"].criteria
    assert (row["b"].stage, row["b"].score, row["b"].error_kind) == (2, None, "http_5xx")
    assert row["a"].score == 0.95


async def test_an_ensemble_stage_short_of_judges_is_degraded_when_min_judges_allows():
    stages = [
        {"judges": ["s1", "s2"], "escalate": {"kind": "band", "lo": 0.2, "hi": 0.8}},
        {"judges": ["big"]},
    ]
    judges = {
        "s1": Stub("s1", SURE),
        "s2": Stub("s2", lambda _: None),
        "big": Stub("big", lambda _: 0.3),
    }
    response = await score_batch(Engine(judges), cascaded(stages=stages), ITEMS)
    [result] = response.results
    assert result.status == "degraded" and result.reward is not None
    strict = [{**stages[0], "min_judges": 2}, stages[1]]
    response = await score_batch(Engine(judges), cascaded(stages=strict), ITEMS)
    assert (response.results[0].status, response.results[0].reward) == ("judge_error", None)


def test_a_bad_cascade_is_refused_naming_the_field():
    with pytest.raises(ValidationError, match="every stage but the last needs one"):
        cascaded(stages=[{"judges": ["small"]}, {"judges": ["big"]}])
    with pytest.raises(ValidationError, match="the last stage decides"):
        band = {"kind": "band", "lo": 0.2, "hi": 0.8}
        cascaded(
            stages=[{"judges": ["small"], "escalate": band}, {"judges": ["big"], "escalate": band}]
        )
    with pytest.raises(ValidationError, match=r"lo: 0\.9 is above hi: 0\.1"):
        cascaded({"kind": "band", "lo": 0.9, "hi": 0.1})
    with pytest.raises(ValidationError, match="disagreement needs two judges"):
        cascaded({"kind": "disagreement", "above": 0.2})
    with pytest.raises(ValidationError, match="objectives name criteria, not judges"):
        doc = cascaded().model_dump(exclude_unset=True)
        Rubric.model_validate({**doc, "objectives": {"cheap": {"judges": ["small"]}}})
    with pytest.raises(ValidationError, match="'other' is in no stage"):
        Rubric.model_validate(
            {**cascaded().model_dump(exclude_unset=True), "judges": ["small", "big", "other"]}
        )


async def test_a_judge_subset_or_bar_of_a_cascade_is_refused():
    engine = Engine({"small": Stub("small", SURE), "big": Stub("big", SURE)})
    with pytest.raises(RequestError, match=r"options\.judges: a cascaded rubric"):
        await score_batch(engine, cascaded(), ITEMS, RewardOptions(judges=["big"]))
    with pytest.raises(RequestError, match=r"options\.min_judges: a cascaded rubric"):
        await score_batch(engine, cascaded(), ITEMS, RewardOptions(min_judges=1))


CASCADE_YAML = """\
id: cascaded
criteria:
  - {id: a, text: A holds.}
  - {id: b, text: B holds.}
judges: [primary, secondary]
cascade:
  stages:
    - judges: [primary]
      escalate: {kind: band, lo: 0.2, hi: 0.9}
    - judges: [secondary]
"""


async def _post(tmp_path: Path, path: str, body: dict[str, Any], **limits: Any) -> tuple[Any, int]:
    (tmp_path / "cascaded.yaml").write_text(CASCADE_YAML)
    with FakeJudge() as one, FakeJudge() as two:  # both answer yes with p = 0.8
        pool = JudgePool.model_validate(fake_pool_doc(one.url, two.url))
        async with app_client(settings_for(tmp_path, **limits), pool) as (client, _, _):
            reply = await client.post(path, json=body)
        return reply, one.script.requests + two.script.requests


async def test_over_http_the_stage_field_and_usage_per_stage(tmp_path: Path):
    items = [{"id": f"i{n}", "prompt": f"q{n}", "completion": "yes"} for n in range(2)]
    reply, calls = await _post(tmp_path, "/v1/rewards", {"rubric": "cascaded", "items": items})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    # p = 0.8 is inside [0.2, 0.9]: every question goes on to the second stage.
    assert [s["questions"] for s in body["usage"]["stages"]] == [4, 4]
    assert calls == 8 == body["usage"]["judge_calls"]
    row = body["results"][0]["judges"]["cascade"]["criteria"]
    assert {c: s["stage"] for c, s in row.items()} == {"a": 2, "b": 2}


async def test_admission_weighs_every_stage_and_refuses_with_no_call(tmp_path: Path):
    items = [{"id": f"i{n}", "prompt": f"q{n}", "completion": "yes"} for n in range(2)]
    body = {"rubric": "cascaded", "items": items}
    # Two items x two criteria x two stages = 8 calls in the worst case; 6 allowed.
    reply, calls = await _post(tmp_path, "/v1/rewards", body, max_inflight_calls=6)
    assert reply.status_code == 413, reply.text
    assert "8 judge calls" in reply.json()["message"]
    assert calls == 0


async def test_groups_refuse_a_cascade(tmp_path: Path):
    groups = [{"prompt": "q", "completions": ["a", "b"]}]
    reply, calls = await _post(tmp_path, "/v1/groups", {"rubric": "cascaded", "groups": groups})
    assert reply.status_code == 422, reply.text
    assert "cascade" in reply.json()["message"] and calls == 0


def _cascaded_item(n: int, escalated: int) -> ItemReward:
    """An item whose cascade row answered three criteria, ``escalated`` of them by stage 2."""
    criteria = {
        c: CriterionOutcome(0.5, stage=2 if k < escalated else 1) for k, c in enumerate("abc")
    }
    row = JudgeOutcome(score=0.5, raw_score=0.5, criteria=criteria)
    return ItemReward(id=f"i{n}", reward=0.5, status="ok", judges={"cascade": row})


def test_the_monitor_alerts_when_the_escalation_share_moves_from_the_baseline():
    config = MonitorConfig(window=16, baseline=16, eval_every=4, for_evals=1)
    run = RunState("cascaded", "run", "v1", config, now=0.0)
    events = [e for n in range(32) for e in run.add(_cascaded_item(n, n % 3 == 0), float(n))]
    assert run.signals["escalation_share"] == pytest.approx(1 / 3 * 6 / 16, abs=0.03)
    assert "escalation_shift" not in {e.name for e in events}
    # The policy drifts into the uncertain band: two criteria of three escalate.
    events = [e for n in range(32, 64) for e in run.add(_cascaded_item(n, 2), float(n))]
    assert run.signals["escalation_share"] == pytest.approx(2 / 3)
    assert [(e.name, e.state) for e in events if e.name == "escalation_shift"] == [
        ("escalation_shift", "firing")
    ]


@pytest.mark.judges
async def test_a_cascade_of_the_real_cpu_judges_end_to_end(cpu_pool: JudgePool):
    """SmolLM2 (primary) then Gemma (secondary): a wide band sends some questions on, and
    every criterion says which stage decided it."""
    stages = [
        {"judges": ["primary"], "escalate": {"kind": "band", "lo": 0.05, "hi": 0.95}},
        {"judges": ["secondary"]},
    ]
    rubric = cascaded(stages=stages)
    engine = Engine(build_judges(cpu_pool))
    items = [
        {"id": "good", "prompt": "What is the capital of France?", "completion": "Paris."},
        {"id": "bad", "prompt": "What is the capital of France?", "completion": "Berlin."},
    ]
    try:
        response = await score_batch(engine, rubric, items)
    finally:
        await engine.aclose()
    first, second = response.usage.stages
    assert (first.questions, first.judge_calls) == (6, 6)
    assert second.questions == second.judge_calls <= 6
    decided = [c.stage for r in response.results for c in r.judges["cascade"].criteria.values()]
    assert sorted(decided).count(2) == second.questions and set(decided) <= {1, 2}
    for r in response.results:
        assert r.status == "ok" and r.reward is not None and 0.0 <= r.reward <= 1.0


async def test_items_with_their_own_criteria_keep_the_cascade():
    """An item's own rubric is the batch rubric with its criteria: the cascade comes along."""
    small, big = Stub("small", {"mine": 0.5}.get), Stub("big", lambda _: 0.9)
    items = [{**ITEMS[0], "criteria": [{"id": "mine", "text": "Mine holds."}]}]
    response = await score_batch(Engine({"small": small, "big": big}), cascaded(), items)
    [result] = response.results
    assert result.status == "ok"
    assert {c: s.stage for c, s in result.judges["cascade"].criteria.items()} == {"mine": 2}


def test_stage_usages_add_up_stage_by_stage():
    """Two parts of a batch (or two batches of a recipe) add each stage's work to its own."""
    a, b = Usage(), Usage()
    a.add_stage(1, Usage(judge_calls=3), StageUsage(["small"], questions=3, judge_calls=3))
    b.add_stage(1, Usage(judge_calls=2), StageUsage(["small"], questions=2, judge_calls=2))
    b.add_stage(2, Usage(judge_calls=1, cost=0.5), StageUsage(["big"], 1, 1, cost=0.5))
    total = a + b
    assert total.judge_calls == 6 and total.cost == 0.5
    assert [(s.judges, s.questions, s.judge_calls, s.cost) for s in total.stages] == [
        (["small"], 5, 5, None),
        (["big"], 1, 1, 0.5),
    ]
    assert len(a.stages) == 1  # the operands are left as they were


def test_validate_names_the_file_and_line_of_a_bad_cascade(tmp_path: Path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(CASCADE_YAML.replace("lo: 0.2, hi: 0.9", "lo: 0.9, hi: 0.2"))
    assert main(["validate", str(bad)]) != 0
    assert f"{bad}:9: cascade.stages[0].escalate.band: lo: 0.9 is above hi: 0.2" in (
        capsys.readouterr().out
    )


async def test_the_plan_carries_each_row_and_the_judges_behind_it():
    # One concept with or without a cascade: the cascade's one row stands for every stage's
    # judges (a text-only stage makes it blind to images), a plain rubric's rows are its judges.
    small, big = Stub("small", SURE), Stub("big", lambda _: 0.3)
    big.sees_images = True  # type: ignore[attr-defined]
    engine = Engine({"small": small, "big": big})
    items = [ItemIn(id="i0", rollout=Rollout("q", "an answer"))]
    rows = (await engine.plan(cascaded(), items)).rows
    assert (rows.judges, rows.min_judges) == ({"cascade": (small, big)}, 1)
    assert rows.blind == {"cascade"}
    plain = Rubric.model_validate(
        {"id": "plain", "criteria": [{"id": "a", "text": "A holds."}], "judges": ["small", "big"]}
    )
    rows = (await engine.plan(plain, items)).rows
    assert (rows.names, rows.min_judges, rows.blind) == (["small", "big"], 1, {"small"})
