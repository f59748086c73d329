"""The limit: a minimal direct client issuing exactly the judge calls rewardsvc issues.

It renders the same messages with ``rewardsvc.judges.prompts`` and sends them with the same
parameters (one constrained token, ``top_logprobs``, ``structured_outputs.choice``)
straight to the judge with ``openai.AsyncOpenAI`` (its ``post`` over the aiohttp transport,
the leanest way the SDK offers), all at once. No service, no HTTP hop, no cache, no
aggregation: what is left is the judge's own cost.

``verify_same_calls`` proves the claim "exactly the same calls": it sends one batch
through rewardsvc's own ``Judge`` and through this client to an in-process fake judge
that records request bodies, and compares them.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
from openai.types import Completion
from openai.types.chat import ChatCompletion

from bench.harness import REPO_ROOT
from rewardsvc.application.items import rollout_of
from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges import prompts
from rewardsvc.judges.asks import CriterionOnItem
from rewardsvc.judges.judge import build_judges
from rewardsvc.judges.methods import method_for
from rewardsvc.judges.shapes import shape_for
from rewardsvc.protocol.items import Item


def call_kwargs(rubric: Rubric, item: dict[str, Any], config: JudgeConfig) -> list[dict[str, Any]]:
    """The ``create(**kwargs)`` of every criterion call rewardsvc makes for one item."""
    if config.method != "logprob":
        raise ValueError("the direct client mirrors the logprob method only")
    rollout = rollout_of(Item.model_validate(item))
    sampling = config.sampling
    out = []
    for criterion in rubric.criteria:
        prompt = prompts.criterion_prompt(
            rubric,
            criterion,
            rollout,
            prompts.Asking(method_for(config.method), shape_for(config.api)),
        )
        choices = prompt.question.choices
        # As rewardsvc asks: only tokens spelling a prefix of an answer can carry probability
        # at the constrained position, so it asks for no more alternatives than those.
        prefixes = {c[:i] for c in choices for i in range(1, len(c) + 1)}
        top = max(1, min(sampling.top_logprobs, len(prefixes)))
        kwargs: dict[str, Any] = {
            "model": config.model,
            "max_tokens": 1,
            "temperature": sampling.temperature,
            "extra_body": {"structured_outputs": {"choice": list(choices)}},
        }
        if config.api == "chat":
            kwargs.update(messages=prompt.messages, logprobs=True, top_logprobs=top)
        else:
            kwargs.update(prompt=prompt.text, logprobs=top)
        if sampling.seed is not None:
            kwargs["seed"] = sampling.seed
        out.append(kwargs)
    return out


def wire_body(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The JSON body the openai SDK sends for ``create(**kwargs)`` (extra_body merged in)."""
    body = {k: v for k, v in kwargs.items() if k != "extra_body"}
    body.update(kwargs.get("extra_body") or {})
    return body


@dataclass
class DirectRun:
    """Totals of one direct run."""

    calls: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    elapsed_s: float = 0.0
    latencies_s: list[float] = field(default_factory=list)


class DirectClient:
    """``AsyncOpenAI`` straight to one judge, optionally capped at ``max_concurrency`` calls."""

    def __init__(self, url: str, api: str = "chat", max_concurrency: int | None = None):
        self.api = api
        # The same transport and pool sizing as rewardsvc's backend: one connection per
        # allowed in-flight call, all kept alive. "All at once" still needs a number here
        # (aiohttp's own default is 100 connections).
        cap = max_concurrency or 1024
        limits = httpx2.Limits(max_connections=cap, max_keepalive_connections=cap)
        self.client = openai.AsyncOpenAI(
            base_url=url,
            api_key="EMPTY",
            max_retries=0,
            timeout=600,
            http_client=openai.DefaultAioHttpClient(timeout=600, limits=limits),
        )
        self.sem = asyncio.Semaphore(max_concurrency) if max_concurrency else None

    async def _one(self, kwargs: dict[str, Any], run: DirectRun) -> None:
        start = time.perf_counter()
        try:
            if self.api == "chat":
                response = await self.client.post(
                    "/chat/completions", body=wire_body(kwargs), cast_to=ChatCompletion
                )
            else:
                response = await self.client.post(
                    "/completions", body=wire_body(kwargs), cast_to=Completion
                )
        except openai.OpenAIError:
            run.errors += 1
            return
        finally:
            run.latencies_s.append(time.perf_counter() - start)
        run.calls += 1
        if response.usage is not None:
            run.prompt_tokens += response.usage.prompt_tokens or 0
            run.completion_tokens += response.usage.completion_tokens or 0

    async def call(self, kwargs: dict[str, Any], run: DirectRun) -> None:
        """One judge call, counted into ``run``."""
        if self.sem is None:
            await self._one(kwargs, run)
            return
        async with self.sem:
            await self._one(kwargs, run)

    async def run(self, calls: Sequence[dict[str, Any]]) -> DirectRun:
        """All calls at once (gather); returns totals and wall time."""
        run = DirectRun()
        start = time.perf_counter()
        await asyncio.gather(*(self.call(kw, run) for kw in calls))
        run.elapsed_s = time.perf_counter() - start
        return run

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.client.close()


def _canonical(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True)


async def verify_same_calls(
    rubric: Rubric, items: Sequence[dict[str, Any]], config: JudgeConfig
) -> dict[str, Any]:
    """Compare the request bodies of rewardsvc's ``Judge`` and of this client for ``items``.

    Both talk to an in-process recording fake judge (``tests/fakejudge.py``); the bodies
    must be identical as multisets (call order may differ).
    """
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from fakejudge import FakeJudge

    with FakeJudge() as fake:
        cfg = config.model_copy(update={"base_urls": [fake.url]})
        judge = build_judges(JudgePool(judges={"primary": cfg}))["primary"]
        for item in items:
            rollout = rollout_of(Item.model_validate(item))
            await asyncio.gather(
                *(judge.ask(CriterionOnItem(rubric, c, rollout)) for c in rubric.criteria)
            )
        await judge.aclose()
        ours = sorted(_canonical(b) for b in fake.script.bodies)
        fake.script.bodies.clear()
        client = DirectClient(fake.url, cfg.api)
        await client.run([kw for item in items for kw in call_kwargs(rubric, item, cfg)])
        await client.aclose()
        theirs = sorted(_canonical(b) for b in fake.script.bodies)
    return {
        "calls_compared": len(ours),
        "identical": ours == theirs,
        "differences": _differences(ours, theirs),
        "example_body": json.loads(ours[0]) if ours else None,
    }


def _differences(ours: list[str], theirs: list[str]) -> list[str]:
    """Top-level keys whose values differ between rewardsvc's bodies and ours (same messages)."""
    by_prompt = {}
    for text in theirs:
        body = json.loads(text)
        by_prompt[json.dumps([body.get("messages"), body.get("prompt")])] = body
    keys: set[str] = set()
    for text in ours:
        body = json.loads(text)
        other = by_prompt.get(json.dumps([body.get("messages"), body.get("prompt")]))
        if other is None:
            keys.add("messages/prompt")
            continue
        keys |= {k for k in body.keys() | other.keys() if body.get(k) != other.get(k)}
    return sorted(keys)
