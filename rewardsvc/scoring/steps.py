"""Process rewards: planning the per-step judge calls of an item and combining their scores.

Pure functions the engine calls; no I/O, no judges.

A criterion with ``scope: step`` is asked once per assistant step of the policy, the
judge seeing the trajectory up to and including that step (``Rollout.at_step``). Calls
are planned step-major (every step criterion of step 0, then step 1, ...) so that the
calls of consecutive steps reach a judge in order and reuse its prefix cache: the prompt
of step k+1 starts with the whole prompt body of step k.

Per step: each judge's score is its weighted score over the step criteria
(``aggregate.judge_score`` on the rubric restricted to them), or, for a judge that scores
whole items (a reward model, or a process reward model scoring all steps in one call), its
verdict on the step (``HOLISTIC@stepK``); the judges combine with the
rubric's rule into the step reward; a step with fewer than ``min_judges`` judges scoring
is ``judge_error`` and takes no part in the combination (a failed step call degrades that
step, not the episode). Per-judge calibration does not apply to step scores.

Across steps (``step_combine``), over the steps that scored: ``min``, ``mean``, ``last``
(the last step that scored), or ``discounted``: ``Σ γᵏ rₖ / Σ γᵏ`` (k the 0-based step;
normalized so that the reward stays in [0, 1]).

The item's reward: the combined step reward when every criterion is step-scoped; when a
rubric mixes both scopes, ``(Wₑ·outcome + Wₛ·process) / (Wₑ + Wₛ)``, W being the sum of
the positive weights of each scope's criteria.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rewardsvc.core import aggregate
from rewardsvc.core.results import Status, StepResult
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, JudgeRule, Rubric, StepCombine
from rewardsvc.core.trajectory import step_key
from rewardsvc.core.verdict import Verdict


def _restricted(rubric: Rubric, per_step: bool) -> Rubric | None:
    criteria = [c for c in rubric.criteria if c.per_step == per_step]
    if not criteria:
        return None
    if len(criteria) == len(rubric.criteria):
        return rubric  # every request asks: no copy of a rubric of one scope
    # No re-validation: a subset of a valid rubric's criteria (with a positive weight,
    # which the rubric's validator checks for the step scope) is valid.
    return rubric.model_copy(update={"criteria": criteria})


def episode_rubric(rubric: Rubric) -> Rubric | None:
    """The rubric with only its episode criteria (None when all are step-scoped): what the
    engine's per-item calls and ``aggregate.judge_score`` work on."""
    return _restricted(rubric, per_step=False)


def step_rubric(rubric: Rubric) -> Rubric | None:
    """The rubric with only its step criteria (None when it has none)."""
    return _restricted(rubric, per_step=True)


@dataclass(frozen=True)
class StepCall:
    """One planned call: criterion ``criterion`` at step ``step``, on ``rollout`` (the
    trajectory up to that step); ``key`` names it in breakdowns and cache keys."""

    step: int
    criterion: Criterion
    rollout: Rollout
    key: str


def plan(rubric: Rubric, rollout: Rollout) -> list[StepCall]:
    """The step calls of one item, step-major (for the prefix cache); empty when the rubric
    has no step criteria."""
    criteria = rubric.step_criteria
    if not criteria:
        return []
    calls: list[StepCall] = []
    for k in range(rollout.step_count()):
        at = rollout.at_step(k)
        calls.extend(StepCall(k, c, at, step_key(c.id, k)) for c in criteria)
    return calls


def combine(rewards: Sequence[float | None], how: StepCombine, gamma: float = 1.0) -> float | None:
    """Step rewards (None: the step failed) combined; None when no step scored."""
    scored = [(k, r) for k, r in enumerate(rewards) if r is not None]
    if not scored:
        return None
    values = [r for _, r in scored]
    if how == "min":
        return min(values)
    if how == "mean":
        return sum(values) / len(values)
    if how == "last":
        return values[-1]
    weights = [gamma**k for k, _ in scored]
    return sum(w * r for w, r in zip(weights, values, strict=True)) / sum(weights)


def assemble(
    rubric: Rubric,
    step_count: int,
    verdicts: Mapping[str, Mapping[str, Verdict]],
    *,
    rule: JudgeRule | None = None,
    min_judges: int | None = None,
) -> list[StepResult]:
    """Each step's reward from ``verdicts`` (``{judge: {step key: verdict}}``, every
    judge that was asked); ``rule`` and ``min_judges`` override the rubric's."""
    sub = step_rubric(rubric)
    if sub is None:
        return []
    agg = rubric.aggregation
    rule = rule or agg.rule
    need = rubric.min_judges if min_judges is None else min_judges
    weights = rubric.judge_weights
    results = []
    for k in range(step_count):
        scores: list[float] = []
        judge_weights: list[float] = []
        per_criterion: dict[str, list[float]] = {c.id: [] for c in sub.criteria}
        errors: list[str] = []
        for judge, by_key in verdicts.items():
            score, why = _step_score(sub, by_key, k, per_criterion)
            if score is None:
                errors.append(f"{judge}: {why}")
                continue
            scores.append(score)
            judge_weights.append(weights.get(judge, 1.0))
        criteria = {cid: (sum(s) / len(s) if s else None) for cid, s in per_criterion.items()}
        asked = len(verdicts)
        if scores and len(scores) >= min(need, asked):
            reward = aggregate.combine(
                rule, scores, judge_weights, lam=agg.uwo_lambda, beta=agg.softmin_beta
            )
            status: Status = "ok" if len(scores) == asked else "degraded"
        else:
            reward, status = None, "judge_error"
        error = "; ".join(errors) if errors else None
        results.append(StepResult(k, reward, status, criteria, error))
    return results


def _step_score(
    sub: Rubric, by_key: Mapping[str, Verdict], k: int, per_criterion: dict[str, list[float]]
) -> tuple[float | None, str]:
    """One judge's score at step ``k`` (None, with why, when it has none): a whole-item
    judge's verdict on the step (``HOLISTIC@stepK``: a reward model's, or a process reward
    model's share of its one call), else its weighted score over the step criteria, whose
    scores join ``per_criterion``."""
    whole = by_key.get(step_key(aggregate.HOLISTIC, k))
    if whole is not None:
        if whole.ok and whole.score is not None:
            return whole.score, ""
        return None, whole.error or "no score"
    got = {c.id: by_key.get(step_key(c.id, k)) for c in sub.criteria}
    failed = {cid: v for cid, v in got.items() if v is None or not v.ok}
    for cid, v in got.items():
        if v is not None and v.ok and v.score is not None:
            per_criterion[cid].append(v.score)
    if failed:
        return None, "; ".join(
            f"{cid}: {(v.error if v else None) or 'no score'}" for cid, v in failed.items()
        )
    raw, _ = aggregate.judge_score(
        sub,
        {cid: v.score for cid, v in got.items() if v is not None and v.score is not None},
        {cid: v.variance for cid, v in got.items() if v is not None},
    )
    return raw, ""


def process_reward(rubric: Rubric, steps: Sequence[StepResult]) -> float | None:
    """The steps' rewards combined by the rubric's ``step_combine`` (and ``gamma``)."""
    return combine([s.reward for s in steps], rubric.step_combine, rubric.gamma)


def item_reward(rubric: Rubric, outcome: float | None, process: float | None) -> float | None:
    """The item's reward from its episode outcome (None when the rubric has no episode
    criteria, or they failed) and its process reward (see the module docstring)."""
    episode = [c.weight for c in rubric.criteria if not c.per_step and c.weight > 0]
    if not any(not c.per_step for c in rubric.criteria):
        return process
    if outcome is None or process is None:
        return None
    stepped = [c.weight for c in rubric.criteria if c.per_step and c.weight > 0]
    if not stepped:
        return outcome
    we, ws = sum(episode), sum(stepped)
    return (we * outcome + ws * process) / (we + ws) if we + ws > 0 else process


def item_status(steps: Sequence[StepResult]) -> Status:
    """ok when every step scored fully, degraded when some step failed or lost a judge but
    one scored, judge_error when none did."""
    if not steps or all(s.reward is None for s in steps):
        return "judge_error"
    return "ok" if all(s.status == "ok" for s in steps) else "degraded"
