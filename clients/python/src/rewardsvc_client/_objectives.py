"""Objectives as the adapters that cannot mask hand them to a trainer: one number per named
objective for every sample, the same names every time, and a flag saying whether any of
them is a stand-in.

A rubric's or recipe's objectives (``RewardResult.objectives``) are None where their parts
could not be scored, also when the reward itself exists (a ``degraded`` result whose
objective was its failed judge's). Trainers that stack numbers into arrays (veRL's
``reward_extra_info``, NeMo-RL's dict rewards) take ``failure_score`` in its place, and
``rewardsvc_objectives_valid`` is 0 for that sample: never an unflagged stand-in.
"""

from __future__ import annotations

from collections.abc import Sequence

from rewardsvc_client.types import RewardResult

OBJECTIVES_VALID = "rewardsvc_objectives_valid"
"""The per-sample key that is 1 when every objective is the service's value, else 0."""


def objective_names(
    objectives: Sequence[str] | str | None, reserved: Sequence[str] = ()
) -> tuple[str, ...]:
    """The objective names (a list, or one comma-separated string from a command line),
    each once, refusing those that would overwrite a key the adapter sets itself
    (``reserved``, and every ``rewardsvc_*``)."""
    if isinstance(objectives, str):
        objectives = [o.strip() for o in objectives.split(",") if o.strip()]
    names = tuple(str(o) for o in objectives or ())
    taken = [n for n in names if n in reserved or n.startswith("rewardsvc_")]
    if taken:
        raise ValueError(f"objectives {taken}: these keys are the adapter's own")
    if len(set(names)) != len(names):
        raise ValueError(f"objectives {list(names)}: give each objective name once")
    return names


def missing_objectives(names: Sequence[str], result: RewardResult | None) -> list[str]:
    """The objectives of ``names`` without a value in ``result`` (all of them when the
    request failed)."""
    values = result.objectives if result is not None else {}
    return [name for name in names if values.get(name) is None]


def objective_numbers(
    names: Sequence[str], result: RewardResult | None, failure_score: float
) -> dict[str, float]:
    """Each objective of ``names`` as a number (``failure_score`` where it has no value) and
    ``rewardsvc_objectives_valid``: the same keys for every sample, failures included."""
    values = result.objectives if result is not None else {}
    numbers = {
        name: float(failure_score if (v := values.get(name)) is None else v) for name in names
    }
    numbers[OBJECTIVES_VALID] = 0.0 if missing_objectives(names, result) else 1.0
    return numbers


__all__ = ["OBJECTIVES_VALID", "missing_objectives", "objective_names", "objective_numbers"]
