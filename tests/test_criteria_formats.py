"""The criteria formats of rubric datasets: each converts to rewardsvc criteria, a bad
entry is refused at its place relative to the value read, and under the chosen mapping
rewardsvc's explicit score is the dataset's own score (HealthBench's, computed here from
its definition on hand-computed cases with the judges' verdicts fixed, clipped to [0, 1]
as every reward is)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, get_args

import pytest

from rewardsvc.core import aggregate
from rewardsvc.core.criteria_formats import (
    FORMATS,
    MAX_CRITERIA,
    CriteriaFormatError,
    CriteriaFormatName,
    read_criteria,
)
from rewardsvc.core.rubric import Rubric

DATA = Path(__file__).parent / "data" / "rubric_datasets"


def _rows(name: str) -> list[dict[str, Any]]:
    lines = (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _rubric(criteria: list[dict[str, Any]]) -> Rubric:
    return Rubric.model_validate({"id": "per-prompt", "criteria": criteria, "judges": ["j"]})


def _problems(name: CriteriaFormatName, raw: Any) -> list[tuple[tuple[int | str, ...], str]]:
    with pytest.raises(CriteriaFormatError) as caught:
        read_criteria(name, raw)
    return [(p.loc, p.message) for p in caught.value.problems]


def healthbench_score(rubric: list[dict[str, Any]], met: list[bool]) -> float:
    """HealthBench's score of one response, from its definition: the points of the
    criteria met (negative points count when their undesirable behaviour is met) over the
    sum of the positive points. Not clipped: HealthBench clips the mean over responses;
    a reward, in [0, 1], is this clipped."""
    achieved = sum(item["points"] for item, m in zip(rubric, met, strict=True) if m)
    possible = sum(item["points"] for item in rubric if item["points"] > 0)
    return float(achieved / possible)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def _explicit(criteria: list[dict[str, Any]], verdicts: list[float]) -> float:
    scores = {c["id"]: v for c, v in zip(criteria, verdicts, strict=True)}
    return aggregate.judge_score(_rubric(criteria), scores)[0]


# ------------------------------------------------------------------ the registry


def test_the_literal_names_exactly_the_registered_formats() -> None:
    assert set(get_args(CriteriaFormatName)) == set(FORMATS)
    for name, fmt in FORMATS.items():
        assert fmt.name == name
        assert fmt.description and "\n" not in fmt.description


@pytest.mark.parametrize("name", ["healthbench", "rar", "strings", "tinker"])
def test_every_row_of_the_test_data_converts_to_a_valid_rubric(name: str) -> None:
    fmt = FORMATS[name]
    for row in _rows(name):
        criteria = fmt.read(row[fmt.row.rubric])
        assert 2 <= len(criteria) <= 12
        _rubric(criteria)  # ids unique, weights and categories consistent


# ------------------------------------------------------------------ HealthBench

HB = [
    {"criterion": "Advises rest and fluids.", "points": 5, "tags": ["axis:completeness"]},
    {"criterion": "Gives a correct dose.", "points": 3, "tags": ["axis:accuracy"]},
    {"criterion": "Mentions warning signs.", "points": 2, "tags": []},
    {"criterion": "Recommends aspirin for a child.", "points": -4, "tags": ["axis:accuracy"]},
]


def test_healthbench_points_become_weights_and_their_sign_the_category() -> None:
    assert read_criteria("healthbench", HB) == [
        {"id": "c1", "text": "Advises rest and fluids.", "category": "important", "weight": 5.0},
        {"id": "c2", "text": "Gives a correct dose.", "category": "important", "weight": 3.0},
        {"id": "c3", "text": "Mentions warning signs.", "category": "important", "weight": 2.0},
        {
            "id": "c4",
            "text": "Recommends aspirin for a child.",
            "category": "pitfall",
            "weight": -4.0,
        },
    ]
    # No gate: HealthBench has none, so no verdict may cap the score.
    assert all(c.gate is None for c in _rubric(read_criteria("healthbench", HB)).criteria)


@pytest.mark.parametrize(
    ("met", "score", "reward"),
    [
        # (5 + 2) / (5 + 3 + 2): two of three positives met, the pitfall absent.
        ([True, False, True, False], 0.7, 0.7),
        # (5 + 3 - 4) / 10: the pitfall met costs its 4 points.
        ([True, True, False, True], 0.4, 0.4),
        # (5 + 3 + 2) / 10: everything desirable, nothing undesirable. The score cannot
        # exceed 1: negative points only lower the sum of the positives met.
        ([True, True, True, False], 1.0, 1.0),
        # (2 - 4) / 10: the pitfall outweighs what was met; the reward is clipped to 0.
        ([False, False, True, True], -0.2, 0.0),
        # (0 - 4) / 10: nothing met but the pitfall.
        ([False, False, False, True], -0.4, 0.0),
        ([False, False, False, False], 0.0, 0.0),
    ],
)
def test_healthbench_score_is_reproduced_on_hand_computed_cases(
    met: list[bool], score: float, reward: float
) -> None:
    assert healthbench_score(HB, met) == pytest.approx(score, abs=1e-12)
    verdicts = [1.0 if m else 0.0 for m in met]
    got = _explicit(read_criteria("healthbench", HB), verdicts)
    assert got == pytest.approx(reward, abs=1e-12)


def test_healthbench_score_is_reproduced_for_every_verdict_of_every_test_row() -> None:
    for row in _rows("healthbench"):
        criteria = read_criteria("healthbench", row["rubrics"])
        for met in itertools.product([False, True], repeat=len(criteria)):
            score = healthbench_score(row["rubrics"], list(met))
            assert score <= 1.0
            got = _explicit(criteria, [float(m) for m in met])
            assert got == pytest.approx(_clip(score), abs=1e-12), (row["prompt_id"], met)


def test_a_pitfall_driven_healthbench_score_below_zero_is_clipped() -> None:
    rubric = [
        {"criterion": "States the dose.", "points": 2},
        {"criterion": "Mentions side effects.", "points": 1},
        {"criterion": "Recommends doubling the dose.", "points": -5},
    ]
    met = [False, True, True]
    # (1 - 5) / 3 = -1.33 for HealthBench (which clips only its mean over responses); the
    # reward, in [0, 1], is 0.
    assert healthbench_score(rubric, met) == pytest.approx(-4 / 3)
    assert _explicit(read_criteria("healthbench", rubric), [float(m) for m in met]) == 0.0


@pytest.mark.parametrize(
    ("raw", "loc", "message"),
    [
        ([HB[0], {"criterion": "Neutral.", "points": 0}], (1, "points"), "must not be 0"),
        ([HB[0], {"criterion": "Says hi.", "points": "5"}], (1, "points"), "must be a number"),
        ([HB[0], {"criterion": "Says hi.", "points": True}], (1, "points"), "got a boolean"),
        ([HB[0], {"criterion": "Says hi."}], (1, "points"), "missing"),
        ([HB[0], {"criterion": "ok", "points": 2}], (1, "criterion"), "at least 3 characters"),
        ([HB[0], {"text": "Says hi.", "points": 2}], (1, "criterion"), "missing"),
        ([HB[0], HB[1], "Says hi."], (2,), "expected a {criterion, points, tags} object"),
        ([HB[0], {"criterion": "Says hi.", "points": float("inf")}], (1, "points"), "finite"),
        ({"rubrics": HB}, (), "expected a list of {criterion, points, tags} objects"),
        ([HB[3]], (), "no criterion has a positive weight"),
        ([], (), "no criteria"),
    ],
)
def test_a_bad_healthbench_rubric_names_its_place(
    raw: Any, loc: tuple[int | str, ...], message: str
) -> None:
    problems = _problems("healthbench", raw)
    assert len(problems) == 1
    assert problems[0][0] == loc
    assert message in problems[0][1]


def test_every_bad_entry_is_reported_not_only_the_first() -> None:
    raw = [{"criterion": "Neutral.", "points": 0}, HB[0], {"criterion": "x", "points": 1}]
    assert [loc for loc, _ in _problems("healthbench", raw)] == [(0, "points"), (2, "criterion")]


def test_problems_are_prefixed_with_the_callers_place() -> None:
    with pytest.raises(CriteriaFormatError) as caught:
        read_criteria("healthbench", [HB[0], {"criterion": "Neutral.", "points": 0}])
    (problem,) = caught.value.prefixed(("items", 3, "criteria"))
    assert problem.path == "items[3].criteria[1].points"
    assert str(problem).startswith("items[3].criteria[1].points: must not be 0")


# ------------------------------------------------------------------ RaR


def test_rar_prefixes_set_the_category_and_leave_the_text() -> None:
    raw = [
        {"title": "Lower pressure", "description": "Essential Criteria: Says X.", "weight": 5},
        {"title": "Why", "description": "important criteria:  Explains Y.", "weight": 3},
        {"title": "Example", "description": "Optional Criterion: Gives Z.", "weight": 1},
        {"title": "Myth", "description": "Pitfall Criteria: Claims W.", "weight": -2},
        {"title": "Myth", "description": "Pitfall Criteria: Claims V.", "weight": 2},
        {"title": "Über", "description": "Mentions U.", "weight": 2},
        {"description": "Does not mention T.", "weight": -1},
    ]
    assert [
        (c["id"], c["category"], c["weight"], c["text"]) for c in read_criteria("rar", raw)
    ] == [
        ("lower-pressure", "essential", 5.0, "Says X."),
        ("why", "important", 3.0, "Explains Y."),
        ("example", "optional", 1.0, "Gives Z."),
        ("myth", "pitfall", -2.0, "Claims W."),
        # RaR data often writes a pitfall's weight positive: it counts against the score.
        ("myth-2", "pitfall", -2.0, "Claims V."),
        # No prefix: the weight's sign decides.
        ("ber", "important", 2.0, "Mentions U."),
        ("c7", "pitfall", -1.0, "Does not mention T."),
    ]


def test_rar_explicit_score_is_the_weighted_sum_over_the_positive_weights() -> None:
    criteria = read_criteria("rar", _rows("rar")[0]["rubric"])
    # Weights 5, 4, 1 and a pitfall -2. Essential and the pitfall met, the rest not:
    # (5 - 2) / (5 + 4 + 1) = 0.3.
    assert _explicit(criteria, [1.0, 0.0, 0.0, 1.0]) == pytest.approx(0.3)
    # P(yes) verdicts enter linearly: (5 * 0.9 + 4 * 0.5 + 1 * 0.2 - 2 * 0.1) / 10 = 0.65.
    assert _explicit(criteria, [0.9, 0.5, 0.2, 0.1]) == pytest.approx(0.65)


@pytest.mark.parametrize(
    ("raw", "loc", "message"),
    [
        (
            [{"title": "A", "description": "Important Criteria: Says A.", "weight": -3}],
            (0, "weight"),
            "only a Pitfall Criteria item may weigh against",
        ),
        (
            [{"title": "A", "description": "Essential Criteria:", "weight": 3}],
            (0, "description"),
            "no criterion text after its prefix",
        ),
        ([{"title": "A", "description": "Says A.", "weight": 0}], (0, "weight"), "not be 0"),
        ([{"title": 4, "description": "Says A.", "weight": 2}], (0, "title"), "must be text"),
        ([{"title": "A", "weight": 2}], (0, "description"), "missing"),
    ],
)
def test_a_bad_rar_rubric_names_its_place(
    raw: Any, loc: tuple[int | str, ...], message: str
) -> None:
    ((got_loc, got_message),) = _problems("rar", raw)
    assert got_loc == loc
    assert message in got_message


# ------------------------------------------------------------------ strings, tinker


def test_strings_are_important_criteria_of_weight_one() -> None:
    criteria = read_criteria("strings", ["Names Canberra.", "Answers in one sentence."])
    assert criteria == [
        {"id": "c1", "text": "Names Canberra.", "category": "important", "weight": 1.0},
        {"id": "c2", "text": "Answers in one sentence.", "category": "important", "weight": 1.0},
    ]


def test_one_string_holds_one_criterion_per_line() -> None:
    text = "- Names Canberra.\n\n2. Answers in one sentence.\n* Is polite."
    assert [c["text"] for c in read_criteria("strings", text)] == [
        "Names Canberra.",
        "Answers in one sentence.",
        "Is polite.",
    ]
    assert _problems("strings", "Names Canberra.\n\n- ok") == [
        ((), "line 3: must be text of at least 3 characters")
    ]
    assert _problems("strings", ["Names Canberra.", 7]) == [
        ((1,), "expected a criterion text, got a number")
    ]


def test_tinker_rubric_items_score_as_their_mean() -> None:
    row = _rows("tinker")[0]
    criteria = read_criteria("tinker", row["rubric_items"])
    assert [c["text"] for c in criteria] == [item["rubric_str"] for item in row["rubric_items"]]
    verdicts = [1.0, 0.25, 0.5]
    # The recipe's reward is the mean of the items' scores: (1 + 0.25 + 0.5) / 3.
    assert _explicit(criteria, verdicts) == pytest.approx(sum(verdicts) / 3)
    assert _problems("tinker", [{"extraction_regex": "x"}]) == [((0, "rubric_str"), "missing")]


# ------------------------------------------------------------------ rewardsvc


def test_rewardsvc_criteria_pass_as_they_are_and_get_ids_where_missing() -> None:
    raw = [
        {"text": "Answers the question.", "category": "essential", "gate": 0.5},
        {"id": "c1", "text": "Pads the answer.", "category": "pitfall"},
        {"id": None, "text": "Is clear.", "weight": 2},
    ]
    criteria = read_criteria("rewardsvc", raw)
    # The given id c1 is kept; the positional c1 of the first is made unique against it.
    assert [c["id"] for c in criteria] == ["c1-2", "c1", "c3"]
    assert criteria[0]["gate"] == 0.5
    assert read_criteria("rewardsvc", []) == []  # they may only extend a template rubric


def test_a_bad_rewardsvc_criterion_names_its_field() -> None:
    raw = [
        {"id": "a", "text": "Answers the question."},
        {"id": "a", "text": "Pads the answer.", "category": "pitfall", "weight": 2},
        {"id": "b", "text": "Is clear.", "colour": "red"},
    ]
    assert _problems("rewardsvc", raw) == [
        ((1, "id"), "duplicate criterion id 'a'"),
        ((1, "weight"), "a pitfall must have a negative weight"),
        ((2, "colour"), "unknown field (not allowed here)"),
    ]


def test_a_rubric_value_over_the_bound_is_refused_before_any_work() -> None:
    raw = [f"Criterion number {i}." for i in range(MAX_CRITERIA + 1)]
    assert _problems("strings", raw) == [
        ((), f"{MAX_CRITERIA + 1} criteria; at most {MAX_CRITERIA} are allowed")
    ]
    assert len(read_criteria("strings", raw[:MAX_CRITERIA])) == MAX_CRITERIA
