"""Peers written the way users write them, on the same judge, rubric and items.

- ``healthbench_style``: a HealthBench-style grader (as described for openai simple-evals'
  HealthBench): one call per rubric criterion, showing the conversation and that one
  criterion with its points, asking for a JSON object with an ``explanation`` and a boolean
  ``criteria_met``; the score is the points of met criteria over the total positive points
  (negative-point criteria subtract when met), clipped to [0, 1]. Calls run concurrently.
- ``trl_style``: a typical TRL ``reward_funcs`` function: for each completion in turn, one
  call with the whole rubric asking for a 1-10 score, the first number parsed and divided
  by 10 (0.0 when no number is found, as such functions usually do).
- ``verifiers_rubric_judge``: ``bench/peer_verifiers.py`` run in the bench venv.

Each returns a :class:`PeerRun` with one entry per item (reward or error, tokens).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai

from bench.harness import REPO_ROOT, ensure_bench_venv, log
from rewardsvc.core.rubric import Criterion, Rubric


@dataclass
class PeerRun:
    """What one peer produced for the measured items."""

    elapsed_s: float
    rewards: list[float | None]
    errors: list[str | None]
    prompt_tokens: int
    completion_tokens: int
    calls: int
    notes: dict[str, Any] = field(default_factory=dict)


def conversation(item: dict[str, Any]) -> str:
    """The item as a short transcript (plus the reference, when it has one)."""
    text = f"user: {item['prompt']}\n\nassistant: {item['completion']}"
    if item.get("reference"):
        text += f"\n\n(Reference answer, for comparison: {item['reference']})"
    return text


def points(criterion: Criterion) -> int:
    """The criterion's weight as HealthBench-style points (negative for a pitfall)."""
    return round(criterion.weight)


# ------------------------------------------------------------------ HealthBench-style

HEALTHBENCH_PROMPT = """You will read a conversation between a user and an AI assistant, and \
one rubric item. Decide whether the assistant's last reply meets the rubric item.

# Conversation
{conversation}

# Rubric item
[{points}] {criterion}

# What to return
A JSON object with two fields:
- "explanation": a string saying why the reply does or does not meet the rubric item.
- "criteria_met": true if the reply meets the rubric item, false otherwise. If the item \
describes something undesirable, true means the undesirable thing is present.
If the rubric item lists several conditions, all of them must hold for true.

Return only the JSON object, in a markdown json code block, and nothing else."""


def parse_criteria_met(text: str) -> bool | None:
    """``criteria_met`` from the grader's reply (a fenced or bare JSON object), if any."""
    cleaned = re.sub(r"^```(?:json)?|```$", "", text.strip(), flags=re.M).strip()
    start = cleaned.find("{")
    while start != -1:
        try:
            obj, _ = json.JSONDecoder().raw_decode(cleaned[start:])
        except json.JSONDecodeError:
            start = cleaned.find("{", start + 1)
            continue
        if isinstance(obj, dict) and isinstance(obj.get("criteria_met"), bool):
            return obj["criteria_met"]
        start = cleaned.find("{", start + 1)
    return None


async def healthbench_style(
    url: str,
    model: str,
    rubric: Rubric,
    items: Sequence[dict[str, Any]],
    warmup: Sequence[dict[str, Any]],
    max_tokens: int = 256,
) -> PeerRun:
    """Grade every (item, criterion) with its own JSON call, all concurrently."""
    client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=2, timeout=600)
    tokens = {"prompt": 0, "completion": 0, "calls": 0}

    async def grade(item: dict[str, Any], criterion: Criterion) -> bool | None:
        content = HEALTHBENCH_PROMPT.format(
            conversation=conversation(item), points=points(criterion), criterion=criterion.text
        )
        response = await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": content}],
            temperature=0.0,
            max_tokens=max_tokens,
        )
        tokens["calls"] += 1
        if response.usage is not None:
            tokens["prompt"] += response.usage.prompt_tokens or 0
            tokens["completion"] += response.usage.completion_tokens or 0
        return parse_criteria_met(response.choices[0].message.content or "")

    async def score(item: dict[str, Any]) -> tuple[float | None, str | None]:
        met = await asyncio.gather(*(grade(item, c) for c in rubric.criteria))
        if any(m is None for m in met):
            return None, "grader reply without a valid criteria_met"
        total = sum(points(c) for c in rubric.criteria if points(c) > 0)
        got = sum(points(c) for c, m in zip(rubric.criteria, met, strict=True) if m)
        return min(1.0, max(0.0, got / total)), None

    await asyncio.gather(*(score(it) for it in warmup))
    tokens.update(prompt=0, completion=0, calls=0)
    start = time.perf_counter()
    outcomes = await asyncio.gather(*(score(it) for it in items))
    elapsed = time.perf_counter() - start
    await client.close()
    return PeerRun(
        elapsed_s=elapsed,
        rewards=[r for r, _ in outcomes],
        errors=[e for _, e in outcomes],
        prompt_tokens=tokens["prompt"],
        completion_tokens=tokens["completion"],
        calls=tokens["calls"],
        notes={"max_tokens": max_tokens, "temperature": 0.0},
    )


# ------------------------------------------------------------------ TRL-style

TRL_PROMPT = """You are an expert evaluator. Rate the assistant's answer to the question below \
on a scale from 1 to 10, using this rubric:
{rubric}

Question:
{prompt}
{reference}
Answer:
{completion}

Reply with a single number from 1 to 10 and nothing else."""


def trl_rubric_text(rubric: Rubric) -> str:
    """The rubric as a bullet list for a single holistic prompt."""
    lines = []
    for c in rubric.criteria:
        kind = "must avoid" if c.category == "pitfall" else c.category
        lines.append(f"- ({kind}) {c.text}")
    return "\n".join(lines)


def trl_messages(
    rubric: Rubric, prompt: str, completion: str, reference: str | None = None
) -> list[dict[str, str]]:
    """The one chat message the TRL-style reward function sends for a completion."""
    content = TRL_PROMPT.format(
        rubric=trl_rubric_text(rubric),
        prompt=prompt,
        reference=f"\nReference answer:\n{reference}\n" if reference else "",
        completion=completion,
    )
    return [{"role": "user", "content": content}]


def make_trl_reward_func(url: str, model: str, rubric: Rubric, stats: dict[str, Any]):
    """A reward function with TRL's signature that calls the judge once per completion."""
    client = openai.OpenAI(base_url=url, api_key="EMPTY", timeout=600)

    def rubric_judge_reward(
        prompts: list[str],
        completions: list[str],
        reference: list[str | None] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        rewards = []
        refs = reference or [None] * len(prompts)
        for prompt, completion, ref in zip(prompts, completions, refs, strict=True):
            response = client.chat.completions.create(
                model=model,
                messages=trl_messages(rubric, prompt, completion, ref),
                temperature=0.0,
                max_tokens=8,
            )
            stats["calls"] += 1
            if response.usage is not None:
                stats["prompt"] += response.usage.prompt_tokens or 0
                stats["completion"] += response.usage.completion_tokens or 0
            match = re.search(r"\d+", response.choices[0].message.content or "")
            stats["parsed"].append(match is not None)
            if match is None:
                rewards.append(0.0)
            else:
                rewards.append(min(10, max(1, int(match.group()))) / 10)
        return rewards

    return rubric_judge_reward


def trl_style(
    url: str,
    model: str,
    rubric: Rubric,
    items: Sequence[dict[str, Any]],
    warmup: Sequence[dict[str, Any]],
    batch_size: int = 8,
) -> PeerRun:
    """Call the reward function batch by batch, as one trainer process does."""
    stats: dict[str, Any] = {"prompt": 0, "completion": 0, "calls": 0, "parsed": []}
    func = make_trl_reward_func(url, model, rubric, stats)

    def run(batch: Sequence[dict[str, Any]]) -> list[float]:
        return func(
            prompts=[it["prompt"] for it in batch],
            completions=[it["completion"] for it in batch],
            reference=[it.get("reference") for it in batch],
        )

    run(warmup)
    stats.update(prompt=0, completion=0, calls=0, parsed=[])
    rewards: list[float | None] = []
    start = time.perf_counter()
    for i in range(0, len(items), batch_size):
        rewards += run(items[i : i + batch_size])
    elapsed = time.perf_counter() - start
    return PeerRun(
        elapsed_s=elapsed,
        # The function hands 0.0 to the trainer when no number parses; that is no reward.
        rewards=[r if ok else None for r, ok in zip(rewards, stats["parsed"], strict=True)],
        errors=[None if ok else "no number in the reply (0.0 given)" for ok in stats["parsed"]],
        prompt_tokens=stats["prompt"],
        completion_tokens=stats["completion"],
        calls=stats["calls"],
        notes={"max_tokens": 8, "temperature": 0.0, "batch_size": batch_size},
    )


# ------------------------------------------------------------------ verifiers


def verifiers_criteria(rubric: Rubric) -> list[dict[str, Any]]:
    """The bench rubric in verifiers' format: weights >= 0, choices ordered worst to best."""
    out = []
    for c in rubric.criteria:
        if c.scale == "likert":
            low, high = c.likert_range
            choices = [str(v) for v in range(low, high + 1)]
        else:
            # A pitfall is asked as "is the problem present?": "yes" is the worst answer.
            choices = ["yes", "no"] if c.category == "pitfall" else ["no", "yes"]
        out.append({"name": c.id, "text": c.text, "weight": abs(c.weight), "choices": choices})
    return out


def verifiers_rubric_judge(
    url: str,
    model: str,
    rubric: Rubric,
    items: Sequence[dict[str, Any]],
    warmup: Sequence[dict[str, Any]],
    max_tokens: int = 256,
) -> PeerRun:
    """Run ``bench/peer_verifiers.py`` in the bench venv and read its results."""
    python = ensure_bench_venv()
    spec = {
        "base_url": url,
        "model": model,
        "criteria": verifiers_criteria(rubric),
        "sampling": {"temperature": 0.0, "max_tokens": max_tokens},
        "concurrency": 128,
        "warmup": list(warmup),
        "items": list(items),
    }
    with tempfile.TemporaryDirectory(prefix="bench-verifiers-") as tmp:
        spec_path, out_path = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec_path.write_text(json.dumps(spec))
        log(f"verifiers RubricJudge on {len(items)} items (bench venv: {python})")
        proc = subprocess.run(
            [str(python), "-m", "bench.peer_verifiers", str(spec_path), str(out_path)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"verifiers peer failed:\n{proc.stderr[-3000:]}")
        out = json.loads(out_path.read_text())
    results = out["results"]
    return PeerRun(
        elapsed_s=out["elapsed_s"],
        rewards=[r["reward"] for r in results],
        errors=[r["error"] for r in results],
        prompt_tokens=sum(r["prompt_tokens"] for r in results),
        completion_tokens=sum(r["completion_tokens"] for r in results),
        calls=len(results),
        notes={"max_tokens": max_tokens, "temperature": 0.0, "concurrency": 128},
    )
