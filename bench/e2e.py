"""Part 1: end to end on the real CPU judge, same judge, rubric and items for every contender.

Contenders:

- **rewardsvc**: a real ``rewardsvc serve`` subprocess whose judge pool holds only the
  primary judge, fed as a trainer feeds it (batches of 8 items, several requests in flight);
- **direct limit**: ``bench.direct``, the very same judge calls straight to vLLM, all at once;
- **verifiers RubricJudge**, **HealthBench-style** and **TRL-style**: ``bench.peers``.

Fairness: every contender first scores the same held-out warm-up items, then the measured
items. rewardsvc and the direct client render identical prompts, so each of their runs uses
its own rubric copy (``harness.rubric_variant``): the run tag at the head of the prompt
keeps vLLM's prefix cache from carrying over between them, and the new rubric version keeps
rewardsvc's verdict cache from serving anything (its cache stays at its default setting;
``cache_hits`` is reported and must be 0). The peers' prompts carry no run tag, so the
judge's prefix cache is emptied before every run of every contender
(``harness.reset_prefix_cache``). rewardsvc and the direct client alternate when
``repeats`` > 1 and the median run of each is reported.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench import peers
from bench.direct import DirectClient, call_kwargs, verify_same_calls
from bench.harness import (
    PRIMARY_MODEL,
    PRIMARY_URL,
    BatchRun,
    RssSampler,
    RunContext,
    hwm_mb,
    judge_entry,
    log,
    pool_model,
    reset_prefix_cache,
    rewardsvc_service,
    rubric_variant,
    send_batches,
    served_models,
)
from bench.items import bench_items, warmup_items


@dataclass
class Contender:
    """One contender's figures on the measured items."""

    name: str
    kind: str  # "rewardsvc", "limit", "peer", or "rewardsvc-variant" (not in the targets)
    items: int
    valid: int
    elapsed_s: float
    calls: int
    prompt_tokens: int
    completion_tokens: int
    by_kind: dict[str, float]
    notes: dict[str, Any]

    @property
    def rewards_per_s(self) -> float:
        """Items scored per second (a valid reward or a failure; failures are not penalized)."""
        return self.items / self.elapsed_s if self.elapsed_s else float("nan")

    @property
    def tokens_per_reward(self) -> float:
        """Judge prompt + completion tokens per item."""
        return (self.prompt_tokens + self.completion_tokens) / self.items if self.items else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON form, with the derived rates."""
        return {
            **self.__dict__,
            "rewards_per_s": self.rewards_per_s,
            "tokens_per_reward": self.tokens_per_reward,
        }


def mean_by_kind(
    items: Sequence[dict[str, Any]], rewards: Sequence[float | None]
) -> dict[str, float]:
    """Mean reward per item kind (good, partial, bad, attack), valid rewards only."""
    groups: dict[str, list[float]] = {}
    for item, reward in zip(items, rewards, strict=True):
        if reward is not None:
            groups.setdefault(item["metadata"]["kind"], []).append(reward)
    return {k: round(statistics.mean(v), 3) for k, v in groups.items()}


def service_contender(
    name: str, kind: str, items: Sequence[dict[str, Any]], batch: BatchRun, **notes: Any
) -> Contender:
    """A rewardsvc run as a contender: its figures come from the service's own usage."""
    results = batch.results
    return Contender(
        name=name,
        kind=kind,
        items=len(items),
        valid=sum(1 for x in results if x["status"] == "ok"),
        elapsed_s=batch.elapsed_s,
        calls=int(batch.usage("judge_calls")),
        prompt_tokens=int(batch.usage("prompt_tokens")),
        completion_tokens=int(batch.usage("completion_tokens")),
        by_kind=mean_by_kind(items, [x["reward"] for x in results]),
        notes={
            **notes,
            "cache_hits": int(batch.usage("cache_hits")),
            "statuses": batch.statuses(),
        },
    )


def _median_run(runs: list[Contender]) -> Contender:
    ordered = sorted(runs, key=lambda c: c.rewards_per_s)
    chosen = ordered[len(ordered) // 2]
    chosen.notes["runs_rewards_per_s"] = [round(c.rewards_per_s, 3) for c in runs]
    return chosen


def peer_run(name: str, items: Sequence[dict[str, Any]], got: peers.PeerRun) -> Contender:
    """A peer's run over ``items`` as a contender."""
    errors = [e for e in got.errors if e]
    return Contender(
        name=name,
        kind="peer",
        items=len(items),
        valid=sum(1 for r in got.rewards if r is not None),
        elapsed_s=got.elapsed_s,
        calls=got.calls,
        prompt_tokens=got.prompt_tokens,
        completion_tokens=got.completion_tokens,
        by_kind=mean_by_kind(items, got.rewards),
        notes={**got.notes, "first_error": errors[0] if errors else None},
    )


async def run(ctx: RunContext) -> dict[str, Any]:
    """Run part 1 and return its results."""
    models = served_models(PRIMARY_URL)
    if PRIMARY_MODEL not in models:
        raise RuntimeError(
            f"the primary judge {PRIMARY_MODEL} does not answer at {PRIMARY_URL} "
            f"(serves {models}); "
            "start it with deploy/cpu-judge/cpujudge.sh start && deploy/cpu-judge/cpujudge.sh wait"
        )
    items = bench_items(ctx.items)
    warm = warmup_items(ctx.warmup_items)
    pool = {"judges": {"primary": judge_entry(PRIMARY_URL, PRIMARY_MODEL)}}
    config = pool_model(pool).judges["primary"]

    verification = await verify_same_calls(
        rubric_variant(f"{ctx.run_id}-verify"), items[:4], config
    )
    log(f"direct client sends the same bodies as rewardsvc: {verification['identical']}")

    rubrics = {}
    for r in range(ctx.repeats):
        for who in ("rs", "direct"):
            for phase in ("warm", "run"):
                rubrics[(who, phase, r)] = rubric_variant(f"{ctx.run_id}-{who}-{phase}-{r}")
    served = [v for (who, _, _), v in rubrics.items() if who == "rs"]
    # Not a target contender: the same rubric scored by one holistic call per item
    # (combine: implicit), the like-for-like of the single-call peers.
    implicit = {
        phase: rubric_variant(f"{ctx.run_id}-implicit-{phase}", combine="implicit")
        for phase in ("warm", "run")
    }
    served += list(implicit.values())

    # Emptied before each contender: the peers' prompts carry no run tag, so without it
    # they would read prefixes that an earlier run computed.
    resets: list[bool] = []
    rs_runs: list[Contender] = []
    direct_runs: list[Contender] = []
    peak_rss = 0.0
    with rewardsvc_service(ctx.workdir / "e2e", pool, served) as svc:
        for r in range(ctx.repeats):
            log(f"e2e rewardsvc run {r + 1}/{ctx.repeats}: {len(items)} items")
            resets.append(reset_prefix_cache(PRIMARY_URL))
            await send_batches(
                svc.url,
                rubrics[("rs", "warm", r)].id,
                warm,
                batch_size=ctx.batch_size,
                concurrency=ctx.e2e_concurrency,
            )
            with RssSampler(svc.pid) as sampler:
                batch = await send_batches(
                    svc.url,
                    rubrics[("rs", "run", r)].id,
                    items,
                    batch_size=ctx.batch_size,
                    concurrency=ctx.e2e_concurrency,
                )
            peak_rss = max(peak_rss, sampler.peak_mb)
            rs_runs.append(
                service_contender(
                    "rewardsvc (HTTP, logprob)",
                    "rewardsvc",
                    items,
                    batch,
                    batch_size=ctx.batch_size,
                    concurrent_requests=ctx.e2e_concurrency,
                    flagged=sum(1 for x in batch.results if x["flags"]),
                )
            )
            log(f"  rewardsvc: {rs_runs[-1].rewards_per_s:.2f} rewards/s")

            log(f"e2e direct limit run {r + 1}/{ctx.repeats}")
            resets.append(reset_prefix_cache(PRIMARY_URL))
            client = DirectClient(PRIMARY_URL, config.api)
            warm_rubric, run_rubric = rubrics[("direct", "warm", r)], rubrics[("direct", "run", r)]
            await client.run([kw for it in warm for kw in call_kwargs(warm_rubric, it, config)])
            direct = await client.run(
                [kw for it in items for kw in call_kwargs(run_rubric, it, config)]
            )
            await client.aclose()
            direct_runs.append(
                Contender(
                    name="direct client (limit)",
                    kind="limit",
                    items=len(items),
                    valid=len(items) if direct.errors == 0 else 0,
                    elapsed_s=direct.elapsed_s,
                    calls=direct.calls,
                    prompt_tokens=direct.prompt_tokens,
                    completion_tokens=direct.completion_tokens,
                    by_kind={},
                    notes={"errors": direct.errors, "in_flight": "all calls at once (gather)"},
                )
            )
            log(f"  direct: {direct_runs[-1].rewards_per_s:.2f} rewards/s")
        log("e2e rewardsvc, implicit rubric (one holistic call per item)")
        resets.append(reset_prefix_cache(PRIMARY_URL))
        await send_batches(
            svc.url,
            implicit["warm"].id,
            warm,
            batch_size=ctx.batch_size,
            concurrency=ctx.e2e_concurrency,
        )
        batch = await send_batches(
            svc.url,
            implicit["run"].id,
            items,
            batch_size=ctx.batch_size,
            concurrency=ctx.e2e_concurrency,
        )
        implicit_run = service_contender(
            "rewardsvc, combine: implicit (1 holistic call/item)",
            "rewardsvc-variant",
            items,
            batch,
        )
        log(f"  rewardsvc implicit: {implicit_run.rewards_per_s:.2f} rewards/s")
        vmhwm = hwm_mb(svc.pid)

    contenders = [_median_run(rs_runs), _median_run(direct_runs), implicit_run]
    peer_items = items[: ctx.peer_items] if ctx.peer_items else items
    rubric = rubric_variant(f"{ctx.run_id}-peers")
    for name in ctx.peers:
        log(f"e2e peer {name}: {len(peer_items)} items")
        resets.append(reset_prefix_cache(PRIMARY_URL))
        if name == "verifiers":
            got = peers.verifiers_rubric_judge(PRIMARY_URL, PRIMARY_MODEL, rubric, peer_items, warm)
            label = "verifiers RubricJudge (JSON verdicts, 1 call/item)"
        elif name == "healthbench":
            got = await peers.healthbench_style(
                PRIMARY_URL, PRIMARY_MODEL, rubric, peer_items, warm
            )
            label = "HealthBench-style (JSON per criterion)"
        elif name == "trl":
            got = peers.trl_style(PRIMARY_URL, PRIMARY_MODEL, rubric, peer_items, warm)
            label = "TRL-style reward func (1-10, sequential)"
        else:
            raise ValueError(f"unknown peer {name!r}")
        contenders.append(peer_run(label, peer_items, got))
        log(f"  {name}: {contenders[-1].rewards_per_s:.3f} rewards/s")

    return {
        "judge": {"url": PRIMARY_URL, "model": PRIMARY_MODEL, "pool": pool},
        "items": len(items),
        "warmup_items": len(warm),
        "peer_items": len(peer_items),
        "verification": verification,
        "contenders": [c.as_dict() for c in contenders],
        "memory": {"peak_rss_mb": peak_rss, "vmhwm_mb": vmhwm},
        "prefix_cache_reset_before_each_run": all(resets),
    }
