"""``rewardsvc eval`` and ``rewardsvc label``: metrics by hand, the report, labelling, resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from bench import short_answers
from rewardsvc.cli import main
from rewardsvc.core.rubric import Rubric
from rewardsvc.evaluation import metrics, report, runner
from rewardsvc.evaluation.scorers import RemoteScorer

ROOT = Path(__file__).resolve().parent.parent
POOL = ROOT / "deploy" / "cpu-judge" / "judges.yaml"
DATA = ROOT / "rubrics" / "data"

# A tiny fixed pointwise set, with its figures computed by hand below.
REWARDS = [0.9, 0.7, 0.4, 0.2, 0.6]
LABELS = [1, 0, 1, 0, 0]


def test_metrics_by_hand() -> None:
    # >= 0.5 predicts [1, 1, 0, 0, 1]; agrees with the labels on rows 1 and 4.
    assert metrics.accuracy(REWARDS, LABELS) == pytest.approx(2 / 5)
    # Positives {0.9, 0.4} against negatives {0.7, 0.2, 0.6}: 0.9 beats 3, 0.4 beats 1.
    assert metrics.roc_auc(REWARDS, LABELS) == pytest.approx(4 / 6)
    # Best cut 0.8: predicted [1,0,0,0,0]; agreement 0.8, chance 0.2*0.4 + 0.8*0.6 = 0.56.
    kappa, threshold = metrics.best_kappa(REWARDS, LABELS)
    assert threshold == pytest.approx(0.8)
    assert kappa == pytest.approx((0.8 - 0.56) / (1 - 0.56))
    # One reward per bin: mean |r - y| = (0.1 + 0.7 + 0.6 + 0.2 + 0.6) / 5.
    assert metrics.calibration_error(REWARDS, LABELS) == pytest.approx(2.2 / 5)
    assert metrics.pairwise_accuracy([0.8, 0.4, 0.5]) == pytest.approx(0.5)
    assert metrics.roc_auc([0.1, 0.2], [1, 1]) is None


def test_bootstrap_brackets_the_value_and_is_seeded() -> None:
    xs = [0.1 * k for k in range(10)]
    ys = [1 if x > 0.45 else 0 for x in xs]
    low, high = metrics.bootstrap(metrics.accuracy, xs, ys, resamples=200)
    assert low <= metrics.accuracy(xs, ys) <= high
    assert metrics.bootstrap(metrics.accuracy, xs, ys, resamples=200) == (low, high)


RUBRIC = Rubric.model_validate(
    {"id": "stub", "criteria": [{"id": "c", "text": "Good."}], "judges": ["j1"]}
)
# Pairs: P(chosen better) over both orders, and a +0.2 pull towards whatever is shown first.
PAIR_P = {"p1": 0.8, "p2": 0.4, "p3": 0.5}
PAIR_REWARDS = {"p1": (0.9, 0.1), "p2": (0.3, 0.6), "p3": (0.5, 0.5)}


class StubScorer:
    """Fixed verdicts, in the service's wire shapes."""

    rubric = RUBRIC

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = {r["id"]: r for r in rows}
        self.pairs_seen: list[str] = []

    async def rewards(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        out = []
        for it in items:
            base, _, side = it["id"].partition(":")
            if side:
                value = PAIR_REWARDS[base][0 if side == "chosen" else 1]
            else:
                value = REWARDS[int(base) - 1]
            out.append(
                {"id": it["id"], "reward": value, "flags": [], "judges": {"j1": {"score": value}}}
            )
        return {"results": out}

    async def preferences(self, pairs: list[dict[str, Any]], margin: float) -> dict[str, Any]:
        out = []
        for pair in pairs:
            self.pairs_seen.append(pair["id"])
            row = self.rows[pair["id"]]
            p_chosen = PAIR_P[pair["id"]]
            if "chosen" in row:
                a_is_chosen = pair["a"] == row["chosen"]
                base = p_chosen if a_is_chosen else 1 - p_chosen
            else:  # an unlabelled row: the stub's verdict is on a directly
                base = p_chosen
            ab, ba = min(1.0, base + 0.2), max(0.0, base - 0.2)
            same = (ab > 0.5) == (ba > 0.5)
            label = "a" if base > 0.5 + margin else "b" if base < 0.5 - margin else "tie"
            judge = {"p_a_better": base, "orders": {"ab": ab, "ba": ba}, "consistent": same}
            out.append(
                {
                    "id": pair["id"],
                    "label": label,
                    **judge,
                    "status": "ok",
                    "judges": {"j1": judge},
                }
            )
        return {"results": out}

    async def aclose(self) -> None:
        pass


def _point_rows() -> list[dict[str, Any]]:
    return [
        {"id": str(k + 1), "prompt": "q", "completion": f"c{k}", "label": y}
        for k, y in enumerate(LABELS)
    ]


def _pair_rows() -> list[dict[str, Any]]:
    return [{"id": i, "prompt": "q", "chosen": f"good {i}", "rejected": f"bad {i}"} for i in PAIR_P]


async def test_eval_accuracy_matches_the_hand_computation() -> None:
    rows = _point_rows() + _pair_rows()
    result = await runner.evaluate(StubScorer(rows), rows, resamples=100)
    point = result["pointwise"]["scorers"]
    assert set(point) == {"reward", "judge:j1", *(f"rule:{r}" for r in runner.RULES)}
    for scorer in point.values():
        assert scorer["accuracy"]["value"] == pytest.approx(2 / 5)
        assert scorer["roc_auc"]["value"] == pytest.approx(4 / 6)
    pairs = result["pairs"]["scorers"]["reward"]
    # Pointwise: p1 chosen 0.9 > 0.1 wins, p2 0.3 < 0.6 loses, p3 a tie counts half.
    assert pairs["pointwise"]["value"] == pytest.approx(0.5)
    # Both orders: P(chosen) 0.8, 0.4, 0.5 -> 1, 0, 0.5.
    assert pairs["both_orders"]["value"] == pytest.approx(0.5)
    # One order: the first-shown pull decides p2 and p3 by which side was shown first.
    single = 1.0
    single += 1.0 if runner.chosen_first("p2") else 0.0
    single += 1.0 if runner.chosen_first("p3") else 0.0
    assert pairs["single_order"]["value"] == pytest.approx(single / 3)
    # Only p1's orders agree (its lead outweighs the pull).
    assert pairs["position_consistency"]["value"] == pytest.approx(1 / 3)
    table = report.markdown(result)
    assert "| reward | 5 | 0.400 [" in table
    assert "| scorer | pointwise accuracy |" in table


async def test_label_writes_trl_rows_holds_ties_and_resumes(tmp_path: Path) -> None:
    rows = [
        {"id": "p1", "prompt": "q", "a": "A1", "b": "B1"},
        {"id": "p2", "prompt": "q", "a": "A2", "b": "B2"},
        {"id": "p3", "prompt": "q", "a": "A3", "b": "B3"},
    ]
    out, held = tmp_path / "out.jsonl", tmp_path / "held.jsonl"
    scorer = StubScorer(rows)
    counts = await runner.label(scorer, rows[:2], out, held, margin=0.05)
    assert counts == {"skipped": 0, "labelled": 1, "held": 1, "failed": 0}
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"id": "p1", "prompt": "q", "chosen": "A1", "rejected": "B1"}
    ]
    kept = json.loads(held.read_text())
    assert kept["id"] == "p2" and kept["reason"] == "inconsistent"
    counts = await runner.label(scorer, rows, out, held, margin=0.05)
    assert counts["skipped"] == 2 and counts["held"] == 1  # p3: 0.5 is a tie
    assert scorer.pairs_seen == ["p1", "p2", "p3"]


def stub_service(stub: StubScorer, bodies: list[dict[str, Any]]) -> FastAPI:
    """The service's rubric, rewards and preferences routes over ``stub``, recording the
    request bodies in ``bodies``."""
    app = FastAPI()

    @app.get("/v1/rubrics/stub")
    async def rubric() -> dict[str, Any]:
        return {"rubric": RUBRIC.model_dump(mode="json")}

    @app.post("/v1/rewards")
    async def rewards(body: dict[str, Any]) -> dict[str, Any]:
        bodies.append(body)
        return await stub.rewards(body["items"])

    @app.post("/v1/preferences")
    async def preferences(body: dict[str, Any]) -> dict[str, Any]:
        bodies.append(body)
        return await stub.preferences(body["pairs"], body["options"]["margin"])

    return app


async def test_remote_scorer_speaks_the_routes() -> None:
    rows = _point_rows() + _pair_rows()
    stub = StubScorer(rows)
    bodies: list[dict[str, Any]] = []
    app = stub_service(stub, bodies)

    remote = RemoteScorer("http://svc", "stub")
    remote.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc")
    await remote.load()
    result = await runner.evaluate(remote, rows, resamples=0)
    await remote.aclose()
    assert result["pointwise"]["scorers"]["reward"]["accuracy"]["value"] == pytest.approx(2 / 5)
    assert result["pairs"]["scorers"]["reward"]["both_orders"]["value"] == pytest.approx(0.5)
    assert bodies[0]["rubric"] == "stub"
    assert bodies[0]["options"] == {"use_cache": False, "criteria_format": "rewardsvc"}
    assert {"rubric", "pairs", "options"} == set(bodies[-1])


def test_shipped_data_is_well_formed() -> None:
    pairs = runner.read_rows(DATA / "preferences-small.jsonl")
    points = runner.read_rows(DATA / "pointwise-small.jsonl")
    unlabelled = runner.read_rows(DATA / "pairs-unlabelled.jsonl")
    assert len(pairs) == 24 and all(r["chosen"] != r["rejected"] for r in pairs)
    assert sorted({r["label"] for r in points}) == [0, 1]
    assert all({"a", "b"} <= set(r) for r in unlabelled)
    assert len({r["id"] for r in pairs + points + unlabelled}) == 60


def test_the_short_answers_are_the_generators_and_label_right_and_wrong() -> None:
    """``short-answers.jsonl`` is what ``bench.short_answers`` writes (so an edit to one
    without the other fails), a right and a wrong answer per question, each ending on
    its own final answer."""
    assert (DATA / "short-answers.jsonl").read_text() == short_answers.text()
    rows = runner.labelled_rows(DATA / "short-answers.jsonl")
    assert len(rows) == 300 and sum(r["label"] for r in rows) == 150
    for right, wrong in zip(rows[::2], rows[1::2], strict=True):
        assert right["prompt"] == wrong["prompt"] and right["reference"] == wrong["reference"]
        assert right["completion"].rstrip(".").endswith(right["reference"])
        assert not wrong["completion"].rstrip(".").endswith(" " + right["reference"])


@pytest.mark.judges
def test_eval_command_on_the_real_judges(
    cpu_pool: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.jsonl"
    rows = runner.read_rows(DATA / "pointwise-small.jsonl")[:2]
    rows += runner.read_rows(DATA / "preferences-small.jsonl")[:2]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    png = tmp_path / "eval.png"
    argv = ["eval", str(data), "--rubric", str(DATA / "pref-quality.yaml")]
    argv += ["--judges", str(POOL), "--rubrics", str(ROOT / "rubrics")]
    argv += ["--plot", str(png), "--bootstrap", "50", "--no-progress"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "Pointwise labels: 2 rows" in table and "Preference pairs: 2 rows" in table
    assert "| reward |" in table and "| rule:min |" in table
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


async def test_rows_hand_their_own_criteria_to_every_item_and_pair() -> None:
    criteria = [{"criterion": "Names the capital.", "points": 3}]
    rows = [{**r, "criteria": criteria} for r in _point_rows()[:1] + _pair_rows()[:1]]
    stub = StubScorer(rows)
    bodies: list[dict[str, Any]] = []
    app = stub_service(stub, bodies)

    remote = RemoteScorer("http://svc", "stub", criteria_format="healthbench")
    remote.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc")
    await remote.load()
    await runner.evaluate(remote, rows, resamples=0)
    await remote.aclose()
    sent = [x for b in bodies for x in b.get("items", b.get("pairs", []))]
    # The pointwise item, the pair's two items, and the pair itself.
    assert len(sent) == 4 and all(x["criteria"] == criteria for x in sent)
    assert all(b["options"]["criteria_format"] == "healthbench" for b in bodies)
