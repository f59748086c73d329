"""One generation run: a generator judge asked for each row's rubric, the results tallied.

:class:`Generator` holds the judge of the pool that writes rubrics: its
:class:`~rewardsvc.judges.backends.Backend` (the judges' own deadlines, retries on 429,
5xx and connection errors, and circuit breaker) and its API shape (chat messages, or one
document for a completion model). Each row is one call at temperature 0 with the schema
as ``response_format``; a reply that is refused (``generation_check``) is asked again, up
to ``retries`` times, with the reason added to the prompt, so the retry differs and the
run stays deterministic. A row whose call fails or whose replies are all refused is an
:class:`Outcome` with a reason, never an empty rubric. :class:`Tally` adds up what the
report says.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rewardsvc.authoring.generation_check import Checked, Checker, Refused, criterion_row
from rewardsvc.authoring.generation_prompt import (
    Limits,
    Source,
    body,
    grounding,
    response_format,
    rules,
)
from rewardsvc.core.pool import JudgeConfig
from rewardsvc.judges.backends import Backend
from rewardsvc.judges.failures import BackendError
from rewardsvc.judges.identity import defuser_for
from rewardsvc.judges.limits import least_tokens
from rewardsvc.judges.questions import Question
from rewardsvc.judges.shapes import choices, prompt_text, shape_for, usage

# A generation call asks no scale question: its answer is read as JSON, not as a choice.
_RUBRIC_ANSWER = Question("the rubric, as JSON", (), ())


@dataclass(frozen=True)
class Outcome:
    """What became of one row: its output row, or why it was rejected."""

    id: str
    line: int
    row: dict[str, Any] | None = None
    reason: str | None = None
    checked: Checked | None = None
    grounding: str | None = None
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Generator:
    """The judge entry ``name`` of the pool, asked for rubrics within ``limits``."""

    def __init__(
        self,
        name: str,
        config: JudgeConfig,
        limits: Limits,
        *,
        retries: int = 1,
        max_tokens: int | None = None,
        frequency_penalty: float = 0.0,
    ):
        self.name = name
        self.config = config
        self.limits = limits
        self.retries = retries
        self.max_tokens = max_tokens or limits.output_tokens()
        self.frequency_penalty = frequency_penalty
        self.backend = Backend(name, config)
        self.shape = shape_for(config.api)
        self.checker = Checker(limits)
        self.defuser = defuser_for(config)
        self._rules = rules(limits)
        self._format = response_format(limits)
        self.calls = 0

    def _request(self, source: Source, feedback: str | None) -> tuple[dict[str, Any], int]:
        """The call's body fields and a lower bound on its prompt's tokens."""
        prompt = self.shape.prompt(
            _RUBRIC_ANSWER, self._rules, body(source, feedback, self.defuser)
        )
        fields: dict[str, Any] = {
            **self.shape.body(prompt),
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
            "response_format": self._format,
        }
        if self.frequency_penalty:
            # Greedy decoding still: the penalty lowers the logits of tokens already
            # written, so a small model stops repeating one criterion (deterministic).
            fields["frequency_penalty"] = self.frequency_penalty
        if self.config.sampling.seed is not None:
            fields["seed"] = self.config.sampling.seed
        return fields, least_tokens(prompt_text(prompt))

    def _too_long(self, least: int) -> str | None:
        context = self.config.max_context_tokens
        if context is None or least + self.max_tokens <= context:
            return None
        return (
            f"context_overflow: the row needs at least {least} prompt tokens plus "
            f"{self.max_tokens} for the answer, more than judge {self.name!r}'s "
            f"{context}-token context"
        )

    async def generate(
        self, row_id: str, line: int, source: Source, raw: dict[str, Any]
    ) -> Outcome:
        """The rubric of one row (``raw`` is the input row, echoed in the output)."""
        feedback: str | None = None
        spent = [0, 0]
        for attempt in range(1, self.retries + 2):
            fields, least = self._request(source, feedback)
            if (too_long := self._too_long(least)) is not None:
                return Outcome(row_id, line, reason=too_long, attempts=attempt - 1)
            self.calls += 1
            try:
                reply = await self.backend.send(self.shape, fields)
            except BackendError as exc:
                return Outcome(
                    row_id,
                    line,
                    reason=f"{exc.kind}: {exc.args[0]}",
                    attempts=attempt,
                    prompt_tokens=spent[0],
                    completion_tokens=spent[1],
                )
            p, c = usage(reply)
            spent = [spent[0] + p, spent[1] + c]
            choice = choices(reply)[0]
            try:
                checked = self.checker.check(
                    self.shape.text(choice), truncated=choice.get("finish_reason") == "length"
                )
            except Refused as exc:
                feedback = str(exc)
                continue
            return Outcome(
                row_id,
                line,
                row=_output_row(row_id, raw, checked),
                checked=checked,
                grounding=grounding(source).name,
                attempts=attempt,
                prompt_tokens=spent[0],
                completion_tokens=spent[1],
            )
        return Outcome(
            row_id,
            line,
            reason=f"invalid after {self.retries + 1} attempts: {feedback}",
            attempts=self.retries + 1,
            prompt_tokens=spent[0],
            completion_tokens=spent[1],
        )

    async def aclose(self) -> None:
        """Close the judge's connections."""
        await self.backend.aclose()


def _output_row(row_id: str, raw: dict[str, Any], checked: Checked) -> dict[str, Any]:
    """A per-prompt rubric row: ``{id, prompt, reference?, criteria}``."""
    out: dict[str, Any] = {"id": row_id, "prompt": raw["prompt"]}
    if raw.get("reference") is not None:
        out["reference"] = raw["reference"]
    out["criteria"] = [criterion_row(c) for c in checked.criteria]
    return out


@dataclass
class Tally:
    """What the run did, for its report."""

    rows: int = 0
    skipped: int = 0
    generated: int = 0
    rejects: list[dict[str, Any]] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    categories: Counter[str] = field(default_factory=Counter)
    groundings: Counter[str] = field(default_factory=Counter)
    duplicates_dropped: int = 0
    ids_renamed: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started: float = field(default_factory=time.monotonic)

    def reject(self, row_id: str | None, line: int, reason: str) -> None:
        """Count one rejected row."""
        self.rejects.append({"id": row_id, "line": line, "reason": reason})

    def add(self, outcome: Outcome) -> None:
        """Count one row's outcome."""
        self.retries += max(0, outcome.attempts - 1)
        self.prompt_tokens += outcome.prompt_tokens
        self.completion_tokens += outcome.completion_tokens
        if outcome.checked is None:
            self.reject(outcome.id, outcome.line, outcome.reason or "no rubric")
            return
        self.generated += 1
        self.counts.append(len(outcome.checked.criteria))
        self.categories.update(c.category for c in outcome.checked.criteria)
        self.groundings[outcome.grounding or "task"] += 1
        self.duplicates_dropped += outcome.checked.duplicates_dropped
        self.ids_renamed += outcome.checked.ids_renamed

    def report(self, calls: int, **where: Any) -> dict[str, Any]:
        """The report as JSON-ready data; ``where`` names the files and the generator."""
        per = (
            {
                "min": min(self.counts),
                "mean": round(statistics.fmean(self.counts), 2),
                "max": max(self.counts),
            }
            if self.counts
            else None
        )
        return {
            **where,
            "rows": self.rows,
            "generated": self.generated,
            "skipped": self.skipped,
            "rejected": len(self.rejects),
            "rejects": self.rejects,
            "criteria_per_prompt": per,
            "categories": dict(sorted(self.categories.items())),
            "groundings": dict(sorted(self.groundings.items())),
            "duplicates_dropped": self.duplicates_dropped,
            "ids_renamed": self.ids_renamed,
            "retries": self.retries,
            "calls": calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "elapsed_s": round(time.monotonic() - self.started, 1),
        }
