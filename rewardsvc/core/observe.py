"""The observer: how the rooms below the server report what they did, without I/O.

Judges, backends, the cache and the engine call an :class:`Observer`; the server installs
one that records Prometheus metrics (``rewardsvc.server.metrics``), tests and the CLI use
:data:`NULL_OBSERVER` or their own. One interface, so that metrics are recorded in one
place and no room below the server imports a metrics library.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rewardsvc.core.results import BatchResult
    from rewardsvc.core.verdict import Verdict


class Observer(Protocol):
    """Receives events from the scoring path. Implementations must be cheap and never raise.

    Each method returns None at once (not an empty body, which would make it abstract), so
    a class that subclasses the interface explicitly (:class:`NullObserver`) inherits a
    no-op for every event."""

    def judge_call(self, judge: str, verdict: Verdict) -> None:
        """A judge call finished (``verdict.error_kind`` is set when it failed)."""
        return None

    def tool_loop(self, judge: str, ended: str, calls: Sequence[tuple[str, bool]]) -> None:
        """An agentic judge's tool loop ended: ``answered``, a ``loop_*`` kind, or
        ``judge_error`` (a turn's call failed); ``calls`` its tool calls, each (tool name,
        ``unknown`` for one the judge may not call; whether it gave an error)."""
        return None

    def breaker(self, judge: str, url: str, is_open: bool) -> None:
        """A base URL's circuit breaker opened or closed."""
        return None

    def cache_hit(self, dedup: bool) -> None:
        """A verdict came from the cache (``dedup``: from an identical call in flight)."""
        return None

    def batch(self, label: str, result: BatchResult) -> None:
        """A batch was scored; ``label`` names the rubric in metrics."""
        return None

    def groups(self, label: str, result: BatchResult) -> None:
        """Groups were scored (``POST /v1/groups``): one item per completion, its group reward."""
        return None

    def rubric_file(self, file: str, refused: bool) -> None:
        """A rubric file's latest edit was installed (False) or refused (True)."""
        return None

    def shared_state(self, healthy: bool) -> None:
        """The shared state store (Redis) became reachable (True) or unreachable (False)."""
        return None


class NullObserver(Observer):
    """An observer that records nothing: the interface's methods are all no-ops, and an
    observer that cares about some events subclasses this one and overrides those."""


NULL_OBSERVER: Observer = NullObserver()


class Observers:
    """Several observers as one (e.g. metrics and the reward monitor)."""

    def __init__(self, observers: Sequence[Observer]):
        self.observers = tuple(observers)

    def judge_call(self, judge: str, verdict: Verdict) -> None:
        """Forward to each."""
        for o in self.observers:
            o.judge_call(judge, verdict)

    def tool_loop(self, judge: str, ended: str, calls: Sequence[tuple[str, bool]]) -> None:
        """Forward to each."""
        for o in self.observers:
            o.tool_loop(judge, ended, calls)

    def breaker(self, judge: str, url: str, is_open: bool) -> None:
        """Forward to each."""
        for o in self.observers:
            o.breaker(judge, url, is_open)

    def cache_hit(self, dedup: bool) -> None:
        """Forward to each."""
        for o in self.observers:
            o.cache_hit(dedup)

    def batch(self, label: str, result: BatchResult) -> None:
        """Forward to each."""
        for o in self.observers:
            o.batch(label, result)

    def groups(self, label: str, result: BatchResult) -> None:
        """Forward to each."""
        for o in self.observers:
            o.groups(label, result)

    def rubric_file(self, file: str, refused: bool) -> None:
        """Forward to each."""
        for o in self.observers:
            o.rubric_file(file, refused)

    def shared_state(self, healthy: bool) -> None:
        """Forward to each."""
        for o in self.observers:
            o.shared_state(healthy)
