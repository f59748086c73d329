"""One entry point for every grader: :class:`Graders` applies any grader spec to a rollout.

Every grader but ``embedding`` and the code graders runs in the deadline workers
(:class:`~rewardsvc.graders.worker.DeadlineWorkers`): child processes of the graders' own,
one per CPU by default, queued fairly between requests, each call killed at its time
limit (``timeout_s`` of a math spec, else the graders' ``timeout_s``), which starts when a
worker takes it. The embedding model is too large to load in every worker; its cost is
bounded (texts cut to 4,000 characters, 256 word pieces read) and it runs on a thread of
its own. The code graders (``io_cases``, ``check_program``: :mod:`~rewardsvc.graders.code`;
``unit_tests``: :mod:`~rewardsvc.graders.unit_tests`) run their programs in the sandbox's
lanes, queued fairly between requests there. A grader that runs out of time, finds no free
worker before the request's deadline or fails gives no score, with a typed ``kind``: never
a score of 0.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, cast

from rewardsvc.core.code_spec import CheckProgramSpec, IoCasesSpec, UnitTestsSpec
from rewardsvc.core.graders_spec import (
    EmbeddingSpec,
    ExactSpec,
    GraderSpec,
    JsonSpec,
    LengthSpec,
    MathSpec,
    NumericSpec,
    RegexSpec,
    SectionsSpec,
    SimilaritySpec,
)
from rewardsvc.core.media import has_markers, split_markers
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.spec_base import SpecModel
from rewardsvc.graders import code, text, unit_tests
from rewardsvc.graders.child import DeadlineExceeded, WorkerFailed, WorkersBusy
from rewardsvc.graders.embedding import Embedder
from rewardsvc.graders.mathcheck import compare, import_math_verify, math_check
from rewardsvc.graders.result import GraderResult
from rewardsvc.graders.structured import json_check
from rewardsvc.graders.worker import DeadlineWorkers
from rewardsvc.sandbox.lanes import SandboxLanes

GRADER_TIMEOUT_S = 2.0
"""Time limit of one grader call (math specs give their own)."""


def default_workers() -> int:
    """One grader worker per CPU this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _embedding_elsewhere(completion: str, reference: str, spec: EmbeddingSpec) -> GraderResult:
    raise ValueError("the embedding grader runs in the service, not in a worker")


GraderFunction = Callable[[str, str, Any], GraderResult]
"""How a grader is applied: ``(completion, reference, spec) -> result``."""

FUNCTIONS: dict[type[SpecModel], GraderFunction] = {
    ExactSpec: text.exact_match,
    NumericSpec: text.numeric_match,
    MathSpec: math_check,
    RegexSpec: lambda completion, _reference, spec: text.regex_match(completion, spec),
    JsonSpec: lambda completion, _reference, spec: json_check(completion, spec),
    LengthSpec: lambda completion, _reference, spec: text.length_check(completion, spec),
    SectionsSpec: lambda completion, _reference, spec: text.sections_check(completion, spec),
    SimilaritySpec: text.similarity,
    EmbeddingSpec: _embedding_elsewhere,
}
"""The function of each grader, by its spec class in ``rewardsvc.core.graders_spec.GRADERS``
(which says what the grader needs): one entry per grader, a test checks every spec has one
here or in :data:`SANDBOXED`."""

SandboxFunction = Callable[[Rollout, Any, code.Sandbox], Awaitable[GraderResult]]
"""How a code grader is applied: ``(rollout, spec, sandbox)``."""

SANDBOXED: dict[type[SpecModel], SandboxFunction] = {
    IoCasesSpec: lambda rollout, spec, sandbox: code.io_cases(
        rollout.completion, rollout.reference, spec, sandbox
    ),
    CheckProgramSpec: lambda rollout, spec, sandbox: code.check_program(
        rollout.completion, rollout.reference, spec, sandbox
    ),
    UnitTestsSpec: unit_tests.unit_tests,
}
"""The function of each code grader (a spec whose ``in_sandbox`` is set): it runs its
programs through the sandbox's lanes, on the service's event loop, never in a worker."""


def grade_here(spec: GraderSpec, completion: str, reference: str) -> GraderResult:
    """Any grader but ``embedding``, in this process (what a worker runs)."""
    return FUNCTIONS[type(spec)](completion, reference, spec)


def warm_up() -> None:
    """Import what the graders use and build math-verify's parsers (a worker runs it once
    when it starts; every call it forks inherits them)."""
    import_math_verify()
    for name in ("jsonschema", "rapidfuzz.fuzz", "re2"):
        importlib.import_module(name)
    compare("\\boxed{\\frac{1}{2}}", "\\boxed{0.5}", 6)


def stopped(exc: Exception) -> GraderResult:
    """The result of a grader call the workers could not answer, typed by why."""
    if isinstance(exc, WorkersBusy):
        return GraderResult(None, {}, f"grader not run: {exc}", "grader_busy")
    if isinstance(exc, DeadlineExceeded):
        if exc.by_caller:
            return GraderResult(
                None, {}, f"grader cut by the request's deadline: {exc}", "deadline"
            )
        return GraderResult(None, {}, f"grader ran out of time: {exc}", "grader_timeout")
    return GraderResult(None, {}, f"grader failed: {exc}", "grader_failed")


def text_reference(reference: str | None) -> str | None:
    """The reference a grader reads: its text without its images' markers, or None when
    it held images only. A grader compares text (the answer "42" beside the chart it is
    read from); the images are for the judges, which see them where the reference is shown."""
    if reference is None or not has_markers(reference):
        return reference
    text = "".join(p for p in split_markers(reference) if isinstance(p, str)).strip()
    return text or None


class Graders:
    """Applies grader specs; create one per service and :meth:`close` it at shutdown.

    ``workers`` grader processes (default one per CPU); ``timeout_s`` is the time limit of
    one call of a grader whose spec gives none; ``startup_s`` the time a worker may take
    to start; ``sandbox`` the lanes the code graders run their programs in (None: no
    sandbox, every code grader gives no score, ``sandbox_unavailable``), closed with them.
    """

    def __init__(
        self,
        workers: int | None = None,
        timeout_s: float = GRADER_TIMEOUT_S,
        startup_s: float = 60.0,
        sandbox: SandboxLanes | None = None,
    ) -> None:
        self.workers = DeadlineWorkers(workers or default_workers(), startup_s, warm_up)
        self.timeout_s = timeout_s
        self.sandbox = sandbox
        self.embedder = Embedder()
        self._embedding: ThreadPoolExecutor | None = None  # made on first use

    def warm(self) -> None:
        """Start the workers and import their libraries now (a second or two) rather than
        when the first call comes."""
        self.workers.warm(warm_up)

    def _limit(self, spec: GraderSpec) -> float:
        limit = spec.time_limit_s
        return self.timeout_s if limit is None else limit

    async def grade(
        self,
        spec: GraderSpec,
        rollout: Rollout,
        *,
        group: Hashable | None = None,
        deadline: float | None = None,
    ) -> GraderResult:
        """Score ``rollout`` with ``spec`` in a worker, queued in ``group``'s turn (one
        group per request), not past ``deadline`` (``time.monotonic()`` seconds). A grader
        that compares against a reference gives no score (with an error) when the rollout
        has none, or a reference of images alone (see :func:`text_reference`)."""
        text = text_reference(rollout.reference)
        if spec.needs_reference and text is None:
            why = "reads the reference's text: it holds only images" if rollout.reference else ""
            return GraderResult(None, {}, f"grader {spec.type!r} {why or 'needs a reference'}")
        if text != rollout.reference:
            rollout = replace(rollout, reference=text)
        if spec.in_sandbox:
            sandbox = code.Sandbox(self.sandbox, group, deadline)
            return await SANDBOXED[type(spec)](rollout, spec, sandbox)
        completion, reference = rollout.completion, rollout.reference or ""
        if not spec.in_workers:
            if self._embedding is None:
                self._embedding = ThreadPoolExecutor(1, thread_name_prefix="rewardsvc-embedding")
            # The embedding spec is the one whose grader runs here (``in_workers``).
            embedding = cast(EmbeddingSpec, spec)
            work = asyncio.get_running_loop().run_in_executor(
                self._embedding, self.embedder.grade, completion, reference, embedding
            )
            wait = None if deadline is None else max(deadline - time.monotonic(), 0)
            try:
                return await asyncio.wait_for(work, wait)
            except TimeoutError:
                return stopped(WorkersBusy("the embedding model was busy until the deadline"))
        args = (spec, completion, reference)
        try:
            return await self.workers.arun(
                grade_here, args, self._limit(spec), group=group, deadline=deadline
            )
        except (DeadlineExceeded, WorkersBusy, WorkerFailed) as exc:
            return stopped(exc)

    def expire(self) -> None:
        """End the grader calls queued or running now (on shutdown), as past their
        request's deadline."""
        self.workers.expire()

    def close(self) -> None:
        """Stop the worker processes, the embedding thread and the sandbox's lanes."""
        self.workers.close()
        if self.sandbox is not None:
            self.sandbox.close()
        if self._embedding is not None:
            self._embedding.shutdown(wait=False, cancel_futures=True)
            self._embedding = None


async def grade_criteria(
    graders: Graders | None,
    rubric: Rubric,
    rollouts: Sequence[Rollout],
    deadline: float | None = None,
) -> list[dict[str, GraderResult]]:
    """The results of the grader criteria of ``rubric`` for each rollout, by criterion id,
    each computed in a worker, queued as one request's, not past ``deadline``. Without
    ``graders`` every such criterion gives no score, with an internal error."""
    criteria = [c for c in rubric.criteria if c.grader is not None]
    if not criteria:
        return [{} for _ in rollouts]
    request = object()

    async def one(criterion: Criterion, rollout: Rollout) -> GraderResult:
        if graders is None or criterion.grader is None:
            return GraderResult(None, {}, "internal: this engine has no graders", "internal")
        return await graders.grade(criterion.grader, rollout, group=request, deadline=deadline)

    pairs = [(c, r) for r in rollouts for c in criteria]
    results = iter(await asyncio.gather(*(one(c, r) for c, r in pairs)))
    return [{c.id: next(results) for c in criteria} for _ in rollouts]
