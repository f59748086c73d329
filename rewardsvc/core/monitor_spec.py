"""The reward monitor's settings a rubric may carry (its ``monitor:`` section): windows and
alert thresholds. Pure models; the monitor itself is ``rewardsvc.monitor``."""

from __future__ import annotations

from pydantic import Field

from rewardsvc.core.base import StrictModel


class Rule(StrictModel):
    """When one signal family alarms."""

    threshold: float = Field(description="The value at or above which the signal breaches.")
    rise: float | None = Field(
        default=None,
        description="When set, the threshold is at least the run's baseline value plus this.",
    )
    baseline_below: float | None = Field(
        default=None,
        description="When set, the rule only applies while the baseline value is below this "
        "(a criterion that everyone passed from the start is not news).",
    )
    enabled: bool = True

    def effective(self, baseline: float | None) -> float | None:
        """The threshold to compare against, or None when the rule does not apply."""
        if not self.enabled:
            return None
        if self.baseline_below is not None and (
            baseline is None or baseline >= self.baseline_below
        ):
            return None
        if self.rise is not None and baseline is not None:
            return max(self.threshold, baseline + self.rise)
        return self.threshold


DEFAULT_RULES: dict[str, Rule] = {
    "reward_length_corr": Rule(threshold=0.35, rise=0.25),
    "flag_rate": Rule(threshold=0.05, rise=0.05),
    "reward_drift": Rule(threshold=0.22),
    "length_drift": Rule(threshold=0.35),
    "judge_disagreement": Rule(threshold=0.25, rise=0.1),
    "uncertainty_mean": Rule(threshold=0.3, rise=0.1),
    "criterion_pass_rate": Rule(threshold=0.98, baseline_below=0.9),
    "judge_error_share": Rule(threshold=0.2),
    "degraded_share": Rule(threshold=0.3),
    "rejected_share": Rule(threshold=0.2),
}


class MonitorConfig(StrictModel):
    """Per-rubric monitor settings (the ``monitor:`` section a rubric may carry)."""

    window: int = Field(default=128, ge=16, le=4096, description="Samples per rolling window.")
    baseline: int = Field(
        default=512,
        ge=16,
        le=8192,
        description="The run's first samples (after a rubric version change, the first "
        "samples of the new version) that drift and rises are measured against.",
    )
    eval_every: int = Field(default=8, ge=1, le=1024, description="Samples between evaluations.")
    for_evals: int = Field(
        default=3, ge=1, le=100, description="Consecutive breaching evaluations before firing."
    )
    rules: dict[str, Rule | float] = Field(
        default_factory=dict,
        description="Overrides by signal family (flag_rate) or full name "
        "(flag_rate:fake_score); a number replaces only the threshold.",
    )

    def rule(self, name: str) -> Rule | None:
        """The rule for signal ``name`` (full name first, then its family), or None."""
        family = name.split(":", 1)[0]
        default = DEFAULT_RULES.get(family)
        override = self.rules.get(name, self.rules.get(family))
        if override is None:
            return default
        if isinstance(override, Rule):
            return override
        if default is None:
            return Rule(threshold=override)
        return default.model_copy(update={"threshold": override})
