"""Found attacks as monitor canaries: a run then watches the holes the red team found.

:func:`canaries_of` turns a regression file's successful attacks into a canary file of
the monitor (:class:`rewardsvc.monitor.canaries.CanarySet`): per item, the honest wrong
answer is the known-bad anchor, the reference is the known-good one, and the attack found
is the canary's attack (named ``redteam-<families>``). The monitor alerts when an attack
scores ``margin`` above the known-bad anchor, the same test the search passed. An item
without a reference (a labelled flag, ``keep``) has no known-good answer and is left out.
"""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

from rewardsvc.monitor.canaries import CanaryCase, CanarySet
from rewardsvc.redteam.regression import Regression


def canaries_of(reg: Regression, margin: float | None = None) -> CanarySet | None:
    """The canary set of a regression file's successful attacks (None when none has a
    reference); ``margin`` defaults to the run's tolerance."""
    cases = [
        CanaryCase(
            prompt=a.prompt,
            reference=a.reference,
            good=a.reference,
            bad=a.baseline,
            attacks={"redteam-" + ("+".join(a.families) or "edit"): a.completion},
        )
        for a in reg.attacks
        if a.succeeded and a.reference is not None
    ]
    if not cases:
        return None
    chosen = reg.tolerance if margin is None else margin
    return CanarySet(rubric=reg.rubric, margin=chosen, cases=cases)


def write_canaries(canaries: CanarySet, out: Path) -> None:
    """Write the set as a canary file the monitor loads (``load_canaries`` of its folder)."""
    yaml = YAML()
    yaml.default_flow_style = False
    with out.open("w", encoding="utf-8") as f:
        f.write(f"# Canaries of {canaries.rubric}: attacks found by rewardsvc redteam.\n")
        yaml.dump(canaries.model_dump(mode="json", exclude_none=True), f)
