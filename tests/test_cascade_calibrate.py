"""``rewardsvc cascade calibrate``: the offline sweep on synthetic scored items (pure), and
the command end to end on fake judges."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path

import pytest
from fakejudge import FakeJudge
from test_api_support import fake_pool_doc
from test_cascade import CASCADE_YAML

from rewardsvc.cli import main
from rewardsvc.core.cascade import Band
from rewardsvc.core.rubric import Rubric
from rewardsvc.evaluation.cascade_sweep import (
    Scored,
    fit,
    grid,
    measure,
    pick,
    replay,
    wilson_upper,
)
from rewardsvc.library.yamlfile import parse_yaml


def mean(scores: Mapping[str, float]) -> float:
    return sum(scores.values()) / len(scores) if scores else 0.0


def synthetic(n: int = 400, seed: int = 7) -> list[Scored]:
    """A large judge that matches the label 90 % of the time; a small judge that agrees
    with it when sure (p < 0.15 or > 0.85) and is noisy near 0.5 otherwise."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        label = float(rng.random() < 0.5)
        big = (0.9 if label else 0.1) if rng.random() < 0.9 else (0.1 if label else 0.9)
        sure = rng.random() < 0.6
        small = (0.95 if big > 0.5 else 0.05) if sure else rng.uniform(0.3, 0.7)
        items.append(Scored(label, ({"c": small}, {"c": big})))
    return items


def test_replay_takes_the_next_stage_inside_the_band_only():
    item = Scored(1.0, ({"a": 0.9, "b": 0.5, "c": 0.1}, {"a": 0.2, "b": 0.8, "c": 0.7}))
    decided, asked, escalated = replay(item, [(0.2, 0.8)])
    assert decided == {"a": 0.9, "b": 0.8, "c": 0.1}
    assert (asked, escalated) == (3, 1)
    assert replay(item, [None])[0] == item.stages[1]


def test_the_fitted_band_meets_the_disagreement_target_and_saves_questions():
    items = synthetic()
    [chosen], [curve] = fit(items, mean, max_disagreement=0.02)
    assert chosen is not None
    assert chosen.disagreement <= chosen.disagreement_bound <= 0.02
    assert chosen.escalation < 0.6  # the small judge is sure of ~60 % of the questions
    # Nothing cheaper meets the target: every band escalating less disagrees more.
    assert all(p.disagreement_bound > 0.02 for p in curve if p.escalation < chosen.escalation)
    # The band escalating everything is the last stage alone.
    everything = measure(items, [(0.0, 1.0)], mean, 0.5, 0)
    assert (everything.escalation, everything.disagreement) == (1.0, 0.0)
    assert chosen.accuracy == pytest.approx(everything.accuracy, abs=0.02)


def test_a_band_meets_the_target_by_its_upper_bound_not_its_share_on_few_items():
    """150 items where the small judge, sure of every answer alike, is wrong on 3 (2 %): its
    share meets 2 % but its bound (5.7 %) does not, so everything is passed on; 1,500 such
    items (30 wrong, bound 2.8 %) still do not, 1,500 with 15 wrong (bound 1.6 %) do. On the
    base the band escalating nothing was chosen on the 150."""

    def items(n: int, wrong: int) -> list[Scored]:
        return [Scored(1.0, ({"c": 0.9}, {"c": 0.1 if k < wrong else 0.9})) for k in range(n)]

    def chosen(n: int, wrong: int) -> tuple[float, float]:
        [point], _ = fit(items(n, wrong), mean, max_disagreement=0.02)
        assert point is not None
        return point.escalation, point.disagreement

    assert chosen(150, 3) == (1.0, 0.0)
    assert chosen(1500, 30) == (1.0, 0.0)
    assert chosen(1500, 15) == (0.0, 0.01)
    assert wilson_upper(0, 150) == pytest.approx(0.025, abs=1e-3)


def test_an_escalation_budget_picks_the_least_disagreement_within_it():
    items = synthetic()
    [chosen], [curve] = fit(items, mean, max_escalation=0.2)
    assert chosen is not None and chosen.escalation <= 0.2
    within = [p.disagreement for p in curve if p.escalation <= 0.2]
    assert chosen.disagreement == min(within)
    assert pick(curve, max_escalation=-1.0) is None


def test_wider_bands_escalate_no_less():
    items = synthetic(100)
    points = {(p.lo, p.hi): p for p in fit(items, mean)[1][0]}
    for lo, hi in grid():
        wider = points.get((max(0.0, round(lo - 0.025, 6)), hi))
        if wider is not None:
            assert wider.escalation >= points[(lo, hi)].escalation


def test_the_command_scores_every_stage_and_writes_a_valid_cascade(tmp_path: Path, capsys):
    """Both fakes answer yes with p = 0.8: every band agrees with the last stage, so the
    widest band that escalates nothing (hi below 0.8) wins, and the fragment written
    validates as the rubric's cascade. Four items bound no disagreement at 49 %, hence the
    target of 0.5 (at 0.02 four items fit no saving)."""
    (tmp_path / "rubrics").mkdir()
    rubric_file = tmp_path / "rubrics" / "cascaded.yaml"
    rubric_file.write_text(CASCADE_YAML)
    data = tmp_path / "data.jsonl"
    rows = [{"prompt": f"q{n}", "completion": "yes", "label": n % 2} for n in range(4)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, plot, report = tmp_path / "fit.yaml", tmp_path / "fit.png", tmp_path / "fit.json"
    with FakeJudge() as one, FakeJudge() as two:
        pool = tmp_path / "judges.yaml"
        pool.write_text(json.dumps(fake_pool_doc(one.url, two.url)))
        argv = ["cascade", "calibrate", str(data), "--rubric", str(rubric_file)]
        argv += ["--rubrics", str(tmp_path / "rubrics"), "--judges", str(pool), "--out", str(out)]
        argv += ["--max-disagreement", "0.5"]
        assert main([*argv, "--plot", str(plot), "--json", str(report)]) == 0
        assert (one.script.requests, two.script.requests) == (8, 8)
    result = json.loads(report.read_text())
    [chosen] = result["chosen"]
    assert (chosen["lo"], chosen["hi"], chosen["escalation"]) == (0.0, 0.775, 0.0)
    assert result["last_stage_accuracy"] == 0.5  # p = 0.8 for every answer, half labelled 0
    fragment = parse_yaml(out.read_text(), str(out))
    doc = {**parse_yaml(CASCADE_YAML, "cascaded.yaml"), **fragment}
    fitted = Rubric.model_validate(doc)
    assert fitted.cascade is not None
    assert fitted.cascade.stages[0].escalate == Band(kind="band", lo=0.0, hi=0.775)
    assert plot.stat().st_size > 0
    assert '"rubric": "cascaded"' in capsys.readouterr().out


REFERENCED_YAML = CASCADE_YAML.replace("id: cascaded\n", "id: cascaded\nrequires_reference: true\n")


def _calibrate(tmp_path: Path, rows: list[dict[str, object]]) -> tuple[int, list[str]]:
    """Run the command on ``rows`` with a rubric that requires a reference; the exit status
    and the prompts the first stage's judge received."""
    (tmp_path / "rubrics").mkdir()
    rubric_file = tmp_path / "rubrics" / "cascaded.yaml"
    rubric_file.write_text(REFERENCED_YAML)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeJudge() as one, FakeJudge() as two:
        pool = tmp_path / "judges.yaml"
        pool.write_text(json.dumps(fake_pool_doc(one.url, two.url)))
        argv = ["cascade", "calibrate", str(data), "--rubric", str(rubric_file)]
        status = main([*argv, "--rubrics", str(tmp_path / "rubrics"), "--judges", str(pool)])
        return status, [json.dumps(body) for body in one.script.bodies]


def test_each_row_reaches_the_judges_with_its_reference(tmp_path: Path):
    """On the base the reference was dropped: every row was refused, scored no criterion,
    and the sweep read each as a reward of 0."""
    rows = [
        {"prompt": f"q{n}", "completion": "42", "reference": f"ref-{n}", "label": n % 2}
        for n in range(4)
    ]
    status, prompts = _calibrate(tmp_path, rows)
    assert status == 0
    assert len(prompts) == 8  # 4 rows x 2 criteria
    assert all(any(f"ref-{n}" in p for p in prompts) for n in range(4))


def test_a_row_the_rubric_refuses_stops_the_command_naming_it(tmp_path: Path, capsys):
    rows = [{"id": "r1", "prompt": "q", "completion": "42", "label": 1}]
    status, _ = _calibrate(tmp_path, rows)
    assert status == 2
    err = capsys.readouterr().err
    assert "data.jsonl" in err and "'r1'" in err and "reference" in err


def test_rows_whose_last_stage_failed_are_left_out_and_named_not_scored_0(tmp_path: Path, capsys):
    """On the base a row the last stage answered in part stopped the command (a KeyError),
    and one it answered not at all read as a reward of 0, a wrong answer of the judge's.
    Here the second stage's judge answers its first request 400 (not retried): one
    criterion of one row, whichever came first, is left unanswered."""
    (tmp_path / "rubrics").mkdir()
    rubric_file = tmp_path / "rubrics" / "cascaded.yaml"
    rubric_file.write_text(CASCADE_YAML)
    data = tmp_path / "data.jsonl"
    rows = [{"id": f"r{n}", "prompt": f"q{n}", "completion": "yes", "label": 1} for n in range(4)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = tmp_path / "fit.json"
    with FakeJudge() as one, FakeJudge() as two:
        pool = tmp_path / "judges.yaml"
        pool.write_text(json.dumps(fake_pool_doc(one.url, two.url)))
        argv = ["cascade", "calibrate", str(data), "--rubric", str(rubric_file)]
        argv += ["--rubrics", str(tmp_path / "rubrics"), "--judges", str(pool)]
        two.script.queue.append("400")
        main([*argv, "--json", str(report), "--max-disagreement", "0.5"])
        result = json.loads(report.read_text())
        assert result["items"] == 3 and len(result["dropped"]) == 1, result
        # Every answer is yes at p = 0.8 and every label 1: a row read as 0 would be wrong.
        assert result["last_stage_accuracy"] == 1.0
        assert f"failed: 1 ({result['dropped'][0]})" in capsys.readouterr().err
        two.script.default = "400"
        assert main(argv) == 2
    assert "failed on all 4 rows" in capsys.readouterr().err
