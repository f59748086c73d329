"""A Verdict: one judge's score for one criterion (or one holistic call) of one item."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields

from rewardsvc.core.errors import JudgeErrorKind


@dataclass(frozen=True)
class Verdict:
    """The outcome of one judge call.

    ``score`` is normalized to [0, 1]; it is ``None`` exactly when ``error`` is set,
    because a failed call must never be mistaken for a low score. A reasoning judge's
    verdict also carries its ``reasoning`` text and ``reasoning_tokens`` (already counted
    in ``completion_tokens``); ``raw`` is then its answer only.
    """

    score: float | None
    variance: float = 0.0
    probs: dict[str, float] | None = None
    raw: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = None
    error_kind: JudgeErrorKind | None = None
    cached_tokens: int = 0
    """Prompt tokens the provider served from its prompt cache
    (``usage.prompt_tokens_details.cached_tokens``), part of ``prompt_tokens``."""
    cost: float | None = None
    """What the call's replies cost at the judge's ``prices`` (None: the judge has none)."""
    reasoning: str = ""
    reasoning_tokens: int = 0
    calls: int = 1
    """The judge requests the verdict took: an agentic judge's each turn and the verdict."""

    @property
    def ok(self) -> bool:
        """True when the call produced a score."""
        return self.error is None and self.score is not None

    def timed(self, latency_ms: float) -> Verdict:
        """This verdict with its call's ``latency_ms`` (what ``dataclasses.replace`` gives).

        The fields are copied as they are: every judge call times its verdict, and
        ``replace`` (its walk over the fields, then the frozen ``__init__``'s
        ``object.__setattr__`` per field) cost six times as much (47 K instructions
        against 8 K). A verdict has no ``__post_init__`` to run again.
        """
        timed = object.__new__(type(self))
        timed.__dict__.update(self.__dict__, latency_ms=latency_ms)
        return timed

    @classmethod
    def answered(
        cls,
        score: float,
        variance: float,
        probs: dict[str, float] | None,
        raw: str,
        prompt_tokens: int,
        completion_tokens: int,
    ) -> Verdict:
        """The verdict of a judge's answer: what ``Verdict(score=score, ...)`` gives, every
        other field at its default.

        Made as :meth:`timed` makes its copy: every judge call makes one, and the frozen
        ``__init__`` (an ``object.__setattr__`` per field) cost three times as much (25 K
        instructions against 8 K).
        """
        verdict = object.__new__(cls)
        verdict.__dict__.update(
            _DEFAULTS,
            score=score,
            variance=variance,
            probs=probs,
            raw=raw,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )
        return verdict

    @classmethod
    def failed(
        cls,
        error: str,
        raw: str = "",
        latency_ms: float = 0.0,
        kind: JudgeErrorKind = "internal",
    ) -> Verdict:
        """A verdict for a call that produced no usable score."""
        return cls(score=None, error=error, raw=raw, latency_ms=latency_ms, error_kind=kind)


_DEFAULTS = {f.name: f.default for f in fields(Verdict) if f.default is not MISSING}
"""Every field's default (all but ``score`` have one, and none is made by a factory)."""
