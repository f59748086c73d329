"""Group prefix sharing: what a GRPO group's judge calls prefill under two prompt layouts.

G = 8 completions of one prompt, scored against that prompt's own 12-criterion rubric
(HealthBench format, written for this bench, read by ``core.criteria_formats`` and derived
from the bench rubric as ``/v1/rewards`` derives an item's rubric), on the real CPU judge,
through the service's own judge client (``judges.backends.Backend``) and scoring code
(``batching.score_batch``, the logprob method), calls sent one after another so that each
can find what the calls before it computed. Two layouts of the same text:

- **criteria before the completion** (the group layout): instructions, the criteria, the
  task, then the completion and the answer line. For method ``batched`` this is the
  service's prompt as rendered; for method ``logprob`` (one call per criterion) the bench
  moves the criterion above the completion;
- **criteria after the completion**: instructions, the task, the completion, then the
  criteria. For ``logprob`` this is the service's prompt; for ``batched`` the bench moves
  the numbered questions below the completion.

Figure: prompt tokens the judge computed per reward, from vLLM's own prefix-cache counters
(``vllm:prefix_cache_queries_total`` minus ``hits_total``) around each run, the judge's
prefix cache emptied before it and the rubric tagged per run; beside it, the least each
layout allows (``bench.prefill``). Target (issue 25): batched, group layout ≤ 0.5× the
criteria-after layout, in one run.

    .venv/bin/python -m bench.group_layout [--repeats 3] [--out bench/results]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from bench import prefill
from bench.group_texts import COMPLETIONS, CRITERIA_ROWS, PROMPT
from bench.harness import (
    PRIMARY_MODEL,
    PRIMARY_URL,
    http_get,
    judge_entry,
    log,
    machine,
    prefix_counters,
    reset_prefix_cache,
    rubric_variant,
    served_models,
)
from bench.items import bench_items
from bench.outputs import add_out_argument, write_results
from rewardsvc.core.criteria_formats import read_criteria
from rewardsvc.core.item_rubric import derive
from rewardsvc.core.pool import JudgeConfig, Sampling
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import prompts, questions
from rewardsvc.judges.backends import Backend
from rewardsvc.judges.batching import Batch, batch_prompt, score_batch
from rewardsvc.judges.failures import ReplyFailed
from rewardsvc.judges.items import ITEM_TRAILER
from rewardsvc.judges.methods import Call, method_for
from rewardsvc.judges.prompts import Prompt
from rewardsvc.judges.shapes import CHAT

TARGET = 0.5
TASK_HEAD = "The task given to the assistant:\n"
RESPONSE_HEAD = "The assistant's response to grade:\n"
_SERVED = re.compile(r"^vllm:request_success_total\{[^}]*\} ([0-9.e+]+)$", re.M)


def judge_counters() -> dict[str, float]:
    """The judge's finished requests (``vllm:request_success_total``) and prefix-cache
    counters (prompt tokens queried, found cached), as ``bench.batching`` reads them."""
    status, text = http_get(PRIMARY_URL.removesuffix("/v1") + "/metrics")
    if status != 200:
        raise RuntimeError(f"no /metrics from the judge at {PRIMARY_URL}")
    return {"served": sum(float(v) for v in _SERVED.findall(text)), **prefix_counters(text)}


def group_rubric(tag: str) -> Rubric:
    """The prompt's own rubric: the bench rubric (tagged) as template, the 12 criteria in
    place of its own."""
    return derive(rubric_variant(tag), read_criteria("healthbench", CRITERIA_ROWS), "replace")


@dataclass(frozen=True)
class Parts:
    """A rendered chat call's user text cut into its parts (the rules are the system
    message): ``context`` the rubric's instructions, ``lead`` what stands between them and
    the task, ``task`` the task block, ``response`` the response block and trailer, ``tail``
    what follows."""

    context: str
    lead: str
    task: str
    response: str
    tail: str

    @classmethod
    def of(cls, prompt: Prompt, rubric: Rubric) -> Parts:
        """The parts of ``prompt`` (a bench text holds neither header itself)."""
        assert prompt.messages is not None
        body = prompt.messages[-1]["content"]
        assert body.count(TASK_HEAD) == 1 and body.count(RESPONSE_HEAD) == 1, "header in a text"
        context = prompts.shared_context(rubric, False)
        t, r = body.index(TASK_HEAD), body.index(RESPONSE_HEAD)
        end = body.index(ITEM_TRAILER) + len(ITEM_TRAILER)
        return cls(
            context,
            body[len(context) : t].strip("\n"),
            body[t:r].strip("\n"),
            body[r:end],
            body[end:].strip("\n"),
        )

    def prompt(self, like: Prompt, *blocks: str) -> Prompt:
        """``like`` with its user text made of ``blocks`` (empty ones left out)."""
        assert like.messages is not None
        body = "\n\n".join(b for b in blocks if b)
        return replace(like, messages=[*like.messages[:-1], {"role": "user", "content": body}])


def batched_calls(rubric: Rubric, rollout: Rollout, after: bool) -> list[Batch]:
    """The one batched call of an item: as the service renders it, or with the numbered
    questions moved below the response."""
    batch = batch_prompt(rubric, rubric.criteria, rollout, CHAT)
    if not after:
        return [batch]
    p = Parts.of(batch.prompt, rubric)
    lead = p.lead.replace("the response shown after them", "the response shown above")
    return [
        replace(batch, prompt=p.prompt(batch.prompt, p.context, p.task, p.response, lead, p.tail))
    ]


def task_first(rubric: Rubric, rollout: Rollout, moved: bool = True) -> Batch:
    """The batched call with the task above the numbered questions (instructions, task,
    criteria, response): the order issue 25 sketched, priced by :func:`orders` only
    (``moved=False``: the service's call)."""
    batch = batch_prompt(rubric, rubric.criteria, rollout, CHAT)
    if not moved:
        return batch
    p = Parts.of(batch.prompt, rubric)
    body = (p.context, p.task, p.lead, p.response, p.tail)
    return replace(batch, prompt=p.prompt(batch.prompt, *body))


def orders(tag: str) -> dict[str, dict[str, float]]:
    """Least prefill per reward of the batched call with the criteria before the task (the
    service) and after it (:func:`task_first`): for the group, and for the 16 distinct
    prompts of ``bench.items`` under one library rubric (the bench rubric), where only
    the first order shares the criteria between prompts. Tokenized only, not sent."""
    block = prefill.block_size(PRIMARY_URL)
    group = group_rubric(tag)
    library = rubric_variant(tag)
    cases = {
        "group": (group, [Rollout(PROMPT, c) for c in COMPLETIONS]),
        "library_rubric_16_prompts": (
            library,
            [Rollout(i["prompt"], i["completion"], i.get("reference")) for i in bench_items(16)],
        ),
    }
    out = {}
    for case, (rubric, rollouts) in cases.items():
        got = {}
        for order, moved in (("criteria_first", False), ("task_first", True)):
            tokens = [
                prefill.tokenize(PRIMARY_URL, PRIMARY_MODEL, m)
                for m in messages_of([task_first(rubric, r, moved) for r in rollouts])
            ]
            got[order] = prefill.least_prefill([], tokens, block) / len(rollouts)
        out[case] = got
    return out


def criterion_calls(rubric: Rubric, rollout: Rollout, after: bool) -> list[Prompt]:
    """The K logprob calls of an item: as the service renders them, or with each call's
    criterion and question moved above the response (the answer line stays last)."""
    out = []
    for c in rubric.criteria:
        prompt = prompts.criterion_prompt(
            rubric, c, rollout, prompts.Asking(method_for("logprob"), CHAT)
        )
        if not after:
            p = Parts.of(prompt, rubric)
            asked, answer = p.tail.rsplit("\n", 1)
            prompt = p.prompt(prompt, p.context, p.task, asked, p.response, answer)
        out.append(prompt)
    return out


async def send(call: Call, method: str, calls: list[Any]) -> list[Verdict]:
    """Score the calls one after another with the service's own code; every verdict."""
    out: list[Verdict] = []
    for one in calls:
        if method == "batched":
            out += (await score_batch(call, one)).values()
            continue
        try:
            out.append(await method_for("logprob").score(call, one))
        except ReplyFailed as exc:
            out.append(Verdict.failed(str(exc)))
    return out


Render = Callable[[Rubric, Rollout, bool], list[Any]]
METHODS: dict[str, Render] = {"batched": batched_calls, "logprob": criterion_calls}


def messages_of(calls: list[Any]) -> list[Any]:
    """The chat messages of batches or prompts."""
    return [(c.prompt if isinstance(c, Batch) else c).messages for c in calls]


async def one_run(backend: Backend, method: str, after: bool, tag: str) -> dict[str, Any]:
    """One measured run: the group's calls in one layout, on an emptied prefix cache."""
    rubric = group_rubric(tag)
    rollouts = [Rollout(PROMPT, c) for c in COMPLETIONS]
    calls = [x for r in rollouts for x in METHODS[method](rubric, r, after)]
    call = Call(backend, CHAT, Sampling(), questions.REASONING_MAX_CHARS)
    reset = reset_prefix_cache(PRIMARY_URL)
    before = judge_counters()
    verdicts = await send(call, method, calls)
    after_c = judge_counters()
    computed = (after_c["queries"] - before["queries"]) - (after_c["hits"] - before["hits"])
    tokens = [prefill.tokenize(PRIMARY_URL, PRIMARY_MODEL, m) for m in messages_of(calls)]
    block = prefill.block_size(PRIMARY_URL)
    scores = [v.score for v in verdicts if v.score is not None]
    return {
        "calls": len(calls),
        "prefix_cache_reset": reset,
        "foreign_requests": after_c["served"] - before["served"] - len(calls),
        "prompt_tokens_per_reward": sum(len(t) for t in tokens) / len(rollouts),
        "prefilled_per_reward": computed / len(rollouts),
        "least_prefill_per_reward": prefill.least_prefill([], tokens, block) / len(rollouts),
        "valid_verdicts": f"{len(scores)}/{len(verdicts)}",
        "mean_criterion_score": round(statistics.mean(scores), 3) if scores else None,
    }


def layout_name(method: str, after: bool) -> str:
    """The key of one (method, layout) cell."""
    return f"{method}/{'criteria_after' if after else 'criteria_before'}"


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run every (method, layout) ``repeats`` times in rotating order; the median runs."""
    if PRIMARY_MODEL not in served_models(PRIMARY_URL):
        raise RuntimeError(f"the judge {PRIMARY_MODEL} does not answer at {PRIMARY_URL}")
    backend = Backend(
        "group-layout", JudgeConfig.model_validate(judge_entry(PRIMARY_URL, PRIMARY_MODEL))
    )
    cells = [(m, a) for m in METHODS for a in (False, True)]
    runs: dict[str, list[dict[str, Any]]] = {layout_name(m, a): [] for m, a in cells}
    run_id = time.strftime("%Y%m%d%H%M%S")
    try:
        for r in range(args.repeats):
            for method, after in cells[r % len(cells) :] + cells[: r % len(cells)]:
                name = layout_name(method, after)
                log(f"round {r + 1}/{args.repeats}: {name}")
                got = await one_run(backend, method, after, f"{run_id}-{r}-{name}")
                log(f"  {got['prefilled_per_reward']:.0f} tokens prefilled per reward")
                runs[name].append(got)
    finally:
        await backend.aclose()
    chosen: dict[str, dict[str, Any]] = {}
    for name, cell in runs.items():
        ordered = sorted(cell, key=lambda g: g["prefilled_per_reward"])
        # Other clients of the shared judge add their tokens to its counters: the run with
        # the fewest of their requests is shown beside the median.
        cleanest = min(cell, key=lambda g: (g["foreign_requests"], g["prefilled_per_reward"]))
        chosen[name] = {
            **ordered[len(ordered) // 2],
            "runs": [g["prefilled_per_reward"] for g in cell],
            "runs_foreign_requests": [g["foreign_requests"] for g in cell],
            "cleanest": {k: cleanest[k] for k in ("prefilled_per_reward", "foreign_requests")},
        }

    def ratio(method: str, read: Callable[[dict[str, Any]], float]) -> float:
        before, after = chosen[layout_name(method, False)], chosen[layout_name(method, True)]
        return round(read(before) / read(after), 3)

    ratios = {
        m: {
            "measured": ratio(m, lambda c: float(c["prefilled_per_reward"])),
            "cleanest": ratio(m, lambda c: float(c["cleanest"]["prefilled_per_reward"])),
            "least": ratio(m, lambda c: float(c["least_prefill_per_reward"])),
        }
        for m in METHODS
    }
    return {
        "judge": {"url": PRIMARY_URL, "model": PRIMARY_MODEL},
        "group_size": len(COMPLETIONS),
        "criteria": len(CRITERIA_ROWS),
        "repeats": args.repeats,
        "cells": chosen,
        "before_over_after": ratios,
        "target": {
            "batched_before_over_after": ratios["batched"]["measured"],
            "max": TARGET,
            "met": ratios["batched"]["measured"] <= TARGET,
        },
        "criteria_order": orders(f"{run_id}-orders"),
        "machine": machine(),
    }


def markdown(result: dict[str, Any], command: str) -> str:
    """The figures as the Markdown report."""
    t = result["target"]
    lines = [
        "# Group prefix sharing: criteria before or after the completion",
        "",
        f"`{command}`: a GRPO group of {result['group_size']} completions of one prompt, its own "
        f"{result['criteria']}-criterion rubric, on the real CPU judge {result['judge']['model']} "
        "through the service's judge client, calls one after another; prefix cache emptied "
        f"before each run; median of {result['repeats']} runs per cell, in rotating order.",
        "",
        "| method | layout | calls | prompt tokens / reward | prefilled tokens / reward, "
        "median (runs) | foreign | fewest foreign: prefilled (foreign) | least possible | "
        "valid verdicts | mean criterion score |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, c in result["cells"].items():
        method, layout = name.split("/")
        runs = ", ".join(f"{x:.0f}" for x in c["runs"])
        lines.append(
            f"| {method} | {layout.replace('_', ' ')} | {c['calls']} | "
            f"{c['prompt_tokens_per_reward']:.0f} | **{c['prefilled_per_reward']:.0f}** ({runs}) | "
            f"{c['foreign_requests']:.0f} | {c['cleanest']['prefilled_per_reward']:.0f} "
            f"({c['cleanest']['foreign_requests']:.0f}) | {c['least_prefill_per_reward']:.0f} | "
            f"{c['valid_verdicts']} | {c['mean_criterion_score']} |"
        )
    r = result["before_over_after"]
    lines += [
        "",
        "Criteria before / after the completion, prefilled tokens per reward (medians; the "
        "runs with the fewest foreign requests; the least possible): batched "
        f"**{r['batched']['measured']}**, {r['batched']['cleanest']}, {r['batched']['least']} "
        f"(target ≤ {t['max']}: {'met' if t['met'] else 'NOT met'}); logprob "
        f"**{r['logprob']['measured']}**, {r['logprob']['cleanest']}, {r['logprob']['least']}.",
        "",
        "The service renders criteria before the completion for `batched` and after it for "
        "`logprob` (the other two cells are built by the bench from the same parts). "
        "`prefilled`: vLLM's `vllm:prefix_cache_queries_total` minus `hits_total` around the "
        "run, per reward; `least possible`: the same calls through `bench/prefill.py` (each "
        "computes what it does not share, in whole KV blocks, with an earlier call). "
        "`foreign`: requests other clients of the shared judge had finished meanwhile "
        "(`vllm:request_success_total`). The judge is a 135M model: verdicts show the calls "
        "were read, not judging quality.",
        "",
    ]
    o = result["criteria_order"]
    lines += [
        "Where the criteria stand relative to the task (batched calls, least possible prefill "
        "per reward, tokenized only): the group above, criteria first (the service) "
        f"{o['group']['criteria_first']:.0f}, task first {o['group']['task_first']:.0f}; 16 "
        "distinct prompts under one library rubric (`bench/rubric.yaml`, `bench/items.py`), "
        f"criteria first {o['library_rubric_16_prompts']['criteria_first']:.0f}, task first "
        f"{o['library_rubric_16_prompts']['task_first']:.0f}.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Run the measurement and write ``<out>.json`` and ``<out>.md``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per cell (rotating order)")
    add_out_argument(parser)
    args = parser.parse_args()
    result = asyncio.run(measure(args))
    command = f".venv/bin/python -m bench.group_layout --repeats {args.repeats}"
    write_results(args.out, "group_layout", result, markdown(result, command))


if __name__ == "__main__":
    main()
