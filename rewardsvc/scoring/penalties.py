"""Flag penalties: the one place the detectors' defaults meet a rubric's own.

A flag costs a reward by default (each detector's ``penalty`` in
:data:`~rewardsvc.safety.detectors.DEFAULT_PENALTIES`), so a flagged attack cannot out-earn
an honest answer under a rubric that never named it; a rubric's
``transforms.flag_penalties`` overrides per flag, and ``0`` opts a flag out. The core's
transforms stay pure and know nothing of the detectors: every route that turns a score
into a reward (items, recipes through their rubric components, groups, evaluation's
recomputed rules) applies transforms through :func:`transformed`.
``dataset:<flag>`` flags name no detector's default and cost nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from rewardsvc.core import aggregate
from rewardsvc.core.transforms import Transforms
from rewardsvc.safety.detectors import DEFAULT_PENALTIES

__all__ = ["effective", "transformed"]


def effective(transforms: Transforms) -> Transforms:
    """``transforms`` with every detector's default penalty under the rubric's own."""
    merged = {**DEFAULT_PENALTIES, **transforms.flag_penalties}
    return transforms.model_copy(update={"flag_penalties": merged})


def transformed(
    transforms: Transforms, value: float, *, completion: str, flags: Iterable[str]
) -> float:
    """``value`` after ``transforms`` (with the default flag penalties) for a completion
    that raised ``flags``."""
    return aggregate.apply_transforms(
        value,
        effective(transforms),
        completion_tokens=aggregate.count_tokens(completion),
        flags=flags,
    )
