"""Part 3: the service's memory: peak RSS under the end-to-end load, and with the cache full.

The end-to-end peak comes from part 1 (RSS sampled while rewardsvc served the real judge,
and the kernel's VmHWM). Here a ``rewardsvc serve`` with ``REWARDSVC_CACHE_SIZE`` set to the
bound is driven with distinct items through the zero-latency stub until it has produced
``fill_factor`` times the bound in verdicts, sampling RSS along the way: past the bound the
cache drops its least recently used generation (an eighth to a quarter of the bound) when
the newest is full, and the freed memory takes the new verdicts, so RSS must stay flat. The slope
while filling is the memory cost of one cached verdict (target: 0.25 kB). At the end the
first and the last items are sent again: the last must be cache hits, the first must have
been evicted.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.harness import (
    RunContext,
    hwm_mb,
    judge_entry,
    log,
    post_rewards,
    rewardsvc_service,
    rss_mb,
    rubric_variant,
    session,
    start_fakejudge,
)
from bench.overhead import MAX_CONCURRENCY as STUB_MAX_CONCURRENCY
from bench.overhead import ItemSource
from rewardsvc.settings import Settings

BATCH = 32
CONCURRENCY = 8
TARGET_MB = 300.0
TARGET_KB_PER_VERDICT = 0.25
DEFAULT_CACHE_SIZE = Settings.model_fields["cache_size"].default


def fill_slope(samples: list[tuple[int, float]], bound: int) -> float | None:
    """MB per cached verdict while the cache fills: a least-squares line through the samples
    between 20 % of the bound and the bound (the first requests' one-off allocations, such
    as lazily imported modules, are left out)."""
    pts = [(n, mb) for n, mb in samples if 0.2 * bound <= n <= bound]
    if len(pts) < 3:
        return None
    mean_n = sum(n for n, _ in pts) / len(pts)
    mean_mb = sum(mb for _, mb in pts) / len(pts)
    var = sum((n - mean_n) ** 2 for n, _ in pts)
    if var == 0:
        return None
    return sum((n - mean_n) * (mb - mean_mb) for n, mb in pts) / var


def stored_verdicts(body: dict[str, Any]) -> int:
    """Verdicts a response added to the cache: its criterion scores that are not errors
    (failed judge calls are never cached, so they must not count in the slope)."""
    return sum(
        1
        for result in body["results"]
        for judge in (result.get("judges") or {}).values()
        for criterion in (judge.get("criteria") or {}).values()
        if criterion.get("score") is not None
    )


async def run(ctx: RunContext) -> dict[str, Any]:
    """Run part 3 (cache fill) and return its results."""
    fake, url = start_fakejudge(ctx.workdir / "memory" / "logs")
    try:
        return await _run(ctx, url)
    finally:
        fake.stop()


async def _run(ctx: RunContext, url: str) -> dict[str, Any]:
    pool = {"judges": {"primary": judge_entry(url, "fake", max_concurrency=STUB_MAX_CONCURRENCY)}}
    rubric = rubric_variant(f"{ctx.run_id}-memory")
    criteria = len(rubric.criteria)
    bound = ctx.cache_bound
    target = int(bound * ctx.cache_fill_factor)
    source = ItemSource(f"{ctx.run_id}-mem")
    samples: list[tuple[int, float]] = []
    with rewardsvc_service(ctx.workdir / "memory", pool, [rubric], cache_size=bound) as svc:
        baseline = rss_mb(svc.pid)
        async with session() as http:
            first = source.take(BATCH)
            r = await post_rewards(http, svc.url, rubric.id, first)
            driven = int(r.body["usage"]["judge_calls"])
            stored = stored_verdicts(r.body)
            samples.append((stored, rss_mb(svc.pid)))
            step = max(target // 40, BATCH * criteria)
            next_sample = step
            last: list[dict[str, Any]] = first
            start = time.perf_counter()
            log(f"memory: driving {target} verdicts through a cache bounded at {bound}")

            async def worker() -> None:
                nonlocal driven, stored, next_sample, last
                while driven < target:
                    batch = source.take(BATCH)
                    res = await post_rewards(http, svc.url, rubric.id, batch)
                    if not res.ok:
                        raise RuntimeError(f"HTTP {res.status}: {res.body}")
                    driven += int(res.body["usage"]["judge_calls"])
                    stored += stored_verdicts(res.body)
                    last = batch
                    if driven >= next_sample:
                        next_sample += step
                        samples.append((stored, rss_mb(svc.pid)))

            await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
            elapsed = time.perf_counter() - start
            samples.append((stored, rss_mb(svc.pid)))
            again_last = await post_rewards(http, svc.url, rubric.id, last)
            again_first = await post_rewards(http, svc.url, rubric.id, first)
        vmhwm = hwm_mb(svc.pid)

    at_bound = [mb for n, mb in samples if n >= bound]
    slope = fill_slope(samples, bound)
    return {
        "mb_per_1000_verdicts": slope * 1000 if slope is not None else None,
        # The same slope per verdict, in kB (rss_mb's MB are 10^6 bytes).
        "kb_per_verdict": slope * 1000 if slope is not None else None,
        "target_kb_per_verdict": TARGET_KB_PER_VERDICT,
        # What the slope predicts at the service's default bound (for runs with a smaller one).
        "projected_rss_at_default_bound_mb": at_bound[0] + slope * (DEFAULT_CACHE_SIZE - bound)
        if slope is not None and at_bound
        else None,
        "default_cache_size": DEFAULT_CACHE_SIZE,
        "cache_bound_verdicts": bound,
        "verdicts_driven": driven,
        "verdicts_stored": stored,
        "failed_judge_calls": driven - stored,
        "items_driven": driven // criteria,
        "seconds": elapsed,
        "verdicts_per_s": driven / elapsed if elapsed else 0.0,
        "baseline_rss_mb": baseline,
        "samples": samples,
        "rss_at_bound_mb": at_bound[0] if at_bound else None,
        "rss_end_mb": samples[-1][1],
        "growth_after_bound_mb": (samples[-1][1] - at_bound[0]) if at_bound else None,
        "vmhwm_mb": vmhwm,
        "recheck_last_batch_cache_hits": int(again_last.body["usage"]["cache_hits"]),
        "recheck_first_batch_cache_hits": int(again_first.body["usage"]["cache_hits"]),
        "recheck_calls_per_batch": BATCH * criteria,
        "target_mb": TARGET_MB,
    }
