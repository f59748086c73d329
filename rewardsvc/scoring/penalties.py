"""Flag penalties: the one place the detectors' defaults meet a rubric's own.

A flag costs a reward by default (each detector's ``penalty`` in
:data:`~rewardsvc.safety.detectors.DEFAULT_PENALTIES`, and each tamper flag a rubric's
grader criterion raises its own in :data:`~rewardsvc.safety.tamper.TAMPER_PENALTIES`), so a
flagged attack cannot out-earn an honest answer under a rubric that never named it; a rubric's
``transforms.flag_penalties`` overrides per flag, and ``0`` opts a flag out. The core's
transforms stay pure and know nothing of the detectors: every route that turns a score
into a reward (items, recipes through their rubric components, groups, evaluation's
recomputed rules) applies transforms through :func:`transformed`.
``dataset:<flag>`` flags name no detector's default and cost nothing.

The flags a grader raises (the tamper detector's, on the code it ran) cost the same way,
each its default in :data:`~rewardsvc.safety.tamper.TAMPER_PENALTIES` unless the recipe's
``flag_penalties`` names it: :func:`penalised_grader_score` takes them off that grader
component's score, so that its gates and vetoes see them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rewardsvc.core import aggregate
from rewardsvc.core.transforms import Transforms
from rewardsvc.safety.detectors import DEFAULT_PENALTIES
from rewardsvc.safety.tamper import TAMPER_PENALTIES

__all__ = ["effective", "penalised_grader_score", "transformed"]


def effective(transforms: Transforms) -> Transforms:
    """``transforms`` with every detector's and code grader's default penalty under the
    rubric's own."""
    merged = {**DEFAULT_PENALTIES, **TAMPER_PENALTIES, **transforms.flag_penalties}
    return transforms.model_copy(update={"flag_penalties": merged})


def transformed(
    transforms: Transforms, value: float, *, completion: str, flags: Iterable[str]
) -> float:
    """``value`` after ``transforms`` (with the default flag penalties) for a completion
    that raised ``flags``."""
    # Per item: the merged penalties only matter to an item with flags, and its length
    # only to a length penalty (splitting a long completion is not free).
    flags = tuple(flags)
    lp = transforms.length_penalty
    return aggregate.apply_transforms(
        value,
        effective(transforms) if flags else transforms,
        completion_tokens=aggregate.count_tokens(completion) if lp is not None else 0,
        flags=flags,
    )


def penalised_grader_score(
    score: float, flags: Iterable[str], flag_penalties: Mapping[str, float]
) -> float:
    """A grader's ``score`` less the penalties of the ``flags`` it raised (each once; the
    defaults under the recipe's ``flag_penalties``), clipped to [0, 1]."""
    given = Transforms(flag_penalties={**TAMPER_PENALTIES, **flag_penalties})
    return aggregate.apply_transforms(score, given, flags=flags)
