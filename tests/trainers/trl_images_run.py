"""Runs in the TRL 1.16.0 venv: a multimodal prompt as GRPOTrainer hands it to a reward
function (``trl.data_utils.prepare_multimodal_messages`` filling a PIL image into the
conversational prompt) is scored through the rewardsvc TRL adapter.

argv: URL RUBRIC OUT.json. Writes the rewards the adapter returned.
"""

from __future__ import annotations

import asyncio
import json
import sys

from PIL import Image
from trl.data_utils import prepare_multimodal_messages

from rewardsvc_client.trl import trl_reward_func


def main() -> None:
    url, rubric, out = sys.argv[1:4]
    image = Image.new("RGB", (8, 8), (200, 30, 30))
    prompt = prepare_multimodal_messages(
        [{"role": "user", "content": "What colour is the square?"}], images=[image]
    )
    reward = trl_reward_func(url, rubric, reference_column=None)
    completion = [{"role": "assistant", "content": "Red."}]
    rewards = asyncio.run(reward(prompts=[prompt], completions=[completion]))
    with open(out, "w") as f:
        json.dump({"rewards": rewards}, f)


if __name__ == "__main__":
    main()
