"""Peer: the ``verifiers`` package's rubric judge, set up as its documentation describes.

Runs in the separate bench venv (verifiers pins ``openai<3``; rewardsvc uses openai 3), so
it imports nothing from rewardsvc or the rest of ``bench``. verifiers 0.4 replaced the
legacy ``JudgeRubric`` (one yes/no judge call per rollout) with the plug-in
``RubricJudge``: a TOML/JSON list of criteria, each with a weight and ordered answer
choices, graded by one chat call per rollout that returns a JSON verdict (with a
one-sentence reason) for every criterion; the reward is the weighted mean of the
normalized choices. That is what a user plugs into ``taskset.task.judges``, and what
``Task.score`` calls per rollout as ``judge.score(task, trace)``; this script makes the
same call on the same items, at vf-eval's default rollout concurrency (128).

Usage: ``python -m bench.peer_verifiers SPEC.json OUT.json``; SPEC holds base_url, model,
criteria (name, text, weight, choices worst to best), sampling, concurrency, warmup and
items (prompt, completion, reference).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import tomli_w
from verifiers.v1.judges import RubricJudge, RubricJudgeConfig
from verifiers.v1.task import WireTaskData
from verifiers.v1.trace import AgentConfig, AgentInfo, Trace, TraceTask


def _trace(item: dict[str, Any]) -> tuple[WireTaskData, Trace]:
    """The task row and a finished rollout whose final reply is the item's completion."""
    fields: dict[str, Any] = {"prompt": item["prompt"]}
    if item.get("reference") is not None:
        fields["answer"] = item["reference"]
    task = WireTaskData(**fields)
    trace = Trace(
        task=TraceTask(type="bench", data=task),
        agent=AgentInfo(config=AgentConfig()),
        root_reply=item["completion"],
    )
    return task, trace


async def _score(
    judges: dict[bool, RubricJudge], item: dict[str, Any], sem: asyncio.Semaphore
) -> dict[str, Any]:
    task, trace = _trace(item)
    judge = judges[item.get("reference") is not None]
    async with sem:
        try:
            reward: float | None = await judge.score(task, trace)
            error = None
        except Exception as exc:  # verifiers raises on an unparseable verdict: no reward
            reward, error = None, f"{type(exc).__name__}: {str(exc)[:200]}"
    usage = trace.extra_usage
    return {
        "id": item.get("id"),
        "reward": reward,
        "error": error,
        "prompt_tokens": sum(int(u.prompt_tokens or 0) for u in usage),
        "completion_tokens": sum(int(u.completion_tokens or 0) for u in usage),
    }


async def _run(spec: dict[str, Any], workdir: Path) -> dict[str, Any]:
    criteria_file = workdir / "criteria.toml"
    criteria_file.write_text(tomli_w.dumps({"criteria": spec["criteria"]}))
    common = {
        "path": criteria_file,
        "model": spec["model"],
        "base_url": spec["base_url"],
        "api_key_var": "BENCH_JUDGE_API_KEY",  # unset: verifiers sends "EMPTY", as vLLM needs
        "view": "last_reply",  # grade the final reply, as the other contenders do
        "sampling": spec["sampling"],
    }
    judges = {
        False: RubricJudge(RubricJudgeConfig(**common)),
        True: RubricJudge(RubricJudgeConfig(**common, answer_field="answer")),
    }
    sem = asyncio.Semaphore(spec["concurrency"])
    if spec["warmup"]:
        await asyncio.gather(*(_score(judges, it, sem) for it in spec["warmup"]))
    start = time.perf_counter()
    results = await asyncio.gather(*(_score(judges, it, sem) for it in spec["items"]))
    elapsed = time.perf_counter() - start
    return {"elapsed_s": elapsed, "results": results}


def main() -> None:
    """Read the spec, score the items, write the results."""
    spec_path, out_path = Path(sys.argv[1]), Path(sys.argv[2])
    spec = json.loads(spec_path.read_text())
    out = asyncio.run(_run(spec, spec_path.parent))
    out_path.write_text(json.dumps(out))


if __name__ == "__main__":
    main()
