"""``rewardsvc cascade calibrate``: fit a cascaded rubric's bands on a labelled file.

Every pointwise row (``{prompt, completion, label}``, the ``rewardsvc eval`` format, with
its ``reference`` or per-prompt ``criteria`` when it has them) is scored once by every
stage (all stages always, the cache bypassed), each stage as a rubric of its own judges;
then :mod:`.cascade_sweep` replays the cascade offline for every band of a grid, picks the
band meeting the target and writes the rubric's ``cascade`` section with the fitted bands
(YAML), the curve (JSON) and a plot like ``rewardsvc eval``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from rewardsvc.application.targets import score_batch
from rewardsvc.core import aggregate
from rewardsvc.core.cascade import Band, Cascade, Stage, stage_answer
from rewardsvc.core.rubric import JudgeRef, Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.evaluation.cascade_sweep import Point, Reward, Scored
from rewardsvc.evaluation.runner import carried
from rewardsvc.protocol.rewards import RewardOptions, RewardResult
from rewardsvc.scoring.engine import Engine


class RefusedRow(ValueError):
    """A labelled row the rubric refuses (e.g. no ``reference`` where one is required)."""


class NothingScored(ValueError):
    """No labelled row was answered by the last stage: its judges failed on every one."""


def stage_rubric(rubric: Rubric, stage: Stage) -> Rubric:
    """``rubric`` scored by ``stage``'s judges alone, without its cascade."""
    judges = [JudgeRef(name=name) for name in stage.judges]
    return rubric.model_copy(update={"cascade": None, "judges": judges, "min_judges": 1})


def stage_scores(stage: Stage, result: RewardResult) -> dict[str, float]:
    """``stage``'s answer on each criterion of one scored item (its judges' mean, as the
    cascade merges them); a criterion the stage failed is left out."""
    verdicts: dict[str, list[Verdict]] = {}
    for judge in result.judges.values():
        for cid, c in judge.criteria.items():
            verdict = Verdict(c.score, c.variance, c.p) if c.score is not None else None
            verdicts.setdefault(cid, []).append(verdict or Verdict.failed(c.error or "failed"))
    answers = {cid: stage_answer(stage, vs).verdict.score for cid, vs in verdicts.items()}
    return {cid: s for cid, s in answers.items() if s is not None}


@dataclass(frozen=True)
class StageScores:
    """The labelled rows as every stage answered them: ``items[k]`` is row ``kept[k]``.

    A row whose last stage left a criterion unanswered (its judges failed, after their
    retries) is ``dropped`` (its id): the live cascade would give it no reward, and replayed
    as a reward of 0 it would read as the judge's wrong answer."""

    items: list[Scored]
    kept: list[int]
    dropped: list[str]


async def score_stages(
    engine: Engine, rubric: Rubric, rows: Sequence[Mapping[str, Any]], batch: int = 8
) -> StageScores:
    """Each labelled row as every stage of ``rubric``'s cascade answered it."""
    cascade = _cascade(rubric)
    per_stage: list[list[dict[str, float]]] = []
    options = RewardOptions(use_cache=False)
    for stage in cascade.stages:
        scored: list[dict[str, float]] = []
        only = stage_rubric(rubric, stage)
        for start in range(0, len(rows), batch):
            chunk = [
                {"id": str(r["id"]), "prompt": r["prompt"], "completion": r["completion"]}
                | carried(r)
                for r in rows[start : start + batch]
            ]
            reply = await score_batch(engine, only, chunk, options)
            for result in reply.results:
                # A refused row scores no criterion: replayed, it would read as a reward of 0.
                if result.status == "rejected":
                    raise RefusedRow(f"row {result.id!r} was refused: {result.error}")
                scored.append(stage_scores(stage, result))
        per_stage.append(scored)
    out = StageScores([], [], [])
    for n, row in enumerate(rows):
        stages = tuple(s[n] for s in per_stage)
        if answered(rubric, stages[-1]):
            out.items.append(Scored(float(row["label"]), stages))
            out.kept.append(n)
        else:
            out.dropped.append(str(row["id"]))
    if rows and not out.items:
        raise NothingScored(f"the last stage's judges failed on all {len(rows)} rows")
    return out


def answered(rubric: Rubric, scores: Mapping[str, float]) -> bool:
    """Whether ``scores`` hold every criterion the rubric's reward is made of."""
    try:
        aggregate.judge_score(rubric, scores)
    except KeyError:
        return False
    return True


def reward_of(rubric: Rubric) -> Reward:
    """The rubric's reward (before transforms) from its criteria's scores (every one of
    them: :func:`answered`)."""

    def reward(scores: Mapping[str, float]) -> float:
        return aggregate.judge_score(rubric, scores)[0]

    return reward


def _cascade(rubric: Rubric) -> Cascade:
    if rubric.cascade is None:
        raise ValueError(f"rubric {rubric.id!r} has no cascade to calibrate")
    return rubric.cascade


def fitted(rubric: Rubric, chosen: Sequence[Point | None]) -> dict[str, Any]:
    """The rubric's ``cascade`` section with the chosen bands (a stage where no band met
    the target keeps its rule)."""
    cascade = _cascade(rubric)
    stages = []
    for stage, point in zip(cascade.stages, [*chosen, None], strict=True):
        if point is not None:
            stage = stage.model_copy(
                update={"escalate": Band(kind="band", lo=point.lo, hi=point.hi)}
            )
        stages.append(stage)
    section = cascade.model_copy(update={"stages": stages})
    return {"cascade": section.model_dump(mode="json", exclude_none=True)}


def report(
    rubric: Rubric, scores: StageScores, chosen: Sequence[Point | None], curves: Any
) -> dict[str, Any]:
    """The calibration as JSON: the chosen bands, the curve of every stage, the last stage
    alone's accuracy and the rows left out."""
    reward = reward_of(rubric)
    items = scores.items
    alone = sum((reward(i.stages[-1]) >= 0.5) == (i.label >= 0.5) for i in items)
    return {
        "rubric": rubric.id,
        "items": len(items),
        "dropped": scores.dropped,
        "last_stage_accuracy": alone / max(1, len(items)),
        "chosen": [None if p is None else asdict(p) for p in chosen],
        "curves": [[asdict(p) for p in curve] for curve in curves],
        "fragment": fitted(rubric, chosen),
    }


def write_fragment(result: Mapping[str, Any], path: Path) -> None:
    """Write the fitted ``cascade`` section as YAML to ``path``."""
    yaml = YAML()
    yaml.default_flow_style = False
    with path.open("w", encoding="utf-8") as f:
        f.write(f"# The cascade of {result['rubric']}, fitted by rewardsvc cascade calibrate.\n")
        yaml.dump(result["fragment"], f)


def plot(result: Mapping[str, Any], path: Path) -> None:
    """A PNG of each stage's curve: disagreement and accuracy against escalation share,
    the chosen band marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = result["curves"]
    fig, axes = plt.subplots(1, max(1, len(curves)), figsize=(6 * max(1, len(curves)), 4.5))
    for k, curve in enumerate(curves):
        ax = axes[k] if len(curves) > 1 else axes
        xs = [p["escalation"] for p in curve]
        ax.scatter(xs, [p["disagreement"] for p in curve], s=6, label="disagreement w/ last")
        ax.scatter(xs, [1 - p["accuracy"] for p in curve], s=6, label="error vs labels")
        chosen = result["chosen"][k]
        if chosen is not None:
            ax.axvline(chosen["escalation"], color="k", lw=0.8, ls="--", label="chosen band")
        ax.axhline(1 - result["last_stage_accuracy"], color="r", lw=0.8, label="last alone error")
        ax.set_xlabel(f"stage {k + 1}: escalation share")
        ax.set_ylabel("share of items")
        ax.legend(fontsize=8)
    fig.suptitle(f"cascade calibration: {result['rubric']} ({result['items']} items)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
