"""Prometheus metrics, defined once, and the only code that records them: the service's
observer of the scoring path and the request-counting middleware."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import REGISTRY, Collector
from prometheus_client.utils import floatToGoString
from starlette.applications import Starlette
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardsvc.core.results import BatchResult
from rewardsvc.core.verdict import Verdict

M = TypeVar("M", bound=MetricWrapperBase)

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
JUDGE_ERRORS = Counter(
    "rewardsvc_judge_errors_total", "Judge calls that failed, by judge and kind", ["judge", "kind"]
)
JUDGE_COST = Counter(
    "rewardsvc_judge_cost_total",
    "What judge calls cost at their judges' prices (judges with prices only), by judge",
    ["judge"],
)
JUDGE_TOOL_CALLS = Counter(
    "rewardsvc_judge_tool_calls_total",
    "Agentic judges' tool calls, by judge, tool and outcome (ok or error)",
    ["judge", "tool", "outcome"],
)
JUDGE_TOOL_LOOPS = Counter(
    "rewardsvc_judge_tool_loops_total",
    "Agentic judges' tool loops, by judge and how they ended (answered, a loop_* limit, "
    "judge_error)",
    ["judge", "ended"],
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
REWARD_LOG_LINES = Counter("rewardsvc_reward_log_lines_total", "Reward log lines written")
REWARD_LOG_ERRORS = Counter(
    "rewardsvc_reward_log_errors_total", "Reward log lines that could not be written"
)
INFLIGHT_CALLS = Gauge("rewardsvc_inflight_judge_calls", "Judge calls planned and not answered")
SHARED_STATE_UP = Gauge(
    "rewardsvc_shared_state_up",
    "1 while the shared state store (Redis) answers, 0 while the service scores on local state",
)
RUBRIC_ERRORS = Gauge(
    "rewardsvc_rubric_errors", "Rubric files whose last edit was refused (0 or 1)", ["file"]
)


class Children(Generic[M]):
    """The children of one labelled metric by their label values (in the metric's label
    order), each looked up in the metric once: ``labels()`` checks its arguments and takes
    a lock on every call, and the scoring path records several per judge call. Holds no
    more children than the metric itself keeps."""

    def __init__(self, metric: M):
        self._metric = metric
        self._children: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        """The child for these label values."""
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self._metric.labels(*values)
        return child


_JUDGE_ERRORS = Children(JUDGE_ERRORS)
_JUDGE_COST = Children(JUDGE_COST)
_ITEMS = Children(ITEMS)
_REWARDS = Children(REWARDS)
_FLAGS = Children(FLAGS)
_REQUESTS = Children(REQUESTS)
_TOOL_CALLS = Children(JUDGE_TOOL_CALLS)
_TOOL_LOOPS = Children(JUDGE_TOOL_LOOPS)

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
"""The upper bounds (seconds) of ``rewardsvc_judge_latency_seconds``' buckets."""


class JudgeSeries:
    """One judge's numbers in the metrics every judge call records (calls, latency,
    tokens), kept as plain numbers and rendered at scrape time by :class:`JudgeCallMetrics`.

    Through prometheus-client's children these cost 25 K instructions per judge call: a
    lock and argument checks on every ``inc``, a walk over the buckets on every
    ``observe``. Here the observer's whole ``judge_call`` costs about 6 K. Calls are
    recorded and scraped on the event loop's thread, so no lock is needed.
    """

    __slots__ = ("calls", "created", "latency_buckets", "latency_sum", "tokens")

    def __init__(self) -> None:
        self.created = time.time()
        self.calls = 0
        self.latency_buckets = [0] * (len(LATENCY_BUCKETS) + 1)  # the last: above every bound
        self.latency_sum = 0.0
        # "cached" joins on the first call that counted a cached token: a judge without a
        # prefix cache shows no such series, as a labelled counter shows no child unused.
        self.tokens = {"prompt": 0, "completion": 0}

    def record(self, verdict: Verdict) -> None:
        """Count one call: its latency and its tokens."""
        self.calls += 1
        seconds = verdict.latency_ms / 1000.0
        self.latency_buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.latency_sum += seconds
        tokens = self.tokens
        tokens["prompt"] += verdict.prompt_tokens
        tokens["completion"] += verdict.completion_tokens
        if verdict.cached_tokens:
            tokens["cached"] = tokens.get("cached", 0) + verdict.cached_tokens


class JudgeCallMetrics(Collector):
    """``rewardsvc_judge_calls_total``, ``rewardsvc_judge_latency_seconds`` and
    ``rewardsvc_judge_tokens_total``, rendered from each judge's :class:`JudgeSeries` as
    prometheus-client renders its own counters and histograms (with ``_created``
    samples; the ``cached`` tokens series once a call has counted one)."""

    def __init__(self) -> None:
        self.judges: dict[str, JudgeSeries] = {}

    def series(self, judge: str) -> JudgeSeries:
        """The series of ``judge`` (made on its first call)."""
        series = self.judges.get(judge)
        if series is None:
            series = self.judges[judge] = JudgeSeries()
        return series

    def collect(self) -> Iterator[Metric]:
        """The three metrics, one series per judge (and token kind)."""
        calls = CounterMetricFamily(
            "rewardsvc_judge_calls", "Judge calls sent, by judge", labels=["judge"]
        )
        latency = HistogramMetricFamily(
            "rewardsvc_judge_latency_seconds", "Judge call latency, by judge", labels=["judge"]
        )
        tokens = CounterMetricFamily(
            "rewardsvc_judge_tokens", "Judge tokens, by judge and kind", labels=["judge", "kind"]
        )
        bounds = [*map(floatToGoString, LATENCY_BUCKETS), "+Inf"]
        for judge, series in self.judges.items():
            calls.add_metric([judge], series.calls, created=series.created)
            cumulative, count = [], 0
            for bound, n in zip(bounds, series.latency_buckets, strict=True):
                count += n
                cumulative.append((bound, float(count)))
            latency.add_metric([judge], cumulative, series.latency_sum)
            latency.add_sample(
                "rewardsvc_judge_latency_seconds_created", {"judge": judge}, series.created
            )
            for kind, n in series.tokens.items():
                tokens.add_metric([judge, kind], n, created=series.created)
        yield from (calls, latency, tokens)

    def describe(self) -> Iterator[Metric]:
        """Nothing up front: the series depend on the judges that were called."""
        return iter(())


JUDGE_CALL_METRICS = JudgeCallMetrics()
REGISTRY.register(JUDGE_CALL_METRICS)


class PrometheusObserver:
    """The service's observer (``rewardsvc.core.observe.Observer``): records every event of
    the scoring path into the metrics above. The only place that records them."""

    def __init__(self, judges: JudgeCallMetrics = JUDGE_CALL_METRICS) -> None:
        self._judges = judges

    def judge_call(self, judge: str, verdict: Verdict) -> None:
        """Count the call, its latency and tokens, and its failure kind."""
        self._judges.series(judge).record(verdict)
        if verdict.error_kind is not None:
            _JUDGE_ERRORS(judge, verdict.error_kind).inc()
        if verdict.cost is not None:
            _JUDGE_COST(judge).inc(verdict.cost)

    def tool_loop(self, judge: str, ended: str, calls: Sequence[tuple[str, bool]]) -> None:
        """Count the loop by how it ended, and its tool calls by tool and outcome."""
        _TOOL_LOOPS(judge, ended).inc()
        for tool, error in calls:
            _TOOL_CALLS(judge, tool, "error" if error else "ok").inc()

    def breaker(self, judge: str, url: str, is_open: bool) -> None:
        """Show the breaker's state."""
        BREAKER_OPEN.labels(judge=judge, url=url).set(1 if is_open else 0)

    def cache_hit(self, dedup: bool) -> None:
        """Count a verdict served without a call."""
        (DEDUP_HITS if dedup else CACHE_HITS).inc()

    def batch(self, label: str, result: BatchResult) -> None:
        """Count items by status, rewards and flags."""
        for item in result.items:
            _ITEMS(label, item.status).inc()
            if item.reward is not None:
                _REWARDS(label).observe(item.reward)
            for flag in item.flags:
                _FLAGS(flag).inc()

    def groups(self, label: str, result: BatchResult) -> None:
        """Nothing: group requests are counted by the request metrics, not as items."""

    def rubric_file(self, file: str, refused: bool) -> None:
        """Show whether a rubric file's latest edit was refused."""
        RUBRIC_ERRORS.labels(file=file).set(1 if refused else 0)

    def shared_state(self, healthy: bool) -> None:
        """Show whether the shared state store answers."""
        SHARED_STATE_UP.set(1 if healthy else 0)


class RequestMetricsMiddleware:
    """Counts every HTTP response in REQUESTS by route template and status code."""

    def __init__(self, app: ASGIApp, routes_app: Starlette):
        self.app = app
        self.routes_app = routes_app

    def _route(self, scope: Scope) -> str:
        route = scope.get("route")
        if route is None:
            # Refused before routing (auth, body limit): find the route it was meant for.
            for candidate in self.routes_app.router.routes:
                match, _ = candidate.matches(scope)
                if match == Match.FULL:
                    route = candidate
                    break
        return str(getattr(route, "path", "unmatched"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def counting_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            _REQUESTS(self._route(scope), str(status)).inc()
