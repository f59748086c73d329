"""A cascade of the local CPU judges: a first judge (``--first``, SmolLM2 by default), a
second (``--second``: Gemma 3 270M, or the Qwen2.5-Coder 1.5B) only for the questions the
first is unsure of.

On one of the project's labelled sets (``--data``):

- ``pref``: ``rubrics/data/pointwise-small.jsonl`` and each pair of
  ``preferences-small.jsonl`` as a good and a bad answer, 72 items, the 2 criteria of
  ``rubrics/data/pref-quality.yaml``;
- ``short-answers``: ``rubrics/data/short-answers.jsonl`` (``bench/short_answers.py``),
  150 arithmetic questions with a right and a wrong answer each, 300 items, scored by
  ``rubrics/short-answer-correctness.yaml`` against their references;

in one run:

1. every item scored by both stages once (``rewardsvc cascade calibrate``'s scoring);
2. the band of the first stage fitted on the items of the even-numbered questions
   (``--max-disagreement``, default 0.02), the curve of every band written beside;
3. the cascade with that band served live (the engine, cache off) on the items of the
   odd-numbered questions, held out: the share of second-stage questions saved, the
   disagreement of its rewards with the second stage alone, and the accuracy against the
   labels of both;
4. the second stage alone asked again on the held-out items (cache off): its
   disagreement with its own first answers, the floor under any cascade's disagreement.

Needs the servers of both stages up (``deploy/cpu-judge/cpujudge.sh start`` for SmolLM2
and Gemma; ``cpujudge.sh start qwen-0.5b qwen-1.5b`` for the Qwen pair, with the default
judges stopped: the 1.5B does not fit in RAM beside them)::

    .venv/bin/python -m bench.cascade --out bench/results
    .venv/bin/python -m bench.cascade --first qwen-0.5b --second qwen-1.5b \\
        --name cascade-qwen --out bench/results
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.judge_quality import CPU, DATA, read
from bench.outputs import add_out_argument, write_results
from rewardsvc.application.targets import score_batch
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.evaluation import cascade_calibrate as cal
from rewardsvc.evaluation import cascade_sweep
from rewardsvc.evaluation.metrics import bootstrap
from rewardsvc.evaluation.runner import carried
from rewardsvc.judges.judge import build_judges
from rewardsvc.protocol.rewards import RewardOptions
from rewardsvc.scoring.engine import Engine

# A stage's judge: the pool file of deploy/cpu-judge and the judge's name in it.
JUDGES = {
    "smollm2": (CPU / "judges.yaml", "primary"),
    "gemma": (CPU / "judges.yaml", "secondary"),
    "qwen-0.5b": (CPU / "judges.qwen.yaml", "secondary"),
    "qwen-1.5b": (CPU / "judges.qwen.yaml", "primary"),
}


def pref_rows() -> list[dict[str, Any]]:
    """The ``pref`` set: the pointwise rows, then each pair's two answers."""
    out = [json.loads(line) for line in (DATA / "pointwise-small.jsonl").read_text().splitlines()]
    for line in (DATA / "preferences-small.jsonl").read_text().splitlines():
        pair = json.loads(line)
        for key, label in (("chosen", 1), ("rejected", 0)):
            out.append(
                {
                    "id": f"{pair['id']}:{key}",
                    "prompt": pair["prompt"],
                    "completion": pair[key],
                    "label": label,
                }
            )
    return out


def short_answer_rows() -> list[dict[str, Any]]:
    """The ``short-answers`` set, each row with its reference."""
    return [json.loads(line) for line in (DATA / "short-answers.jsonl").read_text().splitlines()]


# A labelled set: its rows and the rubric that scores them.
DATASETS = {
    "pref": (pref_rows, DATA / "pref-quality.yaml"),
    "short-answers": (short_answer_rows, DATA.parent / "short-answer-correctness.yaml"),
}


def fold(item_id: str) -> int:
    """0 (fit) or 1 (held out): by question, so that a question's good and bad answers
    fall in one fold and each fold holds both labels (``point-01a`` and ``point-01b``,
    ``pref-01:chosen`` and ``pref-01:rejected`` share question 01)."""
    number = int("".join(ch for ch in item_id.split(":")[0] if ch.isdigit()))
    return number % 2


def pool_entry(judge: str) -> dict[str, Any]:
    """The pool entry of one of :data:`JUDGES`, unweighted (a stage has one judge)."""
    path, key = JUDGES[judge]
    entry = dict(read(path)["judges"][key])
    entry.pop("weight", None)
    return entry


def setup(first: str, second: str, rubric_path: Path) -> tuple[JudgePool, Rubric]:
    """The two-judge pool (``small``, ``big``) and the cascaded rubric."""
    small, big = pool_entry(first), pool_entry(second)
    pool = JudgePool.model_validate({"judges": {"small": small, "big": big}})
    doc = read(rubric_path)
    doc["judges"] = ["small", "big"]
    doc["cascade"] = {
        "stages": [
            {"judges": ["small"], "escalate": {"kind": "band", "lo": 0.0, "hi": 1.0}},
            {"judges": ["big"]},
        ]
    }
    return pool, Rubric.model_validate(doc, context={"judge_names": set(pool.judges)})


async def run(first: str, second: str, max_disagreement: float, data_set: str) -> dict[str, Any]:
    """Score, fit on the even items, serve the fitted cascade on the odd ones, ask the
    second stage again on the odd ones."""
    rows, rubric_path = DATASETS[data_set]
    pool, rubric = setup(first, second, rubric_path)
    engine = Engine(build_judges(pool))
    data = rows()
    try:
        started = time.monotonic()
        scores = await cal.score_stages(engine, rubric, data)
        scoring_s = time.monotonic() - started
        scored, data = scores.items, [data[n] for n in scores.kept]
        reward = cal.reward_of(rubric)
        folds = [fold(r["id"]) for r in data]
        fit_on = [i for i, f in zip(scored, folds, strict=True) if f == 0]
        held = [i for i, f in zip(scored, folds, strict=True) if f == 1]
        chosen, curves = cascade_sweep.fit(fit_on, reward, max_disagreement=max_disagreement)
        fitted = cal.fitted(rubric, chosen)
        live_rubric = Rubric.model_validate(
            {**rubric.model_dump(mode="json", exclude_unset=True), **fitted},
            context={"judge_names": set(pool.judges)},
        )
        held_rows = [r for r, f in zip(data, folds, strict=True) if f == 1]
        items = [
            {"id": r["id"], "prompt": r["prompt"], "completion": r["completion"]} | carried(r)
            for r in held_rows
        ]
        started = time.monotonic()
        live = await score_batch(engine, live_rubric, items, RewardOptions(use_cache=False))
        live_s = time.monotonic() - started
        again = await ask_again(engine, rubric, items)
    finally:
        await engine.aclose()
    result = summarize(second, reward, held, live, chosen, curves, fitted, scoring_s, live_s)
    # An item the second ask left unanswered (its judges failed) has no answer to compare.
    pairs = [(i, a) for i, a in zip(held, again, strict=True) if cal.answered(rubric, a)]
    result["retest_disagreement"] = 1 - agreement(
        [reward(i.stages[-1]) >= 0.5 for i, _ in pairs], [reward(a) >= 0.5 for _, a in pairs]
    )
    result["retest_unanswered"] = len(held) - len(pairs)
    result["dropped"] = scores.dropped
    result["data"] = data_set
    result["rubric"] = rubric.id
    result["first"] = first
    result["max_disagreement"] = max_disagreement
    result["fit_items"] = len(fit_on)
    result["budgets"] = budgets(curves[0], held, reward)
    result["fit_second_accuracy"] = sum(
        (reward(i.stages[-1]) >= 0.5) == (i.label >= 0.5) for i in fit_on
    ) / max(1, len(fit_on))
    return result


async def ask_again(
    engine: Engine, rubric: Rubric, items: list[dict[str, Any]]
) -> list[dict[str, float]]:
    """The last stage's answers to ``items``, asked again with the cache off."""
    assert rubric.cascade is not None
    stage = rubric.cascade.stages[-1]
    only = cal.stage_rubric(rubric, stage)
    reply = await score_batch(engine, only, items, RewardOptions(use_cache=False))
    return [cal.stage_scores(stage, result) for result in reply.results]


def summarize(
    second: str,
    reward: Any,
    held: list[cascade_sweep.Scored],
    live: Any,
    chosen: Any,
    curves: Any,
    fitted: Any,
    scoring_s: float,
    live_s: float,
) -> dict[str, Any]:
    """The figures of the held-out run."""
    alone = [reward(i.stages[-1]) >= 0.5 for i in held]
    cascade = [r.reward is not None and r.reward >= 0.5 for r in live.results]
    labels = [i.label >= 0.5 for i in held]
    first, later = live.usage.stages[0], live.usage.stages[1:]
    escalated = sum(s.questions for s in later)
    n = len(held)
    right = [float(c == y) for c, y in zip(cascade, labels, strict=True)]
    right_alone = [float(a == y) for a, y in zip(alone, labels, strict=True)]
    return {
        "second": second,
        "held_items": n,
        "chosen": [None if p is None else vars(p) for p in chosen],
        "fragment": fitted,
        "second_stage_saved": 1 - escalated / max(1, first.questions),
        "disagreement_with_second_alone": 1 - agreement(alone, cascade),
        "accuracy_cascade": agreement(cascade, labels),
        "accuracy_second_alone": agreement(alone, labels),
        "accuracy_first_alone": agreement([reward(i.stages[0]) >= 0.5 for i in held], labels),
        "accuracy_gap_ci": bootstrap(accuracy_gap, right, right_alone),
        "items": [
            {"label": i.label, "first": reward(i.stages[0]), "second_alone": reward(i.stages[-1])}
            | {"id": r.id, "cascade": r.reward}
            for i, r in zip(held, live.results, strict=True)
        ],
        "unscored": sum(r.reward is None for r in live.results),
        "usage_stages": [vars(s) for s in live.usage.stages],
        "scoring_s": scoring_s,
        "live_s": live_s,
        "curves": [[vars(p) for p in c] for c in curves],
    }


def budgets(
    curve: list[cascade_sweep.Point], held: list[cascade_sweep.Scored], reward: Any
) -> list[dict[str, Any]]:
    """Per escalation budget, the band :func:`cascade_sweep.pick` chooses on the fit items,
    and that band replayed on the held-out items' scores (no further judge calls)."""
    out = []
    for budget in (0.1, 0.25, 0.5, 0.75):
        p = cascade_sweep.pick(curve, max_escalation=budget)
        if p is not None:
            again = cascade_sweep.measure(held, [(p.lo, p.hi)], reward, 0.5, 0)
            out.append({"budget": budget, "fit": vars(p), "held": vars(again)})
    return out


def budget_rows(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown rows of :func:`budgets`."""
    out = []
    for row in rows:
        fit, held = row["fit"], row["held"]
        out.append(
            f"| {row['budget']:.2f} | [{fit['lo']}, {fit['hi']}] | {fit['escalation']:.3f} | "
            f"{fit['disagreement']:.3f} | {fit['accuracy']:.3f} | {held['escalation']:.3f} | "
            f"{held['disagreement']:.3f} | {held['accuracy']:.3f} |"
        )
    return out


def accuracy_gap(right: Sequence[float], right_alone: Sequence[float]) -> float:
    """Accuracy of the cascade minus that of the second stage alone, on the same items."""
    return (sum(right) - sum(right_alone)) / max(1, len(right))


def agreement(a: list[bool], b: list[bool]) -> float:
    """The share of positions where ``a`` and ``b`` agree."""
    return sum(x == y for x, y in zip(a, b, strict=True)) / max(1, len(a))


def pct(value: float) -> str:
    """A share as a percentage."""
    return f"{100 * value:.1f} %"


def gap(band: list[float] | None) -> str:
    """A bootstrap interval in accuracy points."""
    return "undefined" if band is None else f"[{100 * band[0]:+.1f}, {100 * band[1]:+.1f}] points"


def markdown(result: dict[str, Any], command: str) -> str:
    """The results page."""
    chosen = result["chosen"][0]
    band = "none met the target" if chosen is None else f"[{chosen['lo']}, {chosen['hi']}]"
    return "\n".join(
        [
            f"# Cascade: {result['first']} -> {result['second']} on `{result['data']}` "
            f"(rubric {result['rubric']})",
            "",
            f"- Command: `{command}`",
            f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; scoring both stages "
            f"{result['scoring_s']:.0f} s, the live cascade {result['live_s']:.0f} s",
            f"- Band fitted on {result['fit_items']} items (even-numbered questions; max "
            f"disagreement {pct(result['max_disagreement'])}): {band}; measured on the "
            f"{result['held_items']} items of the odd-numbered questions, held out.",
            "",
            "| figure | value |",
            "|---|---|",
            f"| second-stage questions saved | {pct(result['second_stage_saved'])} |",
            "| disagreement of the cascade with the second stage alone | "
            f"{pct(result['disagreement_with_second_alone'])} |",
            f"| accuracy vs labels: cascade | {pct(result['accuracy_cascade'])} |",
            f"| accuracy vs labels: second stage alone | {pct(result['accuracy_second_alone'])} |",
            f"| accuracy vs labels: first stage alone | {pct(result['accuracy_first_alone'])} |",
            "| accuracy gap cascade - second alone, 95 % paired bootstrap interval | "
            f"{gap(result['accuracy_gap_ci'])} |",
            f"| items without a reward | {result['unscored']} |",
            "| the second stage alone asked again: disagreement with its first answers | "
            f"{pct(result['retest_disagreement'])} |",
            "",
            "Along the curve: the band with the least disagreement with the second stage "
            "alone within an escalation budget on the fit items, and the same band replayed "
            "on the held-out items' scores of step 1 (no new judge calls):",
            "",
            "| escalation at most | band | fit: escalation | disagreement | accuracy "
            "| held out: escalation | disagreement | accuracy |",
            "|---|---|---|---|---|---|---|---|",
            *budget_rows(result["budgets"]),
            "",
            "The curve of every band is in the JSON (`curves`) and the PNG.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_out_argument(parser)
    parser.add_argument("--first", choices=list(JUDGES), default="smollm2")
    parser.add_argument("--second", choices=list(JUDGES), default="gemma")
    parser.add_argument("--max-disagreement", type=float, default=0.02)
    parser.add_argument("--data", choices=list(DATASETS), default="pref")
    parser.add_argument("--name", help="results' file name (default cascade-<second>)")
    args = parser.parse_args()
    result = asyncio.run(run(args.first, args.second, args.max_disagreement, args.data))
    name = args.name or f"cascade-{args.second}"
    command = (
        f".venv/bin/python -m bench.cascade --first {args.first} --second {args.second} "
        f"--data {args.data} --max-disagreement {args.max_disagreement} --name {name} "
        f"--out {args.out}"
    )
    write_results(args.out, name, result, markdown(result, command))
    plotted = {
        "rubric": result["rubric"],
        "items": result["fit_items"],
        "chosen": result["chosen"],
        "curves": result["curves"],
        "last_stage_accuracy": result["fit_second_accuracy"],
    }
    cal.plot(plotted, Path(args.out) / f"{name}.png")


if __name__ == "__main__":
    main()
