"""The engine: one batch of items against one rubric, from raw item dicts to rewards.

For each request it validates every item on its own (a bad one is ``rejected``, the rest
go on), runs the detectors, plans one judge call per (item, judge, criterion) — or one
holistic call per (item, judge) for ``combine: implicit`` — serves what it can from the
verdict cache or from an identical call already in flight, sends the rest concurrently
(the backends enforce each judge's concurrency limit), and assembles each item's reward,
status, uncertainty and breakdown with the pure functions of ``aggregate.py``.

The engine's only state is the verdict cache and, per (rubric version, judge), the rolling
window of recent raw judge scores that per-judge calibration needs.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ValidationError

from rewardsvc.core import aggregate
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.safety.detectors import detect
from rewardsvc.scoring.cache import Source, VerdictCache, cache_key
from rewardsvc.server.metrics import FLAGS, ITEMS, REWARDS
from rewardsvc.server.wire import (
    CriterionScore,
    Item,
    JudgeResult,
    RewardOptions,
    RewardResponse,
    RewardResult,
    RubricRef,
    Status,
    Usage,
)

log = logging.getLogger(__name__)


class JudgeLike(Protocol):
    """What the engine needs of a judge (``rewardsvc.judges.judge.Judge`` provides it)."""

    name: str

    def cache_identity(self) -> str: ...

    async def score_criterion(
        self, rubric: Rubric, criterion: Criterion, rollout: Rollout
    ) -> Verdict: ...

    async def score_holistic(self, rubric: Rubric, rollout: Rollout) -> Verdict: ...

    async def aclose(self) -> None: ...


def format_validation_error(prefix: str, error: ValidationError) -> str:
    """``items[3].completion: Field required; ...``: each problem with the field it names."""
    problems: list[str] = []
    for e in error.errors():
        parts: list[str] = []
        for i, loc in enumerate(e["loc"]):
            if isinstance(loc, int):
                parts.append(f"[{loc}]")
            # Union members appear in the location as type tags (prompt.str,
            # prompt.list[Message]); they are not fields, so they are left out.
            elif i > 0 and (loc == "str" or "[" in loc):
                continue
            else:
                parts.append(f".{loc}")
        problem = f"{prefix}{''.join(parts)}: {e['msg']}"
        if problem not in problems:
            problems.append(problem)
    return "; ".join(problems)


class CalibrationWindows:
    """Rolling windows of recent raw scores, one per (rubric version, judge), least recently
    used dropped beyond ``max_keys`` (inline rubrics could otherwise grow it without end)."""

    def __init__(self, max_keys: int = 4096):
        self.max_keys = max_keys
        self._windows: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()

    def get(self, rubric_version: str, judge: str, size: int) -> deque[float]:
        """The window for (rubric version, judge), holding at most ``size`` scores."""
        key = (rubric_version, judge)
        window = self._windows.get(key)
        if window is None or window.maxlen != size:
            window = deque(window or (), maxlen=size)
            self._windows[key] = window
        self._windows.move_to_end(key)
        while len(self._windows) > self.max_keys:
            self._windows.popitem(last=False)
        return window


_NO_VERDICT: tuple[Verdict, Source] = (Verdict.failed("not scored"), "call")


@dataclass
class _Prepared:
    index: int
    id: str
    rollout: Rollout
    flags: list[str]


@dataclass
class _Call:
    item: int  # position in the prepared list
    judge: str
    criterion: str
    key: str
    run: Callable[[], Awaitable[Verdict]]


class Engine:
    """Scores batches against rubrics with a set of judges, sharing one verdict cache.

    ``judges`` maps pool judge names to judges (``rewardsvc.judges.judge.build_judges``); the
    engine owns them and closes them in ``aclose``. ``cache=None`` keeps no verdicts but
    still deduplicates identical calls in flight. Items whose prompt, completion or
    reference is longer than ``max_text_chars`` (after rendering chat messages) are
    rejected.
    """

    def __init__(
        self,
        judges: Mapping[str, JudgeLike],
        cache: VerdictCache | None = None,
        max_text_chars: int = 100_000,
    ):
        self.judges = dict(judges)
        self.cache = cache if cache is not None else VerdictCache(max_entries=0)
        self.max_text_chars = max_text_chars
        self.windows = CalibrationWindows()

    # ----------------------------------------------------------- request-level checks

    def _select_judges(self, rubric: Rubric, options: RewardOptions) -> list[str]:
        listed = [j.name for j in rubric.judges]
        if options.judges is None:
            names = listed
        else:
            names = list(dict.fromkeys(options.judges))
            for name in names:
                if name not in listed:
                    raise ValueError(
                        f"options.judges: unknown judge {name!r}; rubric {rubric.id!r} "
                        f"is scored by {listed}"
                    )
        for name in names:
            if name not in self.judges:
                raise ValueError(
                    f"rubric.judges: judge {name!r} is not in the judge pool "
                    f"(pool: {sorted(self.judges)})"
                )
        return names

    @staticmethod
    def _min_judges(rubric: Rubric, options: RewardOptions, selected: int) -> int:
        if options.min_judges is not None:
            if options.min_judges > selected:
                raise ValueError(
                    f"options.min_judges: {options.min_judges} is more than the "
                    f"{selected} judges selected"
                )
            return options.min_judges
        # A subset chosen with options.judges lowers the rubric's bar to what it can meet.
        return min(rubric.min_judges, selected)

    def _prepare(
        self, rubric: Rubric, index: int, raw: Any
    ) -> tuple[_Prepared | None, RewardResult | None]:
        prefix = f"items[{index}]"
        fallback_id = str(index)
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            fallback_id = raw["id"][:256]

        def reject(message: str) -> tuple[None, RewardResult]:
            return None, RewardResult(id=fallback_id, reward=None, status="rejected", error=message)

        try:
            item = Item.model_validate(raw)
        except ValidationError as exc:
            return reject(format_validation_error(prefix, exc))
        rollout = Rollout.from_item(item)
        texts = {
            "prompt": rollout.prompt,
            "completion": rollout.completion,
            "reference": rollout.reference,
        }
        for name, text in texts.items():
            if text is not None and len(text) > self.max_text_chars:
                return reject(
                    f"{prefix}.{name}: {len(text)} characters, more than the limit of "
                    f"{self.max_text_chars} (max_text_chars)"
                )
        if rubric.requires_reference and rollout.reference is None:
            return reject(f"{prefix}.reference: rubric {rubric.id!r} requires a reference")
        try:
            flags = sorted(set(detect(rollout)))
        except Exception:
            # A detector bug must not sink the batch; the item is scored without flags.
            log.exception("detectors failed on %s", prefix)
            flags = []
        item_id = item.id if item.id is not None else fallback_id
        return _Prepared(index, item_id, rollout, flags), None

    # ----------------------------------------------------------- scoring

    async def score(
        self,
        rubric: Rubric,
        items: Sequence[Any],
        options: RewardOptions | None = None,
        metrics_label: str | None = None,
    ) -> RewardResponse:
        """Rewards for ``items`` (raw dicts, validated one by one) in request order.

        ``metrics_label`` names the rubric in metrics (default its id); callers pass a
        fixed label for inline rubrics, whose ids are the client's to choose and would
        otherwise grow the metric series without bound.

        Raises ``ValueError`` for a request-level problem (``options.judges`` names a judge
        the rubric does not list, ``options.min_judges`` above the judges selected, or a
        rubric judge missing from the pool); item-level problems never raise.
        """
        started = time.perf_counter()
        options = options or RewardOptions()
        names = self._select_judges(rubric, options)
        min_judges = self._min_judges(rubric, options, len(names))
        version = rubric.version()

        results: list[RewardResult | None] = [None] * len(items)
        prepared: list[_Prepared] = []
        for index, raw in enumerate(items):
            ok, rejected = self._prepare(rubric, index, raw)
            if ok is not None:
                prepared.append(ok)
            else:
                results[index] = rejected

        calls = self._plan(rubric, version, names, prepared)
        outcomes: list[tuple[Verdict, Source]] = [_NO_VERDICT] * len(calls)
        # Memory hits are served here; only the rest become tasks (calls, dedups, file reads).
        pending = []
        for n, c in enumerate(calls):
            hit = self.cache.lookup(c.key) if options.use_cache else None
            if hit is not None:
                outcomes[n] = (hit, "hit")
            else:
                pending.append(n)
        fetched = await asyncio.gather(
            *(
                self.cache.get_or_call(calls[n].key, calls[n].run, use_cache=options.use_cache)
                for n in pending
            )
        )
        for n, outcome in zip(pending, fetched, strict=True):
            outcomes[n] = outcome

        usage = Usage()
        verdicts: list[dict[str, dict[str, tuple[Verdict, Source]]]] = [
            {name: {} for name in names} for _ in prepared
        ]
        for call, (verdict, source) in zip(calls, outcomes, strict=True):
            verdicts[call.item][call.judge][call.criterion] = (verdict, source)
            if source == "call":
                usage.judge_calls += 1
                usage.prompt_tokens += verdict.prompt_tokens
                usage.completion_tokens += verdict.completion_tokens
            elif source == "hit":
                usage.cache_hits += 1

        for p, result in zip(
            prepared,
            self._assemble(rubric, version, options, names, min_judges, prepared, verdicts),
            strict=True,
        ):
            results[p.index] = result

        final = [r for r in results if r is not None]
        label = metrics_label or rubric.id
        for r in final:
            ITEMS.labels(rubric=label, status=r.status).inc()
            if r.reward is not None:
                REWARDS.labels(rubric=label).observe(r.reward)
            for flag in r.flags:
                FLAGS.labels(flag=flag).inc()
        usage.latency_ms = (time.perf_counter() - started) * 1000
        return RewardResponse(
            rubric=RubricRef(id=rubric.id, version=version), results=final, usage=usage
        )

    def _plan(
        self, rubric: Rubric, version: str, names: list[str], prepared: list[_Prepared]
    ) -> list[_Call]:
        """One call per (item, judge, criterion), item-major so that the calls for one
        item reach a judge together and share its prefix cache."""
        identities = {name: self.judges[name].cache_identity() for name in names}
        calls: list[_Call] = []
        for pos, p in enumerate(prepared):
            digest = p.rollout.digest()
            for name in names:
                judge = self.judges[name]
                if rubric.combine == "implicit":
                    run = functools.partial(judge.score_holistic, rubric, p.rollout)
                    key = cache_key(version, identities[name], aggregate.HOLISTIC, digest)
                    calls.append(_Call(pos, name, aggregate.HOLISTIC, key, run))
                    continue
                for criterion in rubric.criteria:
                    run = functools.partial(judge.score_criterion, rubric, criterion, p.rollout)
                    key = cache_key(version, identities[name], criterion.id, digest)
                    calls.append(_Call(pos, name, criterion.id, key, run))
        return calls

    def _assemble(
        self,
        rubric: Rubric,
        version: str,
        options: RewardOptions,
        names: list[str],
        min_judges: int,
        prepared: list[_Prepared],
        verdicts: list[dict[str, dict[str, tuple[Verdict, Source]]]],
    ) -> list[RewardResult]:
        agg = rubric.aggregation
        rule = options.rule or agg.rule
        weights = {j.name: j.weight for j in rubric.judges}

        # Per judge: the breakdown and, when every criterion call succeeded, the raw score.
        judge_results: list[dict[str, JudgeResult]] = []
        for per_judge in verdicts:
            row: dict[str, JudgeResult] = {}
            for name in names:
                row[name] = self._judge_result(rubric, per_judge[name])
            judge_results.append(row)

        # Per-judge calibration: this batch's raw scores join the judge's window first, so
        # that a batch is calibrated against itself and its predecessors, and the result
        # does not depend on the order of items within the batch.
        if agg.calibration != "none":
            for name in names:
                # Keyed by version: an edited rubric (or an inline one reusing a library
                # id) must not be calibrated against another rubric's scores.
                window = self.windows.get(version, name, agg.calibration_window)
                window.extend(
                    r[name].raw_score for r in judge_results if r[name].raw_score is not None
                )
                reference = aggregate.WindowStats.of(window)
                for row in judge_results:
                    jr = row[name]
                    if jr.raw_score is None:
                        continue
                    jr.score, jr.variance = aggregate.calibrate(
                        agg.calibration, jr.raw_score, reference, variance=jr.variance
                    )

        results = []
        for p, row, per_judge in zip(prepared, judge_results, verdicts, strict=True):
            scored = [n for n in names if row[n].score is not None]
            sources = [s for crit in per_judge.values() for _, s in crit.values()]
            cached = bool(sources) and all(s == "hit" for s in sources)
            failed = [f"{n}: {row[n].error}" for n in names if row[n].score is None]
            reward: float | None = None
            spread: float | None = None
            status: Status
            if len(scored) >= min_judges:
                scores = [row[n].score for n in scored]
                variances = [row[n].variance for n in scored]
                w = [weights[n] for n in scored]
                value = aggregate.combine(
                    rule, scores, w, lam=agg.uwo_lambda, beta=agg.softmin_beta
                )
                spread = aggregate.uncertainty(scores, variances, w)
                reward = aggregate.apply_transforms(
                    value,
                    rubric.transforms,
                    completion_tokens=aggregate.count_tokens(p.rollout.completion),
                    flags=p.flags,
                )
                status = "ok" if len(scored) == len(names) else "degraded"
            else:
                status = "judge_error"
            error = None
            if failed:
                error = (
                    f"{len(scored)} of {len(names)} judges scored (min_judges {min_judges}); "
                    + "; ".join(failed)
                )
            results.append(
                RewardResult(
                    id=p.id,
                    reward=reward,
                    status=status,
                    uncertainty=spread,
                    judges=row,
                    flags=p.flags,
                    cached=cached,
                    error=error,
                )
            )
        return results

    @staticmethod
    def _judge_result(
        rubric: Rubric, verdicts: Mapping[str, tuple[Verdict, Source]]
    ) -> JudgeResult:
        criteria = {
            cid: CriterionScore(score=v.score, variance=v.variance, p=v.probs, error=v.error)
            for cid, (v, _) in verdicts.items()
        }
        errors = [
            f"criterion {cid!r}: {v.error or 'no score'}"
            for cid, (v, _) in verdicts.items()
            if not v.ok
        ]
        if errors:
            # A judge with any failed call contributes no score for this item: never a 0.
            return JudgeResult(score=None, criteria=criteria, error="; ".join(errors))
        raw, variance = aggregate.judge_score(
            rubric,
            {cid: v.score for cid, (v, _) in verdicts.items() if v.score is not None},
            {cid: v.variance for cid, (v, _) in verdicts.items()},
        )
        return JudgeResult(score=raw, raw_score=raw, variance=variance, criteria=criteria)

    async def aclose(self) -> None:
        """Close the judges (their HTTP clients) and the verdict cache."""
        closing = await asyncio.gather(
            *(j.aclose() for j in self.judges.values()), return_exceptions=True
        )
        for outcome in closing:
            if isinstance(outcome, Exception):
                log.warning("closing a judge failed: %s", outcome)
        await self.cache.aclose()
