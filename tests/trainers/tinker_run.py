"""Runs in the tinker-cookbook venv: the cookbook's own ``do_group_rollout`` (with its
``MinViableGroup`` strategy) rolls out rewardsvc env groups and takes their rewards.

argv: URL RUBRIC TOKENIZER_DIR OUT.json. The policy is scripted (the cookbook's sampling
client needs the hosted Tinker service): it answers each env's prompt with the next of a list
of replies, rendered by the cookbook's ``role_colon`` renderer. Two groups per batch: one
scored per step (``reward_at="step"``, a reference), one of the rubric recipe's
``RubricBasedDatapoint`` scored by the group builder (``reward_at="group"``, its
``rubric_items`` as the item's criteria). Then ``OUTAGE?``: the test makes the judges
unreachable while a second batch is rolled out.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from tinker_cookbook.completers import TokenCompleter, TokensWithLogprobs
from tinker_cookbook.recipes.rubric.data import Rubric, RubricBasedDatapoint
from tinker_cookbook.renderers import get_renderer
from tinker_cookbook.rl.rollout_strategy import MinViableGroup
from tinker_cookbook.rl.rollouts import do_group_rollout
from transformers import AutoTokenizer

from rewardsvc_client.tinker import (
    RewardsvcEnvGroupBuilder,
    Scorer,
    make_scorer,
    rubric_env_group_builder,
)

QUESTION = "What is 2 + 3?"
ANSWERS = ["5", "It is 7.", "5, I think."]
ANSWERS_DURING = ["Five.", "It is 8."]
RUBRIC_ITEMS = ["The response says that 2 + 3 equals 5.", "The response is one short sentence."]


class Recording(Scorer):
    """The adapter's scorer, keeping the items it sent (the test scores them itself)."""

    sent: list[dict[str, Any]]

    async def score(self, items: list[dict[str, Any]]) -> Any:
        self.__dict__.setdefault("sent", []).extend(items)
        return await super().score(items)


def recording(scorer: Scorer) -> Recording:
    return Recording(scorer.settings, judge_error_wait=scorer.judge_error_wait)


class ScriptedPolicy(TokenCompleter):
    """A TokenCompleter that replies with the next scripted text and the stop sequence."""

    def __init__(self, renderer: Any, tokenizer: Any, replies: list[str]) -> None:
        self.replies = list(replies)
        self.tokenizer = tokenizer
        self.stop = renderer.get_stop_sequences()[0]

    async def __call__(self, model_input: Any, stop: Any, *, max_tokens: Any = None) -> Any:
        text = " " + self.replies.pop(0) + self.stop
        tokens = self.tokenizer.encode(text, add_special_tokens=False)
        return TokensWithLogprobs(tokens=tokens, maybe_logprobs=[0.0] * len(tokens))


def summary(group: Any) -> dict[str, Any]:
    return {
        "replies": [t.transitions[0].ac.tokens for t in group.trajectories_G],
        "step_rewards": [t.transitions[0].reward for t in group.trajectories_G],
        "final_rewards": list(group.final_rewards_G),
        "totals": group.get_total_rewards(),
        "metrics": [
            {**t.transitions[0].metrics, **m}
            for t, m in zip(group.trajectories_G, group.metrics_G, strict=True)
        ],
        "errors": [e.error_message for e in group.rollout_errors],
    }


def sent(scorer: Recording) -> list[dict[str, Any]]:
    return list(scorer.__dict__.get("sent", []))


async def batch(url: str, rubric: str, renderer: Any, tokenizer: Any, answers: list[str]) -> Any:
    step_scorer = recording(make_scorer(url, rubric, run="tinker-test"))
    step = RewardsvcEnvGroupBuilder(
        renderer, [{"role": "user", "content": QUESTION}], step_scorer, len(answers),
        reference="5",
    )  # fmt: skip
    datapoint = RubricBasedDatapoint(
        convo=[{"role": "user", "content": QUESTION}],
        rubric_items=[Rubric(rubric_str=text) for text in RUBRIC_ITEMS],
    )
    scorer = recording(make_scorer(url, "per-prompt", run="tinker-test", criteria_format="tinker"))
    grouped = rubric_env_group_builder(renderer, datapoint, scorer, len(answers), "group")
    strategy = MinViableGroup(min_successful=2)
    out = {}
    for name, builder in (("step", step), ("rubric", grouped)):
        policy = ScriptedPolicy(renderer, tokenizer, answers)
        out[name] = summary(await do_group_rollout(builder, policy, strategy=strategy))
    for group in out.values():
        group["replies"] = [tokenizer.decode(r) for r in group["replies"]]
    out["step"]["sent"], out["rubric"]["sent"] = sent(step_scorer), sent(scorer)
    return out


async def main() -> None:
    url, rubric, tokenizer_dir, out = sys.argv[1:5]
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    renderer = get_renderer("role_colon", tokenizer)
    before = await batch(url, rubric, renderer, tokenizer, ANSWERS)
    print("OUTAGE?", flush=True)
    sys.stdin.readline()
    during = await batch(url, rubric, renderer, tokenizer, ANSWERS_DURING)
    with open(out, "w") as f:
        json.dump({"before": before, "during": during, "rubric_items": RUBRIC_ITEMS}, f)


if __name__ == "__main__":
    asyncio.run(main())
