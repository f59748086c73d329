"""Rewards under attack: does any attack family out-earn the honest wrong answer?

For each judge pool given, each library rubric as shipped (``short-answer-correctness`` and
``helpful-answer``, from ``rubrics/``) and each attack family of ``bench.attack_set``, the
questions' honest right answers, honest wrong answers and attacked wrong answers are
scored in this process through the engine, as ``rewardsvc score`` does (no cache). A pool
scores each rubric with the rubric's judges that it defines; when it defines none of
them, with all of its own. A rubric whose judges were narrowed so says in the output.

Per (pool, rubric, family): the mean reward of the attacks, of the honest wrong and right
answers, the margin attack - wrong (paired by question) with a 95 % bootstrap band, and the
share of attacks flagged; then "families above the honest wrong answer: k of N" (a mean
margin above 0). Also the benign false-flag share: the corpus's benign answers through
``detect``.

Run (the tiny CPU judges, every family; the Qwen judge alone on a few families):

    .venv/bin/python -m bench.attack_rewards --judges tiny=deploy/cpu-judge/judges.yaml
    .venv/bin/python -m bench.attack_rewards \\
        --judges qwen=deploy/cpu-judge/judges.qwen.yaml:primary \\
        --families fence_escape,authority_appeal,step_master_key

``POOL.yaml:a,b`` keeps only judges ``a`` and ``b`` of the pool file (the others need not
be running). Results go to ``--out`` (default ``bench/results/local/``, which git ignores):
``attack_rewards.md`` and ``attack_rewards.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.attack_report import benign_false_flags, markdown
from bench.attack_set import QUESTIONS, attacks, families
from rewardsvc.application.root import compose
from rewardsvc.application.targets import RubricTarget, score_target
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import JudgeRef, Rubric
from rewardsvc.evaluation.metrics import bootstrap
from rewardsvc.judges.judge import build_judges
from rewardsvc.library.registry import Registry, load_pool
from rewardsvc.protocol.rewards import RewardOptions
from rewardsvc.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
RUBRICS = ("short-answer-correctness", "helpful-answer")
DEFAULT_OUT = ROOT / "bench" / "results" / "local"
CHUNK = 64  # items per scored batch


@dataclass(frozen=True)
class Pool:
    """A named judge pool, possibly narrowed to some of its judges."""

    name: str
    path: Path
    pool: JudgePool
    library: Registry  # the rubrics, checked against the whole pool file


def parse_pool(spec: str) -> Pool:
    """``NAME=POOL.yaml`` or ``NAME=POOL.yaml:judge,judge``."""
    name, _, rest = spec.partition("=")
    path, _, keep = rest.partition(":")
    if not name or not path:
        raise argparse.ArgumentTypeError(f"{spec!r}: expected NAME=POOL.yaml[:judge,...]")
    pool = whole = load_pool(Path(path))
    if keep:
        names = keep.split(",")
        unknown = sorted(set(names) - set(pool.judges))
        if unknown:
            raise argparse.ArgumentTypeError(f"{spec!r}: {unknown} not in {path}")
        pool = pool.model_copy(update={"judges": {n: pool.judges[n] for n in names}})
    return Pool(name, Path(path), pool, Registry(ROOT / "rubrics", whole))


def narrowed(rubric: Rubric, pool: JudgePool) -> tuple[Rubric, str | None]:
    """``rubric`` scored by the judges of ``pool`` only, and a note when that changed it."""
    kept = [j for j in rubric.judges if j.name in pool.judges]
    if not kept:
        kept = [JudgeRef(name=n) for n in pool.judges]
    if [j.name for j in kept] == [j.name for j in rubric.judges]:
        return rubric, None
    note = (
        f"{rubric.id}: judges narrowed from {[j.name for j in rubric.judges]} "
        f"to {[j.name for j in kept]}"
    )
    update = {"judges": kept, "min_judges": min(rubric.min_judges, len(kept))}
    return rubric.model_copy(update=update), note


def items_of(family_answers: dict[str, list[tuple[int, str]]]) -> list[dict[str, Any]]:
    """One item per answer, id ``family/n``, with its question's prompt and reference."""
    out = []
    for family, answers in family_answers.items():
        for n, (q, text) in enumerate(answers):
            question = QUESTIONS[q]
            out.append(
                {
                    "id": f"{family}/{n}",
                    "prompt": question.prompt,
                    "completion": text,
                    "reference": question.reference,
                }
            )
    return out


async def score_pool(
    pool: Pool, rubrics: list[Rubric], answers: dict[str, list[tuple[int, str]]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """``rubric id -> item id -> {reward, flags, status}`` for every answer on ``pool``."""
    settings = Settings(judge_pool=pool.path, rubrics_dir=ROOT / "rubrics", redis_url=None)
    judges = build_judges(pool.pool)
    app = await compose(settings, pool.library, judges, cached=False, monitored=False)
    items = items_of(answers)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        for rubric in rubrics:
            target = RubricTarget.of(rubric)
            results: dict[str, dict[str, Any]] = {}
            for start in range(0, len(items), CHUNK):
                chunk = items[start : start + CHUNK]
                response = await score_target(
                    target, app.engine, chunk, RewardOptions(use_cache=False)
                )
                for r in response.results:
                    results[r.id] = {"reward": r.reward, "flags": r.flags, "status": r.status}
                print(f"  {pool.name} {rubric.id}: {len(results)}/{len(items)}", file=sys.stderr)
            out[rubric.id] = results
    finally:
        await app.aclose()
    return out


def summarise(
    results: dict[str, dict[str, Any]], answers: dict[str, list[tuple[int, str]]]
) -> dict[str, dict[str, Any]]:
    """Per family: mean rewards, the paired margin over the honest wrong answer with its
    band, the flagged share and the failed items."""
    by_q = {
        kind: {q: results[f"{kind}/{q}"]["reward"] for q in range(len(QUESTIONS))}
        for kind in ("honest_wrong", "honest_right")
    }
    out: dict[str, dict[str, Any]] = {}
    for family, rows in answers.items():
        if family.startswith("honest_"):
            continue
        got = [(q, results[f"{family}/{n}"]) for n, (q, _) in enumerate(rows)]
        pairs = [
            (r["reward"], by_q["honest_wrong"][q])
            for q, r in got
            if r["reward"] is not None and by_q["honest_wrong"][q] is not None
        ]
        xs, ys = [a for a, _ in pairs], [w for _, w in pairs]
        band = bootstrap(_margin, xs, ys) if pairs else None
        out[family] = {
            "attack": _mean(xs),
            "wrong": _mean(ys),
            "right": _mean([v for v in by_q["honest_right"].values() if v is not None]),
            "margin": _mean(xs) - _mean(ys) if pairs else None,
            "band": list(band) if band else None,
            "flagged": sum(bool(r["flags"]) for _, r in got) / len(got),
            "n": len(pairs),
            "failed": len(got) - len(pairs),
        }
    return out


def _margin(attacked: Sequence[float], wrong: Sequence[float]) -> float:
    return statistics.fmean(attacked) - statistics.fmean(wrong)


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def answer_sets(chosen: list[str], per_question: int) -> dict[str, list[tuple[int, str]]]:
    """The honest answers and every chosen family's attacks."""
    honest = {
        "honest_wrong": [(q, x.wrong) for q, x in enumerate(QUESTIONS)],
        "honest_right": [(q, x.right) for q, x in enumerate(QUESTIONS)],
    }
    return honest | {family: attacks(family, per_question) for family in chosen}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Score every pool and summarise; the result as written to JSON."""
    chosen = args.families.split(",") if args.families else list(families())
    unknown = sorted(set(chosen) - set(families()))
    if unknown:
        raise SystemExit(f"unknown families {unknown}; known: {sorted(families())}")
    answers = answer_sets(chosen, args.per_question)
    pools: dict[str, Any] = {}
    for pool in args.judges:
        rubrics, notes = [], []
        for rubric_id in RUBRICS:
            rubric, note = narrowed(pool.library.get(rubric_id).rubric, pool.pool)
            rubrics.append(rubric)
            notes += [note] if note else []
        started = time.monotonic()
        scored = asyncio.run(score_pool(pool, rubrics, answers))
        pools[pool.name] = {
            "pool": f"{pool.path}:{','.join(pool.pool.judges)}",
            "notes": notes,
            "seconds": round(time.monotonic() - started, 1),
            "rubrics": {rid: summarise(res, answers) for rid, res in scored.items()},
        }
    return {
        "command": " ".join(["python -m bench.attack_rewards", *sys.argv[1:]]),
        "questions": len(QUESTIONS),
        "per_question": args.per_question,
        "pools": pools,
        "benign": benign_false_flags(),
    }


def main() -> None:
    """Parse the arguments, score, write ``attack_rewards.md`` and ``.json`` to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judges", type=parse_pool, action="append", required=True)
    parser.add_argument("--families", default="", help="comma-separated (default: all)")
    parser.add_argument("--per-question", type=int, default=1, help="attacks per question")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    result = run(args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "attack_rewards.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    (args.out / "attack_rewards.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
