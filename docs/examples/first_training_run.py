"""A first GRPO training run on CPU whose only reward is rewardsvc (TRL's GRPOTrainer).

Runs in its own virtual environment (torch CPU, trl and the rewardsvc client; see
docs/tutorial/first-training-run.md), against a running service (`make serve`):

    .venv-trl/bin/python docs/examples/first_training_run.py

The policy is a small instruct model: by default the SmolLM2-135M-Instruct folder that
`make serve` converts for its judges, so no model hub is needed. Prints the reward mean and
standard deviation of each step, as TRL logged them.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

# Offline (the policy is a local folder), quiet, and small on a 2-core CPU.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from rewardsvc_client.trl import trl_reward_func

CACHE = Path(os.environ.get("REWARDSVC_CACHE") or Path.home() / ".cache" / "rewardsvc")
POLICY = CACHE / "cpu-judge" / "models" / "smollm2-135m-instruct"

# Questions with a short known answer: the rubric compares each completion with `answer`.
QUESTIONS = [
    ("What is 2 + 3? Reply with the number only.", "5"),
    ("What is the capital of France? Reply with one word.", "Paris"),
    ("How many legs does a spider have? Reply with the number only.", "8"),
    ("What color is a clear daytime sky? Reply with one word.", "blue"),
]


def main() -> None:
    """Train for a few GRPO steps and print each step's reward mean and std."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the rewardsvc service")
    parser.add_argument("--rubric", default="short-answer-correctness")
    parser.add_argument("--model", default=str(POLICY), help="a Hugging Face model folder")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--out", default="grpo-run", help="TRL's output folder")
    args = parser.parse_args()

    torch.set_num_threads(2)
    rows = [{"prompt": [{"role": "user", "content": q}], "answer": a} for q, a in QUESTIONS]
    dataset = Dataset.from_list(rows)
    reward = trl_reward_func(args.url, args.rubric, reference_column="answer")

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    # float32: bfloat16 training needs a GPU (or a CPU with native bf16) and TRL's default
    # would fail here.
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    config = GRPOConfig(
        output_dir=args.out,
        max_steps=args.steps,
        per_device_train_batch_size=2 * args.num_generations,  # two prompts per step
        num_generations=args.num_generations,
        max_completion_length=16,
        learning_rate=1e-5,
        beta=0.0,  # no reference model: half the memory and forward passes
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    started = time.monotonic()
    trainer.train()
    elapsed = time.monotonic() - started

    key = f"rewards/{reward.__name__}"
    for entry in trainer.state.log_history:
        if f"{key}/mean" not in entry:
            continue
        mean, std = entry[f"{key}/mean"], entry.get(f"{key}/std")
        failed = entry.get(f"{reward.__name__}/judge_error", 0.0)
        if mean is None or std is None:  # no sample of the step had a reward: TRL masked it
            print(f"step {entry['step']}: no reward (judge_error share {failed:.2f})")
        else:
            print(f"step {entry['step']}: reward mean {mean:.3f} std {std:.3f}")
    print(f"trained {trainer.state.global_step} steps in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
