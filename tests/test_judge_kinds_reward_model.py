"""A reward model beside an LLM judge, against real vLLM CPU servers.

``smollm2-rm`` (cpujudge.sh's optional judge) is SmolLM2 on vLLM's pooling runner,
``--convert classify`` with its classifier head built from the LM head (logit of "yes"
minus "no"). Its numbers mean little; what is checked is the wire format (the conversation
as chat messages, the raw logit read from ``/classify``), that an RM is asked no criteria
(one call per item), and that its scores join an LLM judge's through calibration and
``min``, and through the held-out evaluation, by the code paths LLM judges use.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakejudge import RecordingObserver

from rewardsvc.application.root import compose_local
from rewardsvc.application.targets import score_batch
from rewardsvc.core import aggregate
from rewardsvc.core.pool import JudgeConfig, JudgePool, RewardModelSettings
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.evaluation.runner import evaluate
from rewardsvc.evaluation.scorers import LocalScorer
from rewardsvc.judges.asks import WholeItem
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.judges.reward_model import conversation
from rewardsvc.library.registry import Registry
from rewardsvc.safety.defuse import DEFAULT_DEFUSER
from rewardsvc.scoring.engine import Engine
from rewardsvc.settings import Settings

pytestmark = pytest.mark.judges

RM_URL = "http://127.0.0.1:8104/v1"


def rm_config(**settings: Any) -> JudgeConfig:
    """The pool entry of the smollm2-rm server (``settings``: its reward_model block)."""
    return JudgeConfig(
        model="smollm2-rm",
        base_urls=[RM_URL],
        method="reward_model",
        max_context_tokens=2048,
        reward_model=RewardModelSettings(**settings),
    )


@pytest.fixture
def pool(cpu_pool: JudgePool, rm_server: None) -> JudgePool:
    """The CPU pool's chat judge beside the reward model."""
    return JudgePool(judges={"primary": cpu_pool.judges["primary"], "rm": rm_config()})


def rubric(rule: str = "min", calibration: str = "zscore") -> Rubric:
    return Rubric.model_validate(
        {
            "id": "rm-ensemble",
            "criteria": [
                {"id": "correct", "text": "The final answer is correct."},
                {"id": "clear", "text": "The answer is clear.", "weight": 0.5},
            ],
            "judges": ["primary", "rm"],
            "min_judges": 2,
            "aggregation": {"rule": rule, "calibration": calibration},
        }
    )


QUESTIONS = [(f"What is {a} + {b}?", a + b) for a, b in [(2, 2), (3, 5), (7, 6), (9, 9), (4, 1)]]


def items() -> list[dict[str, Any]]:
    """Ten items: a right and a wrong answer to each of five sums."""
    out = []
    for n, (question, answer) in enumerate(QUESTIONS):
        for tag, said in (("right", answer), ("wrong", answer + 3)):
            completion = f"{question[8:-1]} = {said}. The answer is {said}."
            out.append({"id": f"{tag}{n}", "prompt": question, "completion": completion})
    return out


def raw_logit(messages: list[dict[str, str]]) -> float:
    """The reward model's raw logit for ``messages``, asked of /classify directly."""
    body = {"model": "smollm2-rm", "messages": messages, "use_activation": False}
    reply = httpx.post(RM_URL.removesuffix("/v1") + "/classify", json=body, timeout=60).json()
    assert reply["data"][0]["num_classes"] == 1
    return float(reply["data"][0]["probs"][0])


async def test_score_item_reads_the_raw_logit_of_the_conversation(rm_server: None) -> None:
    rollout = Rollout("What is 2 + 2?", "2 + 2 = 4.")
    sigmoid = Judge("rm", rm_config())
    activated = Judge("rm", rm_config(transform="probability"))
    shifted = Judge("rm", rm_config(center=1.0, scale=2.0))
    try:
        got = [await j.ask(WholeItem(rollout)) for j in (sigmoid, activated, shifted)]
    finally:
        for j in (sigmoid, activated, shifted):
            await j.aclose()
    logit = raw_logit(conversation(rollout, DEFAULT_DEFUSER))
    for v in got:
        assert v.ok, v.error
        assert v.variance == 0.0 and v.prompt_tokens > 0 and v.completion_tokens == 0
    assert got[0].score == pytest.approx(1 / (1 + math.exp(-logit)), abs=1e-6)
    # The server's own activation of a one-label head is the same sigmoid.
    assert got[1].score == pytest.approx(got[0].score, abs=1e-5)
    assert got[2].score == pytest.approx(1 / (1 + math.exp(-(logit - 1.0) / 2.0)), abs=1e-6)


async def test_rm_is_asked_no_criteria_and_joins_min_after_calibration(pool: JudgePool) -> None:
    observer = RecordingObserver()
    judges = build_judges(pool, observer)
    engine = Engine(judges)
    try:
        response = await score_batch(engine, rubric(), items())
    finally:
        await engine.aclose()
    results = response.results
    assert [r.status for r in results] == ["ok"] * len(results)
    calls = [j for j, _ in observer.calls]
    # One call per item for the RM; one per (item, criterion) for the LLM judge.
    assert calls.count("rm") == len(results)
    assert calls.count("primary") == 2 * len(results)
    raw = [r.judges["rm"].raw_score for r in results]
    scores = [r.judges["rm"].score for r in results]
    for r in results:
        assert set(r.judges["rm"].criteria) == {aggregate.HOLISTIC}
        assert set(r.judges["primary"].criteria) == {"correct", "clear"}
        assert r.judges["rm"].variance == 0.0
        # min over the calibrated judge scores, through the same rule as LLM judges alone.
        assert r.reward == pytest.approx(
            min(j.score for j in r.judges.values() if j.score is not None)
        )
    # zscore over the batch's window: the RM's scores are its raw ones mapped by Φ(z).
    stats = aggregate.WindowStats.of([s for s in raw if s is not None])
    for s, r in zip(scores, raw, strict=True):
        assert r is not None
        expected = aggregate.normal_cdf((r - stats.mean) / stats.sd)
        assert s == pytest.approx(expected, abs=1e-9)
    # Its uncertainty is the spread between the judges (the RM's own variance is 0).
    r0 = results[0]
    pair = [j.score for j in r0.judges.values() if j.score is not None]
    within = r0.judges["primary"].variance / 2
    assert r0.uncertainty == pytest.approx(math.sqrt(aggregate.weighted_variance(pair) + within))


async def test_held_out_pairs_aggregate_through_the_evaluation(
    pool: JudgePool, tmp_path: Path
) -> None:
    rows = [
        {"id": f"p{n}", "prompt": q, "chosen": f"The answer is {a}.", "rejected": f"It is {a + 3}."}
        for n, (q, a) in enumerate(QUESTIONS)
    ] + [
        {
            "id": f"w{n}",
            "prompt": it["prompt"],
            "completion": it["completion"],
            "label": int(n % 2 == 0),
        }
        for n, it in enumerate(items())
    ]
    settings = Settings(rubrics_dir=tmp_path, reload=False)
    app = await compose_local(settings, Registry(tmp_path, pool), build_judges(pool))
    scorer = LocalScorer(rubric(rule="mean", calibration="none"), app)
    try:
        report = await evaluate(scorer, rows, resamples=50)
    finally:
        await scorer.aclose()
    pointwise = report["pointwise"]["scorers"]
    pairs = report["pairs"]["scorers"]
    assert report["unscored"]["pointwise"] == 0 and report["unscored"]["pair_rewards"] == 0
    # The RM is reported per judge beside the LLM judge, and inside every rule's reward.
    wanted = {"judge:rm", "judge:primary", "rule:min", "rule:mean"}
    assert wanted <= set(pointwise), pointwise.keys()
    assert wanted <= set(pairs), pairs.keys()
