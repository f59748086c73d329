"""Agentic questions in a plan: a criterion whose rubric allows tools
(``Rubric.tools_of``), asked of a judge whose pool entry declares tools, is asked as an
:class:`~rewardsvc.judges.asks.AgenticCriterion` with the tools both allow, bound to the
item's :class:`~rewardsvc.judgetools.registry.Later` context. A judge without tools asks
it plainly, from the text, like any criterion: a panel may mix a reader and a checker.

Its cost at admission is the loop's worst case (:func:`loop_cost`); its context (the
item's files, the task's tests, the graders' results on it, the sandbox) is set by the
engine once the item's graders have graded (:func:`set_contexts`), before its agentic
calls are sent; ``options.explain`` shows its transcript (:func:`transcript_seen`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rewardsvc.core.code_spec import UnitTestsSpec
from rewardsvc.core.judge_tools import JudgeTools
from rewardsvc.core.results import Usage
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric
from rewardsvc.core.verdict import Verdict
from rewardsvc.graders.code import Sandbox
from rewardsvc.graders.result import GraderResult
from rewardsvc.judges.asks import AgenticCriterion
from rewardsvc.judges.prompts import Seen
from rewardsvc.judgetools.registry import TOOLS, Later, ToolContext, bind
from rewardsvc.sandbox.lanes import SandboxLanes
from rewardsvc.scoring.judging import JudgeLike, declared_tools

UTF8_MAX = 4
"""Most UTF-8 bytes of one character: a tool result's bound is in characters."""
SHOWN_OVERHEAD_BYTES = 512
"""A shown tool result's fence and heading, and its call's message, at most."""


def agentic_question(
    judge: JudgeLike, rubric: Rubric, criterion: Criterion, rollout: Rollout, item: Later
) -> AgenticCriterion | None:
    """``criterion`` asked of ``judge`` with the tools the rubric allows it and the judge
    declares (None: none, the criterion is asked plainly)."""
    declared = declared_tools(judge)
    if declared is None:
        return None
    names = [t for t in rubric.tools_of(criterion) if t in declared.allowed]
    if not names:
        return None
    return AgenticCriterion(rubric, criterion, rollout, bind(names, item))


def asks_agentically(judge: JudgeLike, rubric: Rubric, criterion: Criterion) -> bool:
    """Whether ``judge`` asks ``criterion`` of ``rubric`` with tools: the rubric allows it
    some the judge declares (``/v1/groups`` then asks it of each completion alone)."""
    declared = declared_tools(judge)
    return declared is not None and any(t in declared.allowed for t in rubric.tools_of(criterion))


def loop_cost(judge: JudgeLike, question_bytes: int) -> tuple[int, int, float]:
    """The worst case of one agentic verdict of ``judge`` whose first prompt is
    ``question_bytes`` bytes: its calls (each turn and the verdict:
    ``JudgeTools.worst_case``), their prompt bytes (each carrying the question and every
    tool result the loop may show) and the loop's sandbox seconds."""
    declared = declared_tools(judge)
    assert declared is not None  # only an agentic question is priced so
    calls, sandbox_s = declared.worst_case()
    return calls, calls * (question_bytes + shown_bytes(declared)), sandbox_s


def shown_bytes(declared: JudgeTools) -> int:
    """The bytes of every tool result one loop may show, at most: each call's output cut
    to its tool's bound, with its fence and its call."""
    widest = max(TOOLS[t].output_chars for t in declared.allowed)
    return declared.max_tool_calls * (widest * UTF8_MAX + SHOWN_OVERHEAD_BYTES)


def tests_of(rubric: Rubric) -> tuple[str, UnitTestsSpec] | None:
    """The task's hidden tests ``run_tests`` runs: the rubric's ``unit_tests`` grader's
    criterion id and spec (its tests, or the item's reference's); None when it grades
    with none."""
    for c in rubric.criteria:
        if isinstance(c.grader, UnitTestsSpec):
            return c.id, c.grader
    return None


def set_contexts(
    rubric: Rubric,
    items: Sequence[tuple[Rollout, Later]],
    graded: Sequence[dict[str, GraderResult]],
    lanes: SandboxLanes | None,
    deadline: float | None,
) -> None:
    """Each item's tool context, once its graders have graded (``graded``, by criterion
    id): its rollout, the task's tests and their grader's result on it (which
    ``run_tests`` shows rather than run them again), those results and the sandbox, its
    runs queued as one request's and none started after ``deadline``."""
    found, group = tests_of(rubric), object()
    cid, tests = found if found is not None else (None, None)
    for (rollout, later), grades in zip(items, graded, strict=True):
        sandbox = Sandbox(lanes, group, deadline)
        tested = grades.get(cid) if cid is not None else None
        later.ctx = ToolContext(rollout, sandbox, tests, grades, tested)


def transcript_seen(seen: Seen, verdict: Verdict | None) -> Seen:
    """What an agentic judge read and did, as explain shows it: its first prompt's
    messages, then each tool call and its result as shown, then the verdict (the answer's
    distribution, or the failure that ended the loop)."""
    if verdict is None or isinstance(seen, str):
        return seen
    steps: list[dict[str, str]] = []
    for step in loop_steps(verdict):
        call = {k: step.get(k) for k in ("turn", "tool", "arguments")}
        steps.append({"role": "tool_call", "content": json.dumps(call)})
        steps.append({"role": "tool", "content": str(step.get("result", ""))})
    answer = {
        "score": verdict.score,
        "p": verdict.probs,
        "error_kind": verdict.error_kind,
        "error": verdict.error,
    }
    return [*seen, *steps, {"role": "verdict", "content": json.dumps(answer)}]


def loop_steps(verdict: Verdict) -> list[dict[str, Any]]:
    """The tool calls of an agentic verdict's loop, as its transcript in ``raw`` holds
    them (an answer's under ``loop``; a failed loop's is the whole raw)."""
    try:
        raw = json.loads(verdict.raw) if verdict.raw else {}
    except ValueError:  # a verdict of another question, cached under this key
        raw = {}
    loop = raw.get("loop", raw) if isinstance(raw, dict) else {}
    steps = loop.get("steps", []) if isinstance(loop, dict) else []
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []


def count_loop(usage: Usage, verdict: Verdict) -> None:
    """Count into ``usage`` the tool loop that gave ``verdict``: how it ended (``finished``
    or its failure's kind) and its tool calls (the monitor counts them per run)."""
    ended = "finished" if verdict.ok else (verdict.error_kind or "internal")
    usage.looped(ended, len(loop_steps(verdict)))
