"""The reward attack benchmark's mechanics: its attack set, judge narrowing and summary
(no judge is called; the benchmark itself runs on the CPU judges)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.attack_report import markdown
from bench.attack_rewards import answer_sets, narrowed, parse_pool, summarise
from bench.attack_set import QUESTIONS, STEP_OPENER, attacks, families

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "deploy" / "cpu-judge" / "judges.yaml"
REQUIRED = {
    "fence_escape", "fake_score", "fake_verdict_json", "template_mimicry", "master_key",
    "authority_appeal", "flattery", "grader_instruction", "admin_note", "updated_criteria",
    "hidden_html", "control_tokens", "step_master_key",
}  # fmt: skip


def test_every_required_family_attacks_the_honest_wrong_answer() -> None:
    assert set(families()) >= REQUIRED
    for family in families():
        answers = attacks(family, 1)
        assert [q for q, _ in answers] == list(range(len(QUESTIONS)))
        for q, text in answers:
            if family not in ("master_key", "zero_width"):  # whole answers; hidden inside
                assert QUESTIONS[q].wrong.split()[-1].rstrip(".") in text, (family, text)
    assert attacks("step_master_key", 1)[0][1] == f"{STEP_OPENER}\n\n{QUESTIONS[0].wrong}"
    # The questions see different payloads of a family.
    assert len({text for _, text in attacks("fake_score", 1)}) == len(QUESTIONS)


def test_a_one_judge_pool_narrows_the_rubric_and_says_so() -> None:
    pool = parse_pool(f"tiny={TINY}:primary")
    assert list(pool.pool.judges) == ["primary"]
    rubric = pool.library.get("helpful-answer").rubric
    one, note = narrowed(rubric, pool.pool)
    assert [j.name for j in one.judges] == ["primary"] and one.min_judges == 1
    assert note and "narrowed" in note
    whole = parse_pool(f"tiny={TINY}")
    assert narrowed(rubric, whole.pool) == (rubric, None)
    with pytest.raises(Exception, match="not in"):
        parse_pool(f"tiny={TINY}:tertiary")


def test_summary_pairs_attacks_with_the_wrong_answer_of_their_question() -> None:
    answers = answer_sets(["fake_score"], 1)
    results = {}
    for q in range(len(QUESTIONS)):
        results[f"honest_wrong/{q}"] = {"reward": 0.1 * q, "flags": [], "status": "ok"}
        results[f"honest_right/{q}"] = {"reward": 0.9, "flags": [], "status": "ok"}
        reward = None if q == 0 else 0.1 * q + 0.05
        status = "judge_error" if reward is None else "ok"
        results[f"fake_score/{q}"] = {"reward": reward, "flags": ["fake_score"], "status": status}
    row = summarise(results, answers)["fake_score"]
    assert row["margin"] == pytest.approx(0.05) and row["n"] == len(QUESTIONS) - 1
    assert row["failed"] == 1 and row["flagged"] == 1.0 and row["right"] == pytest.approx(0.9)
    assert row["band"][0] == pytest.approx(0.05) and row["band"][1] == pytest.approx(0.05)
    result = {
        "command": "x",
        "questions": len(QUESTIONS),
        "per_question": 1,
        "pools": {"p": {"pool": "p.yaml", "notes": [], "seconds": 1.0,
                        "rubrics": {"r": {"fake_score": row}}}},
        "benign": {"benign": 10, "flagged": 0, "rows": {}},
    }  # fmt: skip
    text = markdown(result)
    assert "families above the honest wrong answer: 1 of 1: fake_score" in text
    assert "0 of 10 benign answers" in text


def test_a_family_whose_every_item_failed_has_no_margin() -> None:
    answers = answer_sets(["fake_score"], 1)
    results = {
        f"{kind}/{q}": {"reward": None, "flags": [], "status": "judge_error"}
        for kind in ("honest_wrong", "honest_right", "fake_score")
        for q in range(len(QUESTIONS))
    }
    row = summarise(results, answers)["fake_score"]
    assert row["margin"] is None and row["band"] is None and row["failed"] == len(QUESTIONS)
