"""A real, tiny TRL GRPO run whose reward is rewardsvc (driven by tests/test_trl_run.py).

Runs in its own virtual environment (torch CPU + trl + rewardsvc-client), never in the
service's. It trains a small causal LM for a few optimizer steps with GRPOTrainer, the
rewardsvc TRL adapter as the only reward function, and writes a JSON report: TRL's
log_history, the per-completion rewards TRL logged (its completions tables), and what the
adapter returned to TRL on each call.

    python tests/trl_run_script.py --model DIR --out report.json \
        --url http://127.0.0.1:8000 --rubric short-answer-correctness
    python tests/trl_run_script.py --model DIR --out report.json --dummy   # no service
    python tests/trl_run_script.py --model DIR --out report.json --url URL --rubric per-prompt \
        --dataset tests/data/per_prompt_grpo.jsonl --criteria-column rubrics \
        --criteria-format healthbench        # a rubric per prompt, from the dataset's column
    python tests/trl_run_script.py --model DIR --out report.json --url URL \
        --rubric math-objectives --objectives correct,explanation \
        --dataset tests/data/math_objectives_grpo.jsonl  # one reward function per objective
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

# Keep the run offline and quiet, and small on a shared 2-core machine.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_DISABLED", "true")

# A handful of questions with a known short answer (the rubric compares with `answer`).
QUESTIONS = [
    ("What is 2 + 3? Reply with the number only.", "5"),
    ("What is the capital of France? Reply with one word.", "Paris"),
    ("How many legs does a spider have? Reply with the number only.", "8"),
    ("What color is a clear daytime sky? Reply with one word.", "blue"),
]


def _clean(value: Any) -> Any:
    """JSON-safe: NaN -> None, numpy/pandas scalars and arrays -> Python values."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="HF model folder of the policy")
    parser.add_argument("--out", required=True, help="JSON report to write")
    parser.add_argument("--url", help="rewardsvc base URL")
    parser.add_argument("--rubric", default="short-answer-correctness")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--dummy", action="store_true", help="local length reward, no service")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--num-generations", type=int, default=2)
    parser.add_argument("--max-completion-length", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dataset", help="JSONL rows with a conversational 'prompt' column")
    parser.add_argument("--reference-column", default="answer")
    parser.add_argument("--criteria-column", default=None)
    parser.add_argument("--criteria-format", default=None)
    parser.add_argument(
        "--objectives", default=None, help="comma-separated: one reward function each (GDPO)"
    )
    args = parser.parse_args()
    if not args.dummy and not args.url:
        parser.error("--url is required unless --dummy")

    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(args.threads)
    out_dir = Path(args.out).with_suffix("")
    out_dir.mkdir(parents=True, exist_ok=True)

    # Conversational prompts: TRL hands the reward function message lists, the case the
    # adapter must pass through as messages.
    if args.dataset:
        lines = Path(args.dataset).read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
    else:
        rows = [{"prompt": [{"role": "user", "content": q}], "answer": a} for q, a in QUESTIONS]
    dataset = Dataset.from_list(rows)

    calls: list[dict[str, Any]] = []
    reward_funcs: list[Any] = []
    run_id = None
    if args.dummy:

        async def reward(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
            return [min(1.0, len(c[0]["content"]) / 64) for c in completions]

        reward.__name__ = "dummy/length"
        reward_func: Any = reward
    elif args.objectives:
        from rewardsvc_client.trl import trl_objective_funcs

        # The objective functions go to TRL as they are (no recording wrapper), so that the
        # run also shows TRL taking TRLObjective instances as async reward functions.
        reward_funcs = trl_objective_funcs(
            args.url,
            args.rubric,
            args.objectives.split(","),
            reference_column=args.reference_column or None,
            api_key=args.api_key,
        )
        run_id = reward_funcs[0].shared.scorer.run_id
    else:
        from rewardsvc_client.trl import trl_reward_func

        adapter = trl_reward_func(
            args.url,
            args.rubric,
            reference_column=args.reference_column or None,
            api_key=args.api_key,
            criteria_column=args.criteria_column,
            criteria_format=args.criteria_format,
        )

        # Record what the adapter hands back to TRL, call by call, to compare with what TRL
        # logged (completions tables, log_history) and with the service's reward log.
        async def recorded(
            prompts: list[Any], completions: list[Any], **kwargs: Any
        ) -> list[float | None]:
            rewards = await adapter(prompts, completions, **kwargs)
            state = kwargs.get("trainer_state")
            calls.append(
                {
                    "step": getattr(state, "global_step", None),
                    "prompts": prompts,
                    "completions": completions,
                    "answers": kwargs.get("answer"),
                    "criteria": kwargs.get(args.criteria_column) if args.criteria_column else None,
                    "rewards": rewards,
                    "kwargs": sorted(kwargs),
                }
            )
            return rewards

        recorded.__name__ = adapter.__name__
        run_id = adapter.rewardsvc.run_id  # type: ignore[attr-defined]
        reward_func = recorded
    if not args.objectives:
        reward_funcs = [reward_func]

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)

    config = GRPOConfig(
        output_dir=str(out_dir / "trainer"),
        max_steps=args.steps,
        per_device_train_batch_size=2 * args.num_generations,  # two prompts per step
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        learning_rate=1e-5,
        beta=0.0,  # no reference model: half the memory and forward passes
        gradient_checkpointing=False,  # recomputation buys nothing for a 135M model
        temperature=1.0,
        logging_steps=1,
        log_completions=True,
        num_completions_to_print=0,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        seed=0,
        dataloader_num_workers=0,
        # GDPO: each objective normalized within its group before the sum.
        multi_objective_aggregation="normalize_then_sum"
        if args.objectives
        else "sum_then_normalize",
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    started = time.monotonic()
    trainer.train()
    elapsed = time.monotonic() - started

    import pandas as pd

    tables = []
    for path in sorted((Path(config.output_dir) / "completions").glob("completions_*.parquet")):
        frame = pd.read_parquet(path)
        tables.append({"file": path.name, "rows": _clean(frame.to_dict(orient="records"))})

    import trl

    report = {
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "trl": trl.__version__,
            "transformers": __import__("transformers").__version__,
        },
        "reward_func_name": trainer.reward_func_names[0],
        "reward_func_names": trainer.reward_func_names,
        "requests": reward_funcs[0].shared.requests if args.objectives else None,
        "run_id": run_id,
        "global_step": trainer.state.global_step,
        "train_seconds": elapsed,
        "log_history": _clean(trainer.state.log_history),
        "completions_tables": tables,
        "calls": _clean(calls),
    }
    Path(args.out).write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    print(f"trained {trainer.state.global_step} steps in {elapsed:.1f} s; report: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
