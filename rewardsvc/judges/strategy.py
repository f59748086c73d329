"""A judge's scoring strategy, built from its config in one place (the judge's)."""

from __future__ import annotations

from dataclasses import dataclass

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.judges.methods import ScoringMethod, method_for
from rewardsvc.judges.prompts import Asking
from rewardsvc.judges.questions import reasoning_chars
from rewardsvc.judges.reward_model import RewardModel, scorer_for
from rewardsvc.judges.shapes import ApiShape, shape_for
from rewardsvc.safety.defuse import Defuser


@dataclass(frozen=True)
class Strategy:
    """How one judge scores: its method object (a reward model's own, or an LLM method),
    the reward model when it is one, its API shape and the reasoning room its output
    budget leaves, and whether it sees images."""

    method: ScoringMethod
    reward_model: RewardModel | None
    shape: ApiShape
    reasoning: int
    sees: bool = False

    def asking(self, defuser: Defuser) -> Asking:
        """How the judge's prompts are asked, its untrusted text defused with ``defuser``."""
        return Asking(self.method, self.shape, self.reasoning, defuser, sees=self.sees)


def strategy_for(config: JudgeConfig) -> Strategy:
    """The scoring strategy of a judge with ``config``."""
    rm = scorer_for(config)
    return Strategy(
        method=rm or method_for(config.method),
        reward_model=rm,
        shape=shape_for(config.api),
        reasoning=reasoning_chars(config.sampling.max_tokens),
        sees=config.capabilities.vision,
    )
