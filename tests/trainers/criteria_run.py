"""Runs in one trainer's venv: that trainer's own code path scores per-prompt-rubric rows
(tests/data/rubric_datasets) through the rewardsvc adapter, each row's rubric carried by
the field the trainer gives it (veRL's ``extra_info``, an OpenRLHF label, ART's trajectory
metadata, a verifiers task field).

argv: TRAINER URL OUT.json [TOKENIZER_DIR]. Writes what the trainer got, and the items as
the adapter sent them (prompt, completion, criteria) so that the test can ask the service
for the same items directly.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data" / "rubric_datasets"
HB = {r["prompt_id"]: r for r in map(json.loads, (DATA / "healthbench.jsonl").open())}
RAR = {r["id"]: r for r in map(json.loads, (DATA / "rar.jsonl").open())}
TEMPLATE = "per-prompt"


def question(row: dict[str, Any]) -> str:
    """A HealthBench row's user question."""
    return str(row["prompt"][-1]["content"])


async def verl(url: str, tokenizer_dir: str) -> dict[str, Any]:
    """veRL's reward-loop ``naive`` manager (compute_score_async) and the legacy ``batch``
    manager (compute_score_batch), the rubric in ``extra_info["rubrics"]``."""
    import numpy as np
    import torch
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl import DataProto
    from verl.trainer.ppo.reward import get_custom_reward_fn, load_reward_manager
    from verl.workers.reward_manager import get_reward_manager_cls

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    row = HB["hb-sunburn"]
    replies = ["Take a cool shower and use aloe vera.", "Pop the blisters."]
    prompts = [tokenizer(question(row), add_special_tokens=False)["input_ids"]] * 2
    responses = [tokenizer(r, add_special_tokens=False)["input_ids"] for r in replies]
    r_len, pad = max(map(len, responses)), tokenizer.pad_token_id or 0
    prompt_ids = torch.tensor(prompts)
    response_ids = torch.tensor([r + [pad] * (r_len - len(r)) for r in responses])
    mask = torch.tensor([[1] * len(p) + [1] * len(r) + [0] * (r_len - len(r))
                         for p, r in zip(prompts, responses, strict=True)])  # fmt: skip
    extra = {"question": question(row), "rubrics": np.array(row["rubrics"], dtype=object)}
    data = DataProto.from_dict(
        tensors={"prompts": prompt_ids, "responses": response_ids, "attention_mask": mask,
                 "input_ids": torch.cat([prompt_ids, response_ids], dim=1)},
        non_tensors={
            "data_source": np.array(["healthbench"] * 2, dtype=object),
            "reward_model": np.array([{"ground_truth": None}] * 2, dtype=object),
            "extra_info": np.array([extra, extra], dtype=object),
        },
    )  # fmt: skip
    kwargs = {"url": url, "rubric": TEMPLATE, "criteria_key": "rubrics",
              "criteria_format": "healthbench", "run": "verl-criteria"}  # fmt: skip

    def config(manager: str, function: str) -> Any:
        return OmegaConf.create({"reward": {
            "custom_reward_function": {"path": "pkg://rewardsvc_client.verl", "name": function,
                                       "reward_kwargs": kwargs},
            "reward_manager": {"source": "register", "name": manager},
            "max_concurrent": 4, "reward_kwargs": {}}})  # fmt: skip

    loop = load_reward_manager(config("naive", "compute_score_async"), tokenizer)
    outs = await asyncio.gather(*(loop.run_single(data[i : i + 1]) for i in range(2)))
    fn = get_custom_reward_fn(config("batch", "compute_score_batch"))
    legacy = get_reward_manager_cls("batch")(
        tokenizer=tokenizer, num_examine=0, compute_score=fn, reward_fn_key="data_source"
    )(data, return_dict=True)
    decoded = [tokenizer.decode(r) for r in responses]
    return {
        "rewards": {"loop/naive": [float(o["reward_score"]) for o in outs],
                    "legacy/batch": [float(row.sum()) for row in legacy["reward_tensor"]]},
        "items": [{"prompt": question(row), "completion": d, "criteria": row["rubrics"],
                   "format": "healthbench"} for d in decoded],
    }  # fmt: skip


def _openrlhf_executor() -> Any:
    """OpenRLHF's executor class, its package's heavy __init__ chain bypassed (as in
    openrlhf_run.py)."""
    import importlib.util
    import types

    spec = importlib.util.find_spec("openrlhf")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    for name, path in (("openrlhf", root), ("openrlhf.utils", root / "utils")):
        module = types.ModuleType(name)
        module.__path__ = [str(path)]
        sys.modules[name] = module
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    return SingleTurnAgentExecutor


async def openrlhf(url: str, _: str) -> dict[str, Any]:
    """OpenRLHF's remote-reward client on the route (``route_url``) and on the python-file
    hook, the rubric in the label (``rubric_label``)."""
    import os

    import rewardsvc_client.openrlhf as hook_module
    from rewardsvc_client.openrlhf import route_url, rubric_label

    executor = _openrlhf_executor()
    row = RAR["rar-boiling"]
    prompt = f"<|im_start|>user\n{row['question']}<|im_end|>\n<|im_start|>assistant\n"
    replies = ["Air pressure is lower up high, so water boils sooner.", "The air is cold."]
    label = rubric_label(row["rubric"], row["reference_answer"])
    http = executor(remote_rm_url=[route_url(url, TEMPLATE, criteria_format="rar")])
    os.environ.update({"REWARDSVC_URL": url, "REWARDSVC_RUBRIC": TEMPLATE,
                       "REWARDSVC_CRITERIA_FORMAT": "rar"})  # fmt: skip
    func = executor(remote_rm_url=hook_module.__file__)
    out: dict[str, Any] = {}
    for path, ex, fetch in (("http", http, "_fetch_rewards_via_http"),
                            ("func", func, "_fetch_rewards_via_func")):  # fmt: skip
        infos = await asyncio.gather(
            *(getattr(ex, fetch)([prompt + r + "<|im_end|>"], [prompt], [label]) for r in replies)
        )
        out[path] = [info[0]["rewards"][0] for info in infos]
    return {
        "rewards": out,
        "items": [{"prompt": prompt, "completion": r, "criteria": row["rubric"], "format": "rar",
                   "reference": row["reference_answer"]} for r in replies],
    }  # fmt: skip


async def art(url: str, _: str) -> dict[str, Any]:
    """ART's ``gather_trajectory_groups`` with the group scorer; the rubric as JSON text in
    each trajectory's metadata (ART's metadata values are scalars)."""
    import art as art_package

    from rewardsvc_client.art import make_group_scorer

    row = HB["hb-sunburn"]
    replies = ["Cool compresses and aloe vera help.", "Pop the blisters to heal faster."]

    async def group() -> Any:
        return art_package.TrajectoryGroup([
            art_package.Trajectory(
                messages_and_choices=[{"role": "user", "content": question(row)},
                                      {"role": "assistant", "content": r}],
                metadata={"criteria": json.dumps(row["rubrics"])}, reward=0.0,
            ) for r in replies
        ])  # fmt: skip

    score = make_group_scorer(url, TEMPLATE, criteria_format="healthbench", run="art-criteria")
    (scored,) = await art_package.gather_trajectory_groups(
        [group()], pbar_desc=None, after_each=score
    )
    return {
        "rewards": {"gather": [t.reward for t in scored.trajectories]},
        "items": [{"prompt": [{"role": "user", "content": question(row)}],
                   "completion": [{"role": "assistant", "content": r}],
                   "criteria": row["rubrics"], "format": "healthbench"} for r in replies],
    }  # fmt: skip


async def verifiers(url: str, _: str) -> dict[str, Any]:
    """verifiers 0.4's ``Task.score`` with the rewardsvc judge plugged by id; the rubric in
    a task field (``criteria_field``)."""
    from pydantic import Field
    from verifiers.v1 import AgentConfig, Task, TaskConfig, TaskData
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.trace import AgentInfo, Trace, TraceTask
    from verifiers.v1.types import AssistantMessage, UserMessage

    class RubricTask(TaskData):
        rubric: list[dict[str, Any]] = Field(default_factory=list)

    row = RAR["rar-boiling"]
    replies = ["Lower air pressure lets water boil at a lower temperature.", "Cold air."]
    judge = {
        "id": "rewardsvc_judge",
        "url": url,
        "rubric": TEMPLATE,
        "answer_field": "",
        "criteria_field": "rubric",
        "criteria_format": "rar",
        "judge_error_wait": 60.0,
    }

    async def one(reply: str) -> float:
        data = RubricTask(prompt=[UserMessage(content=row["question"])], rubric=row["rubric"])
        task: Task = Task(data, TaskConfig(judges=[judge]))
        trace = Trace(
            task=TraceTask(type="RubricTask", data=data), agent=AgentInfo(config=AgentConfig()),
            nodes=[MessageNode(message=UserMessage(content=row["question"])),
                   MessageNode(parent=0, message=AssistantMessage(content=reply), sampled=True)],
        )  # fmt: skip
        await task.score(trace)
        return float(trace.rewards["rewardsvc_judge"].score)

    return {
        "rewards": {"task.score": list(await asyncio.gather(*(one(r) for r in replies)))},
        "items": [{"prompt": [{"role": "user", "content": row["question"]}], "completion": r,
                   "criteria": row["rubric"], "format": "rar"} for r in replies],
    }  # fmt: skip


TRAINERS: dict[str, Callable[[str, str], Awaitable[dict[str, Any]]]] = {
    "verl": verl,
    "openrlhf": openrlhf,
    "art": art,
    "verifiers": verifiers,
}


async def main() -> None:
    trainer, url, out = sys.argv[1:4]
    extra = sys.argv[4] if len(sys.argv) > 4 else ""
    result = await TRAINERS[trainer](url, extra)
    Path(out).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
