"""The reward monitor's settings a rubric may carry (its ``monitor:`` section): windows and
alert thresholds. Pure models; the monitor itself is ``rewardsvc.monitor``.

Also here: the name an inline rubric is monitored under, so that a request's rubric can
never be counted as (or reset) a library rubric's run.
"""

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


INLINE_PREFIX = "inline:"


def inline_rubric_name(rubric_id: str, version: str) -> str:
    """The name an inline rubric (or recipe) is monitored under: ``inline:<id>@<version>``.

    A library id cannot take it (an ``Identifier`` has no ``:``), so an inline rubric that
    reuses a library id neither counts in the library rubric's runs nor flips their version.
    """
    return f"{INLINE_PREFIX}{rubric_id}@{version}"


CEILING = "flag_ceiling"
"""The signal family of attack-flag ceilings: an attack flag's rate over the latest
``ceiling_window`` samples, compared with an absolute threshold (no baseline needed)."""

ATTACK_FLAGS = (
    "authority_appeal",
    "control_tokens",
    "fake_score",
    "fence_escape",
    "injection_suspected",
    "master_key",
    "template_mimicry",
    # The tamper detector's (rewardsvc.safety.tamper.TAMPER_FLAGS): attacks on a code grader.
    "tamper_always_equal",
    "tamper_exit_hook",
    "tamper_expected_read",
    "tamper_kill_parent",
    "tamper_monkeypatch",
    "tamper_network",
    "tamper_outside_write",
    "tamper_runner_config",
    "tamper_test_edit",
)
"""The flags that mean an attack on the judge or on a code grader's check (not a style,
such as padding)."""

DEFAULT_RULES: dict[str, Rule] = {
    "reward_length_corr": Rule(threshold=0.35, rise=0.25),
    "flag_rate": Rule(threshold=0.05, rise=0.05),
    CEILING: Rule(threshold=0.2),
    "reward_drift": Rule(threshold=0.22),
    "length_drift": Rule(threshold=0.35),
    "judge_disagreement": Rule(threshold=0.25, rise=0.1),
    "uncertainty_mean": Rule(threshold=0.3, rise=0.1),
    "criterion_pass_rate": Rule(threshold=0.98, baseline_below=0.9),
    "judge_error_share": Rule(threshold=0.2),
    "degraded_share": Rule(threshold=0.3),
    "rejected_share": Rule(threshold=0.2),
    # A cascade's escalation share moved from the run's baseline (monitor.escalation).
    "escalation_shift": Rule(threshold=0.15),
}


NON_DISCRIMINATIVE = "non_discriminative"
"""The rubric health alert: the rubric stopped telling a prompt's completions apart."""


class HealthConfig(StrictModel):
    """Rubric health: when the rewards of a prompt's completions stop differing (GRPO's
    advantage is then 0) or criteria saturate. Measured over the run's rolling window;
    only ``ok`` rewards count."""

    enabled: bool = Field(default=True, description="Raise the non_discriminative alert.")
    epsilon: float = Field(
        default=1e-3,
        ge=0.0,
        le=0.5,
        description="A group (the items of one prompt in one batch, or one group of "
        "/v1/groups; two or more ok rewards) whose rewards spread (max - min) by at most "
        "this has zero spread.",
    )
    zero_spread_share: float = Field(
        default=0.5,
        gt=0.0,
        le=1.0,
        description="The alert breaches when at least this share of the window's groups "
        "have zero spread.",
    )
    min_groups: int = Field(
        default=8,
        ge=1,
        le=4096,
        description="Groups in the window before the zero-spread share can breach.",
    )
    saturated_high: float = Field(
        default=0.95,
        gt=0.5,
        le=1.0,
        description="A criterion whose pass rate (its mean score over the window) is at or "
        "above this is saturated: (nearly) every completion passes it.",
    )
    saturated_low: float = Field(
        default=0.05,
        ge=0.0,
        lt=0.5,
        description="A criterion whose pass rate is at or below this is saturated: (nearly) "
        "no completion passes it.",
    )
    min_samples: int = Field(
        default=64,
        ge=1,
        le=4096,
        description="Scores of a criterion in the window before it can count as saturated.",
    )
    saturated_criteria: int = Field(
        default=2,
        ge=1,
        le=1000,
        description="The alert breaches when at least this many criteria (not exempt) are "
        "saturated. One saturated criterion is common in a healthy run (a pitfall the "
        "policy never commits, a format check everyone passes): list it in exempt, or "
        "lower this to 1.",
    )
    exempt: list[str] = Field(
        default_factory=list,
        description="Criteria that may saturate without counting towards the alert (still "
        "reported as saturated).",
    )


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
    attack_flags: list[str] = Field(
        default_factory=lambda: list(ATTACK_FLAGS),
        description="Flags whose rate has an absolute ceiling (flag_ceiling:<flag>, default "
        "0.2) that alarms from the first evaluation, without waiting for a baseline; while "
        "one of these alerts is pending or firing the baseline takes no samples, so it "
        "cannot absorb an attack.",
    )
    ceiling_window: int = Field(
        default=64,
        ge=8,
        le=4096,
        description="Latest samples an attack flag's ceiling rate is measured over (at most "
        "the window); the ceilings are evaluated once this many samples were seen.",
    )
    for_evals: int = Field(
        default=3, ge=1, le=100, description="Consecutive breaching evaluations before firing."
    )
    health: HealthConfig = Field(
        default_factory=HealthConfig,
        description="Rubric health: zero-spread groups, saturated criteria and the "
        "non_discriminative alert.",
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
