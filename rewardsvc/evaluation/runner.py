"""``rewardsvc label`` and ``rewardsvc eval``: preference labels and agreement with labels.

``label`` reads ``{"id", "prompt", "a", "b"}`` rows, judges each pair in both orders and
writes TRL preference rows ``{"id", "prompt", "chosen", "rejected"}``; ties and pairs whose
orders disagree go to a separate file with their figures; pairs whose judges failed are
not written, so that the next run (which skips ids already in either file) tries them again.

``evaluate`` scores labelled rows and measures, per judge and per aggregation rule:
pointwise rows (``prompt``, ``completion``, ``label`` 0/1 or a score in [0, 1]) by
accuracy, ROC AUC, Cohen's κ at the best threshold and calibration error; pair rows
(``prompt``, ``chosen``, ``rejected``) by pairwise accuracy from pointwise rewards, from
both-order pairwise judging and from a single order, and by position consistency. Which
of chosen and rejected is shown as ``a`` is decided per row by a hash of its id, so that a
judge's bias towards the first position cannot pass for accuracy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rewardsvc.core import aggregate
from rewardsvc.core import comparative as cmp
from rewardsvc.core.rubric import JudgeRule, Rubric
from rewardsvc.evaluation import metrics
from rewardsvc.evaluation.scorers import Scorer
from rewardsvc.library.yamlfile import InvalidFile, Problem
from rewardsvc.scoring import penalties

RULES: tuple[JudgeRule, ...] = ("mean", "min", "median", "uwo", "softmin")
Progress = Callable[[int], None]


def _numbered(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON object rows of ``path`` with their line numbers; blank lines are skipped and
    a line that is not a JSON object raises :class:`InvalidFile` naming the file and line."""
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidFile([Problem(str(path), n, "", f"not JSON: {exc.msg}")]) from exc
        if not isinstance(row, dict):
            raise InvalidFile([Problem(str(path), n, "", "a row must be a JSON object")])
        yield n, row


def read_rows(path: Path) -> list[dict[str, Any]]:
    """JSON lines; a row without ``id`` gets its line number; blank lines are skipped."""
    return [_with_id(n, row) for n, row in _numbered(path)]


def _with_id(n: int, row: dict[str, Any]) -> dict[str, Any]:
    row["id"] = str(row.get("id", n))
    return row


def labelled_rows(path: Path) -> list[dict[str, Any]]:
    """:func:`read_rows` of a file ``evaluate`` measures: each row pointwise (``completion``
    and ``label``, a number in [0, 1]) or a pair (``chosen`` and ``rejected``); every row
    that is neither is an :class:`InvalidFile` problem naming its line, so that no row is
    silently left out of the figures."""
    rows, problems = [], []
    for n, row in _numbered(path):
        rows.append(_with_id(n, row))
        if "chosen" in row and "rejected" in row:
            continue
        if "completion" not in row or "label" not in row:
            message = "a row needs completion and label, or chosen and rejected"
        elif not _is_label(row["label"]):
            message = f"label must be a number in [0, 1], got {row['label']!r}"
        else:
            continue
        problems.append(Problem(str(path), n, "", message))
    if problems:
        raise InvalidFile(problems)
    return rows


def _is_label(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


def _ids(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    return {str(json.loads(line)["id"]) for line in path.read_text().splitlines() if line.strip()}


def _chunks(rows: Sequence[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    for k in range(0, len(rows), size):
        yield list(rows[k : k + size])


CARRIED = ("reference", "criteria")
"""The optional columns a row hands to each item or pair made of it (a per-prompt rubric's
``criteria`` as ``rubrics import`` and ``rubrics generate`` write them)."""


def carried(row: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`CARRIED` columns ``row`` has."""
    return {key: row[key] for key in CARRIED if row.get(key) is not None}


def _pair(row: dict[str, Any], a: str, b: str) -> dict[str, Any]:
    return {"id": row["id"], "prompt": row["prompt"], "a": row[a], "b": row[b], **carried(row)}


async def label(
    scorer: Scorer,
    rows: Sequence[dict[str, Any]],
    out: Path,
    held: Path,
    *,
    margin: float = cmp.DEFAULT_MARGIN,
    batch: int = 8,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Label ``rows`` into ``out`` (chosen/rejected) and ``held`` (ties, inconsistent);
    rows whose id is already in either file are skipped. Returns counts."""
    done = _ids(out) | _ids(held)
    todo = [r for r in rows if r["id"] not in done]
    counts = {"skipped": len(rows) - len(todo), "labelled": 0, "held": 0, "failed": 0}
    for chunk in _chunks(todo, batch):
        reply = await scorer.preferences([_pair(r, "a", "b") for r in chunk], margin)
        with out.open("a", encoding="utf-8") as good, held.open("a", encoding="utf-8") as other:
            for row, result in zip(chunk, reply["results"], strict=True):
                if result["p_a_better"] is None:
                    counts["failed"] += 1
                    continue
                if result["label"] == "tie" or not result["consistent"]:
                    reason = "tie" if result["label"] == "tie" else "inconsistent"
                    record = {**_pair(row, "a", "b"), **_figures(result), "reason": reason}
                    other.write(json.dumps(record, ensure_ascii=False) + "\n")
                    counts["held"] += 1
                    continue
                win, lose = ("a", "b") if result["label"] == "a" else ("b", "a")
                record = {
                    "id": row["id"],
                    "prompt": row["prompt"],
                    "chosen": row[win],
                    "rejected": row[lose],
                }
                good.write(json.dumps(record, ensure_ascii=False) + "\n")
                counts["labelled"] += 1
        if progress is not None:
            progress(len(chunk))
    return counts


def _figures(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("label", "p_a_better", "orders", "consistent")
    return {k: result[k] for k in keys}


def chosen_first(row_id: str) -> bool:
    """Whether the chosen completion is shown as ``a`` for this row (by a hash of its id)."""
    return hashlib.sha256(row_id.encode()).digest()[0] % 2 == 0


def scorer_rewards(rubric: Rubric, result: dict[str, Any], completion: str) -> dict[str, float]:
    """Every reward the row gives: as served, per judge, and per aggregation rule recomputed
    from the judges' scores (with the rubric's transforms and min_judges)."""
    out: dict[str, float] = {}
    if result.get("reward") is not None:
        out["reward"] = result["reward"]
    scores = {n: j["score"] for n, j in result.get("judges", {}).items() if j["score"] is not None}
    for name, score in scores.items():
        out[f"judge:{name}"] = score
    if len(scores) < rubric.min_judges or not scores:
        return out
    weights = rubric.judge_weights
    names = list(scores)
    agg = rubric.aggregation
    for rule in RULES:
        value = aggregate.combine(
            rule,
            [scores[n] for n in names],
            [weights.get(n, 1.0) for n in names],
            lam=agg.uwo_lambda,
            beta=agg.softmin_beta,
        )
        out[f"rule:{rule}"] = penalties.transformed(
            rubric.transforms, value, completion=completion, flags=result.get("flags", [])
        )
    return out


def _preference_scores(
    rubric: Rubric, result: dict[str, Any], flip: bool
) -> dict[str, tuple[float, float, bool]]:
    """Per scorer ``(p_chosen both orders, p_chosen first order only, consistent)``."""

    def chosen(p: float) -> float:
        return 1.0 - p if flip else p

    out: dict[str, tuple[float, float, bool]] = {}
    if result.get("p_a_better") is not None:
        out["reward"] = (
            chosen(result["p_a_better"]),
            chosen(result["orders"]["ab"]),
            result["consistent"],
        )
    judged = {n: j for n, j in result.get("judges", {}).items() if j["p_a_better"] is not None}
    for name, j in judged.items():
        out[f"judge:{name}"] = (chosen(j["p_a_better"]), chosen(j["orders"]["ab"]), j["consistent"])
    if len(judged) < rubric.min_judges or not judged:
        return out
    weights = [next((r.weight for r in rubric.judges if r.name == n), 1.0) for n in judged]
    agg = rubric.aggregation
    for rule in RULES:

        def joint(values: list[float], rule: JudgeRule = rule) -> float:
            return cmp.combine_pair(
                rule,
                values,
                weights,
                lam=agg.uwo_lambda,
                beta=agg.softmin_beta,
            )

        both = joint([j["p_a_better"] for j in judged.values()])
        ab = joint([j["orders"]["ab"] for j in judged.values()])
        ba = joint([j["orders"]["ba"] for j in judged.values()])
        out[f"rule:{rule}"] = (chosen(both), chosen(ab), cmp.consistent(ab, ba))
    return out


def _with_ci(
    metric: metrics.Metric, xs: list[float], ys: list[float], resamples: int
) -> dict[str, Any]:
    value = metric(xs, ys)
    ci = metrics.bootstrap(metric, xs, ys, resamples=resamples) if resamples else None
    return {"value": value, "ci": list(ci) if ci else None}


def _pointwise_report(
    per: dict[str, list[tuple[float, float]]], resamples: int
) -> dict[str, dict[str, Any]]:
    report = {}
    for name, pairs in sorted(per.items()):
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        kappa, threshold = metrics.best_kappa(xs, ys)

        def kappa_at(a: Sequence[float], b: Sequence[float], t: float = threshold) -> float:
            return metrics.cohen_kappa([r >= t for r in a], [metrics.positive(y) for y in b])

        report[name] = {
            "n": len(xs),
            "accuracy": _with_ci(metrics.accuracy, xs, ys, resamples),
            "roc_auc": _with_ci(metrics.roc_auc, xs, ys, resamples),
            "kappa": _with_ci(kappa_at, xs, ys, resamples),
            "best_kappa": kappa,
            "threshold": threshold,
            "calibration_error": _with_ci(metrics.calibration_error, xs, ys, resamples),
        }
    return report


def _pairs_report(
    per: dict[str, dict[str, list[float]]], resamples: int
) -> dict[str, dict[str, Any]]:
    report = {}

    def acc(xs: Sequence[float], _: Sequence[float]) -> float:
        return metrics.pairwise_accuracy(xs)

    def share(xs: Sequence[float], _: Sequence[float]) -> float:
        return sum(xs) / len(xs)

    for name, columns in sorted(per.items()):
        entry: dict[str, Any] = {}
        for column, values in columns.items():
            if not values:
                continue
            metric = share if column == "position_consistency" else acc
            entry[column] = _with_ci(metric, values, values, resamples)
            entry[column]["n"] = len(values)
        report[name] = entry
    return report


def _item(row: dict[str, Any], key: str, suffix: str) -> dict[str, Any]:
    """The reward item of a row's ``key`` completion, its id suffixed."""
    return {
        "id": row["id"] + suffix,
        "prompt": row["prompt"],
        "completion": row[key],
        **carried(row),
    }


def _add_pair(
    pairs: dict[str, dict[str, list[float]]],
    rubric: Rubric,
    row: dict[str, Any],
    scored: Sequence[dict[str, Any]],
    judged: dict[str, Any],
    flip: bool,
) -> None:
    """One pair's columns: whether the chosen completion's reward beat the rejected one's,
    and the preference judged in both orders and in one."""
    good = scorer_rewards(rubric, scored[0], row["chosen"])
    bad = scorer_rewards(rubric, scored[1], row["rejected"])
    for name in good.keys() & bad.keys():
        column = pairs.setdefault(name, _columns())["pointwise"]
        column.append(1.0 if good[name] > bad[name] else 0.5 if good[name] == bad[name] else 0.0)
    for name, (both, single, same) in _preference_scores(rubric, judged, flip).items():
        columns = pairs.setdefault(name, _columns())
        columns["both_orders"].append(both)
        columns["single_order"].append(single)
        columns["position_consistency"].append(1.0 if same else 0.0)


async def evaluate(
    scorer: Scorer,
    rows: Sequence[dict[str, Any]],
    *,
    resamples: int = 1000,
    batch: int = 8,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Score labelled ``rows`` and measure agreement (see the module docstring)."""
    rubric = scorer.rubric
    point_rows = [r for r in rows if "completion" in r and "label" in r]
    pair_rows = [r for r in rows if "chosen" in r and "rejected" in r]
    pointwise: dict[str, list[tuple[float, float]]] = {}
    pairs: dict[str, dict[str, list[float]]] = {}
    unscored = {"pointwise": 0, "pair_rewards": 0, "preferences": 0}

    for chunk in _chunks(point_rows, batch):
        reply = await scorer.rewards([_item(r, "completion", "") for r in chunk])
        for row, result in zip(chunk, reply["results"], strict=True):
            unscored["pointwise"] += result.get("reward") is None
            label_value = float(row["label"])
            for name, value in scorer_rewards(rubric, result, row["completion"]).items():
                pointwise.setdefault(name, []).append((value, label_value))
        if progress is not None:
            progress(len(chunk))
    for chunk in _chunks(pair_rows, batch):
        items = [_item(r, k, f":{k}") for r in chunk for k in ("chosen", "rejected")]
        scored = (await scorer.rewards(items))["results"]
        flips = [not chosen_first(r["id"]) for r in chunk]
        shown = [
            _pair(r, "rejected", "chosen") if flip else _pair(r, "chosen", "rejected")
            for r, flip in zip(chunk, flips, strict=True)
        ]
        judged = (await scorer.preferences(shown, cmp.DEFAULT_MARGIN))["results"]
        for k, row in enumerate(chunk):
            unscored["pair_rewards"] += any(scored[2 * k + s].get("reward") is None for s in (0, 1))
            unscored["preferences"] += judged[k].get("p_a_better") is None
            _add_pair(pairs, rubric, row, scored[2 * k : 2 * k + 2], judged[k], flips[k])
        if progress is not None:
            progress(len(chunk))
    return {
        "rubric": rubric.id,
        "version": rubric.version(),
        "pointwise": {"rows": len(point_rows), "scorers": _pointwise_report(pointwise, resamples)},
        "pairs": {"rows": len(pair_rows), "scorers": _pairs_report(pairs, resamples)},
        "unscored": unscored,
    }


def _columns() -> dict[str, list[float]]:
    return {"pointwise": [], "both_orders": [], "single_order": [], "position_consistency": []}
