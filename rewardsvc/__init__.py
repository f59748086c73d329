"""rewardsvc: rubric and constitutional rewards for RL, scored by LLM judges on vLLM."""

__version__ = "0.1.0"
