"""The engine: one batch of items against one rubric, from rollouts to rewards.

Items that bring their own rubric (the batch rubric with their criteria) are judged in
parts, one per rubric (:mod:`.parts`), and calibrated and monitored with the batch.

For each request it plans (:meth:`Engine.plan`, before admission): it checks every item on
its own (a bad one is ``rejected``, the rest go on) and plans one judge call per (item,
judge, criterion) — or one holistic call per (item, judge) for ``combine: implicit``, or
one call answering all criteria per (item, judge) for a judge with method ``batched``,
whose verdicts are still cached and deduplicated per criterion. Then it runs the plan
(:meth:`Engine.run`): the detectors, then it serves what it can from the verdict cache or
from an identical call already in flight, sends the rest concurrently (the backends
enforce each judge's concurrency limit), and assembles each item's reward,
status, uncertainty and breakdown with the pure functions of ``core.aggregate``.

It returns domain results (``core.results``); the server turns them into wire models.
The engine's only state is the verdict cache and the calibration windows.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Mapping, Sequence

from rewardsvc.core import aggregate
from rewardsvc.core.objectives import rubric_objectives, with_objectives
from rewardsvc.core.observe import NULL_OBSERVER, Observer
from rewardsvc.core.results import (
    BatchResult,
    ItemReward,
    JudgeOutcome,
    Usage,
)
from rewardsvc.core.rollout import ItemIn, ScoreOptions
from rewardsvc.core.rubric import JudgeRule, Rubric
from rewardsvc.graders.registry import Graders, grade_criteria
from rewardsvc.graders.result import GraderResult
from rewardsvc.judges.judge import Judge
from rewardsvc.safety.detectors import THREAD_ABOVE_CHARS, detect
from rewardsvc.scoring import agentic, cascade, steps
from rewardsvc.scoring.assemble import (
    add_grades,
    attach_evidence,
    episode_part,
    item_reward,
    judge_outcome,
    step_results,
    with_grader_flags,
)
from rewardsvc.scoring.batch_plan import BatchPlan
from rewardsvc.scoring.comparer import Comparer
from rewardsvc.scoring.groups import Comparing
from rewardsvc.scoring.item_checks import checked
from rewardsvc.scoring.judging import JudgeLike
from rewardsvc.scoring.pacing import Pacer
from rewardsvc.scoring.parts import Part, split
from rewardsvc.scoring.planning import Call, Prepared, When, plan
from rewardsvc.scoring.rows import Rows
from rewardsvc.scoring.selection import min_judges_for, select_judges
from rewardsvc.scoring.serving import Expiry, Outcome, serve, serve_beside_graders, tally
from rewardsvc.storage.cache import VerdictCache
from rewardsvc.storage.calibration import CalibrationWindows

log = logging.getLogger(__name__)


async def _flags(p: Prepared) -> list[str]:
    """The detectors' flags on a prepared item, with its rollout's notes."""
    rollout = p.rollout
    try:
        # Linear time, but a long text still takes milliseconds: off the event loop.
        if len(rollout.completion) + len(rollout.prompt) > THREAD_ABOVE_CHARS:
            found = await asyncio.to_thread(detect, rollout)
        else:
            found = detect(rollout)
        return sorted(set(found) | set(rollout.notes()))
    except Exception:
        # A detector bug must not sink the batch; the item is scored without flags.
        log.exception("detectors failed on items[%d]", p.index)
        return []


class Engine:
    """Scores batches against rubrics with a set of judges, sharing one verdict cache.

    ``judges`` maps pool judge names to judges (``rewardsvc.judges.judge.build_judges``);
    the engine owns them and closes them in ``aclose``. ``cache=None`` keeps no verdicts
    but still deduplicates identical calls in flight. Items whose prompt, completion or
    reference is longer than ``max_text_chars`` are rejected. Criteria with a ``grader``
    are scored by ``graders`` (no judge call); without it they fail as ``internal``.
    """

    def __init__(
        self,
        judges: Mapping[str, JudgeLike],
        cache: VerdictCache | None = None,
        max_text_chars: int = 100_000,
        observer: Observer = NULL_OBSERVER,
        graders: Graders | None = None,
        windows: CalibrationWindows | None = None,
    ):
        self.judges = dict(judges)
        self.graders = graders
        self.cache = cache if cache is not None else VerdictCache(max_entries=0)
        self.max_text_chars = max_text_chars
        self.windows = windows or CalibrationWindows()
        self._expiry = Expiry()
        self.observer = observer

    # ----------------------------------------------------------- scoring

    async def plan(
        self,
        rubric: Rubric,
        items: Sequence[ItemIn],
        options: ScoreOptions | None = None,
        metrics_label: str | None = None,
    ) -> BatchPlan:
        """The plan of scoring ``items`` with ``rubric``: each item checked on its own (a
        bad one rejected), the judge calls of the rest and what they cost. Nothing is judged
        or graded, and no detector runs: :meth:`run` does that, once admitted.

        ``metrics_label`` names the rubric in metrics (default its id); callers pass a
        fixed label for inline rubrics, whose ids are the client's to choose and would
        otherwise grow the metric series without bound.

        Raises :class:`RequestError` for a request-level problem (``options.judges`` names
        a judge the rubric does not list, ``options.min_judges`` above the judges selected,
        or a rubric judge missing from the pool); item-level problems never raise.
        """
        options = options or ScoreOptions()
        cascade.check_request(rubric, self.judges, options)
        names = select_judges(rubric, self.judges, options.judges)
        min_judges = min_judges_for(rubric, options.min_judges, len(names))
        rejected: list[ItemReward | None] = [None] * len(items)
        pacer = Pacer()  # a large batch must not hold the loop from start to end
        when = When()
        parts = split(rubric, items)
        for part in parts:
            part.prepared = await checked(
                part.rubric, items, part.positions, rejected, pacer, self.max_text_chars
            )
            part.calls = await plan(
                self.judges, part.rubric, part.rubric.version(), names, part.prepared, when, pacer
            )
        rows = cascade.decided_by(rubric, self.judges, names, min_judges)
        return BatchPlan(
            rubric,
            list(items),
            options,
            names,
            min_judges,
            parts,
            rejected,
            rows,
            metrics_label,
            when,
        )

    async def score(
        self,
        rubric: Rubric,
        items: Sequence[ItemIn],
        options: ScoreOptions | None = None,
        metrics_label: str | None = None,
        deadline: float | None = None,
    ) -> BatchResult:
        """Rewards for ``items`` in input order: :meth:`plan`, then :meth:`run` (for callers
        that admit nothing in between)."""
        return await self.run(await self.plan(rubric, items, options, metrics_label), deadline)

    async def run(self, batch_plan: BatchPlan, deadline: float | None = None) -> BatchResult:
        """Run ``batch_plan`` (once): the rewards of its items, in input order.

        ``deadline`` (``time.monotonic()`` seconds) bounds the judge and grader work: calls
        still running then are cancelled and count as failed (``error_kind`` ``deadline``),
        so the batch is answered in time with those items as ``judge_error`` or ``degraded``.
        """
        started = time.perf_counter()
        rubric, options = batch_plan.rubric, batch_plan.options
        rows = batch_plan.rows
        names, min_judges = rows.names, rows.min_judges
        batch_plan.when.at = deadline
        version = rubric.version()
        results = list(batch_plan.rejected)
        pacer = Pacer()
        usage = Usage()
        parts = batch_plan.parts
        await asyncio.gather(
            *(self._judge(p, options, rows, usage, deadline, pacer) for p in parts)
        )
        episodes = any(p.rubric.has_episode_criteria for p in parts)
        if episodes and rubric.aggregation.calibration != "none":
            await self._calibrate(rubric, version, names, [r for p in parts for r in p.rows])
        rule = options.rule or rubric.aggregation.rule
        for part in parts:
            assembled = await self._assemble(part, rule, names, min_judges, pacer)
            for p, result in zip(part.prepared, assembled, strict=True):
                result.group = p.rollout.prompt_key()
                if part.own:
                    result.version = part.rubric.version()
                results[p.index] = rubric_objectives(part.rubric, result, rubric.objectives)

        usage.latency_ms = (time.perf_counter() - started) * 1000
        batch = BatchResult(
            rubric_id=rubric.id,
            version=version,
            items=with_objectives(rubric, results),
            usage=usage,
            run=options.run,
        )
        self.observer.batch(batch_plan.metrics_label or rubric.id, batch)
        return batch

    async def _judge(
        self,
        part: Part,
        options: ScoreOptions,
        rows: Rows,
        usage: Usage,
        deadline: float | None,
        pacer: Pacer,
    ) -> None:
        """Flag, judge and grade the items of ``part`` with its rubric, as planned (an item's
        flags are the detectors' and its grader criteria's); its rows are each item's judge
        outcomes before calibration."""
        rubric, names = part.rubric, rows.names
        for p in part.prepared:
            await pacer.step()
            p.flags = await _flags(p)
        outcomes, part.graded = await self._judge_and_grade(
            rubric, part.calls, part.prepared, options.use_cache, deadline, pacer
        )
        usage.grader_calls += sum(len(g) for g in part.graded)
        for p, grades in zip(part.prepared, part.graded, strict=True):
            p.flags = with_grader_flags(p.flags, grades)
        if rubric.cascade is None:
            part.verdicts = tally(part.calls, outcomes, names, len(part.prepared), usage)
        else:
            part.verdicts, part.decided = cascade.tally_stages(
                rubric.cascade, part.calls, outcomes, len(part.prepared), usage
            )
        add_grades(part.verdicts, part.graded)
        episode = steps.episode_rubric(rubric)
        for p, per_judge in zip(part.prepared, part.verdicts, strict=True):
            await pacer.step()
            row = {
                name: judge_outcome(episode, episode_part(per_judge[name]))
                if episode is not None
                else JudgeOutcome(score=None, error="the rubric has only step criteria")
                for name in names
            }
            if p.rollout.images:
                for name in rows.blind:
                    row[name].without_images = True
            part.rows.append(row)

    async def _judge_and_grade(
        self,
        rubric: Rubric,
        calls: list[Call],
        prepared: list[Prepared],
        use_cache: bool,
        deadline: float | None,
        pacer: Pacer,
    ) -> tuple[list[Outcome], list[dict[str, GraderResult]]]:
        """The judge calls' outcomes and each item's grader results, run side by side; the
        agentic questions after the graders, whose results their tools show."""
        grading = None
        if any(c.grader is not None for c in rubric.criteria):
            rollouts = [p.rollout for p in prepared]
            grading = grade_criteria(self.graders, rubric, rollouts, deadline)
        lanes = None if self.graders is None else self.graders.sandbox
        items = [(p.rollout, p.tools) for p in prepared]

        def contexts(graded: list[dict[str, GraderResult]]) -> None:
            agentic.set_contexts(rubric, items, graded, lanes, deadline)

        def serving(some: list[Call]) -> Awaitable[list[Outcome]]:
            return serve(self.cache, self._expiry, some, use_cache, deadline, pacer)

        staged = rubric.cascade

        def staging(some: list[Call]) -> Awaitable[list[Outcome]]:
            assert staged is not None
            return cascade.serve_stages(staged, some, serving)

        ungraded: list[dict[str, GraderResult]] = [{} for _ in prepared]
        if grading is None and staged is None and all(c.tools is None for c in calls):
            return await serving(calls), ungraded  # no graders, stages or tools to wait for
        return await serve_beside_graders(
            serving, calls, grading, ungraded, contexts, None if staged is None else staging
        )

    async def _calibrate(
        self, rubric: Rubric, version: str, names: list[str], rows: list[dict[str, JudgeOutcome]]
    ) -> None:
        """Per-judge calibration: this batch's raw scores join the judge's window first, so
        that a batch is calibrated against itself and its predecessors, and the result does
        not depend on the order of items within the batch."""
        agg = rubric.aggregation
        for name in names:
            # Keyed by version: an edited rubric (or an inline one reusing a library id)
            # must not be calibrated against another rubric's scores. Items with their own
            # criteria share the batch rubric's window: one prompt's few rewards are no
            # reference, and its judges and scale are the batch rubric's.
            reference = await self.windows.extend_and_stats(
                version,
                name,
                agg.calibration_window,
                [s for r in rows if (s := r[name].raw_score) is not None],
            )
            for row in rows:
                jr = row[name]
                if jr.raw_score is None:
                    continue
                jr.score, jr.variance = aggregate.calibrate(
                    agg.calibration, jr.raw_score, reference, variance=jr.variance
                )

    async def _assemble(
        self, part: Part, rule: JudgeRule, names: list[str], min_judges: int, pacer: Pacer
    ) -> list[ItemReward]:
        """Each item's reward from its calibrated rows, under the part's rubric."""
        rewards: list[ItemReward] = []
        for p, row, per_judge, grades in zip(
            part.prepared, part.rows, part.verdicts, part.graded, strict=True
        ):
            await pacer.step()
            reward = item_reward(
                part.rubric,
                rule,
                names,
                min_judges,
                f"items[{p.index}]",
                p.id,
                p.rollout,
                p.flags,
                row,
                per_judge,
                step_results(part.rubric, p.rollout, per_judge, rule, min_judges),
            )
            attach_evidence(reward, grades)
            if part.decided:
                cascade.mark(reward, names[0], part.decided[len(rewards)])
            rewards.append(reward)
        return rewards

    def comparer(self) -> Comparer:
        """Groups and preferences run by this engine's executor: its verdict cache, the
        expiry :meth:`expire` sets, its observer, graders and calibration windows (its
        judges that can compare: the pool's)."""
        judges = {n: j for n, j in self.judges.items() if isinstance(j, Judge)}
        shared = Comparing(
            max_text_chars=self.max_text_chars,
            cache=self.cache,
            expiry=self._expiry,
            observer=self.observer,
            graders=self.graders,
            windows=self.windows,
        )
        return Comparer(judges, shared)

    def expire(self) -> None:
        """End the judge and grader work of every batch now, as if their deadlines had
        passed (on shutdown, so that they are answered, with judge_error where work was
        cut)."""
        self._expiry.expire()
        if self.graders is not None:
            self.graders.expire()

    async def aclose(self) -> None:
        """Close the judges (their HTTP clients) and the verdict cache."""
        closing = await asyncio.gather(
            *(j.aclose() for j in self.judges.values()), return_exceptions=True
        )
        for outcome in closing:
            if isinstance(outcome, Exception):
                log.warning("closing a judge failed: %s", outcome)
        await self.cache.aclose()
