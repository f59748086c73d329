"""ORS sessions and their episodes: one task each, answered through one tool.

The answer tool's output carries rewardsvc's reward for (the task's prompt, the answer):
the item goes through the same scoring as ``/v1/rewards`` (the caller's ``score``). How a
result becomes ORS:

- ``ok`` or ``degraded``: a tool output with the reward, ``finished`` true, and the whole
  result as metadata (its status says degraded);
- ``rejected`` (a malformed answer): a tool error with reason ``input_validation``, the
  episode not finished (the policy may answer again);
- ``judge_error``: :class:`JudgeFailure`, which the route sends as the stream's ``error``
  event; the ``openreward`` client raises ``ToolFailed`` and the trainer records no reward
  (never a 0).

A call after the episode finished is refused with reason ``episode_finished``. A call's
result is kept under its ``task_id`` for a while, so that a client whose stream was cut
resumes it instead of scoring the answer twice.

A session belongs to the API key that created it (its ``holder``): another key finds no such
session. What a session and each of its calls hold is admitted by the caller before they
start, and given back through the ``release`` each carries when they end.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rewardsvc.core.errors import ErrorKind, RequestError, Unavailable
from rewardsvc.protocol.ors import TextBlock, ToolError, ToolOutput, ToolSpec, ToolSuccess
from rewardsvc.protocol.rejections import ORS_FIELDS, their_field
from rewardsvc.protocol.rewards import RewardResponse

from .environments import OrsEnvironment, OrsTask

SESSION_TTL_S = 300.0
"""A session nobody pinged (the client pings every 10 s) for this long is closed."""
MAX_SESSIONS = 10_000
KEPT_CALLS = 8
"""Results of a session's latest calls kept for resumption."""

Score = Callable[[OrsEnvironment, dict[str, Any]], Awaitable[RewardResponse]]
Outcome = ToolSuccess | ToolError


class JudgeFailure(Exception):
    """The judges could not score the answer (status judge_error): no reward exists."""


class TooManySessions(Unavailable):
    """MAX_SESSIONS sessions are open: retry in a while (kind ``too_many_sessions``)."""

    def __init__(self, max_sessions: int):
        message = f"{max_sessions} ORS sessions are open"
        super().__init__(message, kind=ErrorKind.TOO_MANY_SESSIONS, retry_after=10)


def answer_tool(env: OrsEnvironment) -> ToolSpec:
    """The one tool of ``env``: the final answer, scored."""
    description = "Submit your final answer to the task. The answer is scored and the episode ends."
    return ToolSpec(
        name=env.config.tool,
        description=description,
        input_schema={
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "Your final answer."}},
            "required": ["answer"],
        },
    )


Release = Callable[[], None]
"""Gives back what a session or a call was admitted to hold (idempotent)."""


Admit = Callable[[], Release]
"""Admits what a session holds (raising to refuse it); how to give it back."""


def _nothing() -> None:
    pass


@dataclass
class Episode:
    """One session: its environment and task, its key's holder name, and whether it
    finished."""

    sid: str
    env: OrsEnvironment
    task: OrsTask
    holder: str = ""
    release: Release = _nothing
    touched: float = field(default_factory=time.monotonic)
    finished: bool = False
    calls: OrderedDict[str, asyncio.Task[Outcome]] = field(default_factory=OrderedDict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def start_call(
        self, task_id: str, name: str, given: dict[str, Any], score: Score, release: Release
    ) -> None:
        """Run a tool call under ``task_id`` in the background (it outlives a cut stream);
        ``release`` is called when it ends, however it ends."""
        call = asyncio.create_task(self._call(name, given, score))
        call.add_done_callback(lambda _: release())
        self.calls[task_id] = call
        while len(self.calls) > KEPT_CALLS:
            _, oldest = self.calls.popitem(last=False)
            oldest.cancel()

    async def _call(self, name: str, given: dict[str, Any], score: Score) -> Outcome:
        if name != self.env.config.tool:
            return ToolError(error=f"{name!r} is not a valid tool", reason="not_found")
        answer = given.get("answer")
        if set(given) != {"answer"} or not isinstance(answer, str):
            return ToolError(
                error="Tool input validation error: expected {'answer': <string>}",
                reason="input_validation",
            )
        async with self.lock:  # one answer at a time: the first to finish the episode wins
            if self.finished:
                return ToolError(
                    error=f"{name!r} was not run: the episode has finished",
                    reason="episode_finished",
                )
            response = await score(self.env, self.task.item(answer))
            outcome = tool_outcome(response)
            self.finished = isinstance(outcome, ToolSuccess)
            return outcome

    def close(self) -> None:
        """Cancel the calls still running and give back what the session held."""
        for call in self.calls.values():
            call.cancel()
        self.release()


def tool_outcome(response: RewardResponse) -> Outcome:
    """One item's response as the answer tool's outcome (raises JudgeFailure)."""
    result = response.results[0]
    if result.status == "rejected":
        _, message = their_field(result, ORS_FIELDS, "answer")
        return ToolError(error=f"rejected: {message}", reason="input_validation")
    if result.status == "judge_error" or result.reward is None:
        raise JudgeFailure(f"judge_error: {result.error or 'the judges did not score it'}")
    metadata = result.model_dump(mode="json", exclude_none=True)
    metadata["rubric"] = response.rubric.model_dump(mode="json", exclude_none=True)
    text = f"Your answer was scored: reward {result.reward:.4f} ({result.status})."
    output = ToolOutput(
        blocks=[TextBlock(text=text)], metadata=metadata, reward=result.reward, finished=True
    )
    return ToolSuccess(output=output)


class Sessions:
    """The open sessions by id; a session unpinged for SESSION_TTL_S is closed."""

    def __init__(self, ttl_s: float = SESSION_TTL_S, max_sessions: int = MAX_SESSIONS):
        self.ttl_s = ttl_s
        self.max_sessions = max_sessions
        self._open: dict[str, Episode] = {}

    def __len__(self) -> int:
        return len(self._open)

    def create(
        self,
        sid: str,
        env: OrsEnvironment,
        task: OrsTask,
        holder: str,
        admit: Callable[[], Release],
    ) -> Episode:
        """Open session ``sid`` of ``holder`` on ``task``, holding what ``admit`` admits
        (it raises to refuse); raises TooManySessions, or a RequestError when ``sid`` is open."""
        self.reap()
        if sid in self._open:
            raise RequestError("Session already exists", field="X-Session-ID")
        if len(self._open) >= self.max_sessions:
            raise TooManySessions(self.max_sessions)
        episode = self._open[sid] = Episode(sid, env, task, holder, admit())
        return episode

    def get(self, sid: str, holder: str) -> Episode | None:
        """Session ``sid`` of ``holder`` (its time to live renewed), or None."""
        episode = self._open.get(sid)
        if episode is None or episode.holder != holder:
            return None
        episode.touched = time.monotonic()
        return episode

    def delete(self, sid: str, holder: str | None = None) -> None:
        """Close session ``sid`` (of ``holder`` when given; nothing when it is not open)."""
        episode = self._open.get(sid)
        if episode is not None and holder in (None, episode.holder):
            del self._open[sid]
            episode.close()

    def reap(self) -> None:
        """Close the sessions whose time to live passed."""
        now = time.monotonic()
        for sid in [s for s, e in self._open.items() if now - e.touched > self.ttl_s]:
            self.delete(sid)

    def close(self) -> None:
        """Close every session."""
        for sid in list(self._open):
            self.delete(sid)


async def wait_call(call: asyncio.Task[Outcome], every_s: float) -> Outcome | None:
    """The call's outcome, or None when it is still running after ``every_s`` (the caller
    sends a keep-alive and waits again)."""
    with contextlib.suppress(TimeoutError):
        return await asyncio.wait_for(asyncio.shield(call), every_s)
    return None
