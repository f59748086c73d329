"""``options.explain`` for one item, as the service builds it: the engine plans the item and
its judges render the plan's calls without sending them (``BatchPlan.explained``)."""

from __future__ import annotations

from collections.abc import Mapping

from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import ItemIn, Rollout, ScoreOptions
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import Judge
from rewardsvc.judges.prompts import Seen
from rewardsvc.scoring.engine import Engine


async def explain(
    rubric: Rubric, rollout: Rollout, configs: Mapping[str, JudgeConfig]
) -> dict[str, dict[str, Seen]]:
    """What each judge of ``rubric`` that ``configs`` holds reads for ``rollout``."""
    engine = Engine({name: Judge(name, config) for name, config in configs.items()})
    only = tuple(j.name for j in rubric.judges if j.name in configs)
    try:
        plan = await engine.plan(rubric, [ItemIn("explained", rollout)], ScoreOptions(judges=only))
        seen = plan.explained(engine.judges)[0]
    finally:
        await engine.aclose()
    assert seen is not None, plan.rejected[0]
    return seen
