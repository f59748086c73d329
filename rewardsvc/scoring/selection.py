"""Which judges a request is scored by, and how many of them must answer.

One rule for every path (``/v1/rewards`` through the engine, groups and preferences): the
rubric's judges, or the request's subset of them; every one must be in the judge pool; the
bar is the request's ``min_judges``, else the rubric's, lowered to what the subset can meet.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from rewardsvc.core.errors import RequestError
from rewardsvc.core.rubric import Rubric


def select_judges(rubric: Rubric, pool: Collection[str], only: Sequence[str] | None) -> list[str]:
    """The judges to ask; :class:`RequestError` for a name the rubric or pool lacks."""
    listed = [j.name for j in rubric.judges]
    names = listed if only is None else list(dict.fromkeys(only))
    for name in names:
        if name not in listed:
            raise RequestError.at(
                ("options", "judges"),
                f"unknown judge {name!r}; rubric {rubric.id!r} is scored by {listed}",
            )
    for name in names:
        if name not in pool:
            raise RequestError.at(
                ("rubric", "judges"),
                f"judge {name!r} is not in the judge pool (pool: {sorted(pool)})",
            )
    return names


def min_judges_for(rubric: Rubric, override: int | None, selected: int) -> int:
    """The bar of successful judges (a request's own, else the rubric's, capped)."""
    if override is not None:
        if override > selected:
            raise RequestError.at(
                ("options", "min_judges"), f"{override} is more than the {selected} judges selected"
            )
        return override
    # A subset chosen with options.judges lowers the rubric's bar to what it can meet.
    return min(rubric.min_judges, selected)
