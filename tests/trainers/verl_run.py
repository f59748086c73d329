"""Runs in the veRL 0.9.1 venv: veRL's own reward managers score a small batch through the
rewardsvc adapter, loaded the way ``main_ppo`` loads it.

argv: URL TOKENIZER_DIR OUT.json. The config is veRL's ``reward.custom_reward_function``
(path ``pkg://rewardsvc_client.verl``, ``reward_kwargs`` with the URL, a rubric per
data_source and the run), read by ``verl.trainer.ppo.reward``. The batch is a DataProto of
tokenized prompts and responses. Managers: the reward-loop ``naive``, ``rate_limited`` and
``dapo`` (``compute_score_async``, awaited per sample), the legacy ``naive``
(``compute_score``, sync) and the legacy ``batch`` (``compute_score_batch``). Then
``OUTAGE?``: the test makes the judges unreachable while the reward-loop ``naive`` and the
legacy ``batch`` manager score a second batch.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl import DataProto
from verl.trainer.ppo.reward import get_custom_reward_fn, load_reward_manager
from verl.workers.reward_manager import get_reward_manager_cls

# (question, response, ground truth, data_source)
SAMPLES = [
    ("What is 2 + 3?", "5", "5", "openai/gsm8k"),
    ("What is 2 + 3?", "It is 7.", "5", "openai/gsm8k"),
    ("Name a primary color.", "Blue.", "red, yellow or blue", "chat"),
    ("What is 2 + 3?", "5", None, "openai/gsm8k"),  # no reference: rejected
]
SAMPLES_DURING = [
    ("What is 3 + 4?", "7", "7", "openai/gsm8k"),
    ("Name a primary color.", "Green.", "red, yellow or blue", "chat"),
]
RUBRICS = {"openai/gsm8k": "short-answer-correctness", "default": "helpful-answer"}


def batch(tokenizer: Any, samples: list[tuple[str, str, str | None, str]]) -> DataProto:
    """A DataProto as veRL's rollout leaves it: left-padded prompts, right-padded responses."""
    prompts = [tokenizer(q, add_special_tokens=False)["input_ids"] for q, *_ in samples]
    responses = [tokenizer(r, add_special_tokens=False)["input_ids"] for _, r, *_ in samples]
    p_len, r_len = max(map(len, prompts)), max(map(len, responses))
    pad = tokenizer.pad_token_id or 0
    prompt_ids = torch.tensor([[pad] * (p_len - len(p)) + p for p in prompts])
    response_ids = torch.tensor([r + [pad] * (r_len - len(r)) for r in responses])
    mask = torch.tensor(
        [[0] * (p_len - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (r_len - len(r))
         for p, r in zip(prompts, responses, strict=True)]
    )  # fmt: skip
    return DataProto.from_dict(
        tensors={
            "prompts": prompt_ids,
            "responses": response_ids,
            "input_ids": torch.cat([prompt_ids, response_ids], dim=1),
            "attention_mask": mask,
        },
        non_tensors={
            "data_source": np.array([s[3] for s in samples], dtype=object),
            "reward_model": np.array([{"ground_truth": s[2]} for s in samples], dtype=object),
            "extra_info": np.array(
                [{"question": s[0], "index": i} for i, s in enumerate(samples)], dtype=object
            ),
        },
    )


def config(url: str, manager: str, function: str) -> Any:
    return OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": "pkg://rewardsvc_client.verl",
                    "name": function,
                    "reward_kwargs": {"url": url, "rubrics": RUBRICS, "run": "verl-test"},
                },
                "reward_manager": {"source": "register", "name": manager},
                "max_concurrent": 4,
                "reward_kwargs": {},
            }
        }
    )


async def reward_loop(url: str, tokenizer: Any, manager: str, data: DataProto) -> dict[str, Any]:
    """A reward-loop manager as RewardLoopWorker drives it: run_single per sample, gathered."""
    rm = load_reward_manager(config(url, manager, "compute_score_async"), tokenizer)
    outputs = await asyncio.gather(*(rm.run_single(data[i : i + 1]) for i in range(len(data))))
    infos = [o["reward_extra_info"] for o in outputs]
    return {
        "scores": [float(o["reward_score"]) for o in outputs],
        "extra": {key: [float(info[key]) for info in infos] for key in infos[0]},
    }


def legacy(
    url: str, tokenizer: Any, manager: str, function: str, data: DataProto
) -> dict[str, Any]:
    """A legacy manager (verl.workers.reward_manager) called as the trainer calls it."""
    compute_score = get_custom_reward_fn(config(url, manager, function))
    rm = get_reward_manager_cls(manager)(
        tokenizer=tokenizer, num_examine=0, compute_score=compute_score, reward_fn_key="data_source"
    )
    out = rm(data, return_dict=True)
    tensor = out["reward_tensor"]
    return {
        "scores": [float(row.sum()) for row in tensor],
        "extra": {k: [float(v) for v in values] for k, values in out["reward_extra_info"].items()},
    }


async def main() -> None:
    url, tokenizer_dir, out = sys.argv[1:4]
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    data = batch(tokenizer, SAMPLES)
    before = {
        f"loop/{name}": await reward_loop(url, tokenizer, name, data)
        for name in ("naive", "rate_limited", "dapo")
    }
    before["legacy/naive"] = legacy(url, tokenizer, "naive", "compute_score", data)
    before["legacy/batch"] = legacy(url, tokenizer, "batch", "compute_score_batch", data)
    print("OUTAGE?", flush=True)
    sys.stdin.readline()
    during_data = batch(tokenizer, SAMPLES_DURING)
    loop_task = asyncio.create_task(reward_loop(url, tokenizer, "naive", during_data))
    batch_out = await asyncio.to_thread(
        legacy, url, tokenizer, "batch", "compute_score_batch", during_data
    )
    during = {"loop/naive": await loop_task, "legacy/batch": batch_out}
    responses = [tokenizer.decode(tokenizer(r, add_special_tokens=False)["input_ids"])
                 for _, r, *_ in SAMPLES + SAMPLES_DURING]  # fmt: skip
    with open(out, "w") as f:
        json.dump({"before": before, "during": during, "responses": responses}, f)


if __name__ == "__main__":
    asyncio.run(main())
