"""What each judge reads for an item, without calling it (``options.explain``, ``rewardsvc
score --explain``): built by the same pure builders as the calls."""

from __future__ import annotations

from collections.abc import Mapping

from rewardsvc.core.aggregate import HOLISTIC
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.trajectory import step_key
from rewardsvc.judges.batching import batch_prompt, by_view
from rewardsvc.judges.prompts import Prompt, criterion_prompt, holistic_prompt
from rewardsvc.judges.strategy import strategy_for
from rewardsvc.safety.defuse import DEFAULT_DEFUSER

BATCH_JOIN = "+"
"""A batched judge's key: the ids of the criteria its one call asks, joined by this."""

Seen = list[dict[str, str]] | str


def _seen(prompt: Prompt) -> Seen:
    return prompt.messages if prompt.messages is not None else prompt.text or ""


def explain(
    rubric: Rubric, rollout: Rollout, configs: Mapping[str, JudgeConfig]
) -> dict[str, dict[str, Seen]]:
    """What each judge of ``rubric`` reads for ``rollout``, without calling it.

    ``{judge: {key: messages (chat) or text (completion)}}``, the key being a criterion
    id, ``aggregate.HOLISTIC`` (``_holistic``) for implicit scoring, ``criterion@stepK``
    for a criterion with ``scope: step`` at assistant step K, or for a judge with
    ``method: batched`` the ids of the criteria one call asks joined by ``+``; a reward
    model's conversations as ``RewardModel.seen`` keys them. ``configs``
    is the judge pool (judges missing from it are left out). Built with the default
    defuser (a judge with a defuser of its own defuses its special tokens too).
    """
    out: dict[str, dict[str, Seen]] = {}
    for ref in rubric.judges:
        config = configs.get(ref.name)
        if config is None:
            continue
        strategy = strategy_for(config)
        if strategy.reward_model is not None:
            # A reward model reads the conversation itself, no prompt of ours.
            out[ref.name] = dict(strategy.reward_model.seen(rubric, rollout, DEFAULT_DEFUSER))
            continue
        asking = strategy.asking(DEFAULT_DEFUSER)
        seen: dict[str, Seen] = {}
        if rubric.implicit_combine:
            seen[HOLISTIC] = _seen(holistic_prompt(rubric, rollout, asking))
        else:
            # A grader criterion is scored without a judge; a step one per step, below.
            judged = [c for c in rubric.criteria if c.asks_judges]
            if strategy.method.batches_criteria:
                for group in by_view(rubric, judged):
                    batch = batch_prompt(rubric, group, rollout, strategy.shape)
                    seen[BATCH_JOIN.join(batch.ids)] = _seen(batch.prompt)
            else:
                for c in judged:
                    prompt = criterion_prompt(rubric, c, rollout, asking)
                    seen[c.id] = _seen(prompt)
            for k in range(rollout.step_count()):
                at = rollout.at_step(k)
                for c in rubric.criteria:
                    if c.per_step:
                        prompt = criterion_prompt(rubric, c, at, asking)
                        seen[step_key(c.id, k)] = _seen(prompt)
        out[ref.name] = seen
    return out
