"""Prometheus metrics, defined once; the modules that do the work record into them."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter(
    "rewardsvc_requests_total", "HTTP requests by route and status code", ["route", "code"]
)
ITEMS = Counter("rewardsvc_items_total", "Scored items by rubric and status", ["rubric", "status"])
REWARDS = Histogram(
    "rewardsvc_reward",
    "Rewards returned, by rubric",
    ["rubric"],
    buckets=[i / 10 for i in range(11)],
)
JUDGE_CALLS = Counter("rewardsvc_judge_calls_total", "Judge calls sent, by judge", ["judge"])
JUDGE_ERRORS = Counter(
    "rewardsvc_judge_errors_total", "Judge calls that failed, by judge and kind", ["judge", "kind"]
)
JUDGE_LATENCY = Histogram(
    "rewardsvc_judge_latency_seconds",
    "Judge call latency, by judge",
    ["judge"],
    buckets=[0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
)
JUDGE_TOKENS = Counter(
    "rewardsvc_judge_tokens_total", "Judge tokens, by judge and kind", ["judge", "kind"]
)
CACHE_HITS = Counter("rewardsvc_cache_hits_total", "Verdicts served from the cache")
DEDUP_HITS = Counter(
    "rewardsvc_dedup_hits_total", "Verdicts shared with an identical call already in flight"
)
FLAGS = Counter("rewardsvc_flags_total", "Attack flags raised, by flag", ["flag"])
INFLIGHT = Gauge("rewardsvc_inflight_requests", "Reward requests being processed")
BREAKER_OPEN = Gauge(
    "rewardsvc_breaker_open", "1 while a judge base URL's circuit breaker is open", ["judge", "url"]
)
RUBRIC_ERRORS = Gauge(
    "rewardsvc_rubric_errors", "Rubric files whose last edit was refused (0 or 1)", ["file"]
)
