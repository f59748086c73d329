"""Mathematical equivalence of final answers with math-verify, under a deadline.

math-verify parses LaTeX and plain expressions into sympy and compares them (``1/2``,
``0.5``, ``\\frac{1}{2}``, ``x = \\tfrac12`` are one answer). Parsing a hostile
expression can take unbounded time, so parsing and comparing run in a
:class:`~rewardsvc.graders.worker.DeadlineWorkers` child process; math-verify's own
signal-based timeouts also work there, on the child's main thread.

The answer is taken from the completion with :mod:`rewardsvc.graders.extract` (by
default the last ``\\boxed{}``, else the last "final answer:" line) and handed to
math-verify inside ``\\boxed{}``, so that math-verify compares exactly that answer and
never picks another expression out of the reasoning.
"""

from __future__ import annotations

import math
from typing import Any

from rewardsvc.core.graders_spec import MathSpec
from rewardsvc.graders.extract import extract, extract_reference, prose
from rewardsvc.graders.result import GraderResult, clip_text
from rewardsvc.graders.worker import DeadlineExceeded, DeadlineWorkers, WorkerFailed, WorkersBusy


def _import_math_verify() -> bool:
    import math_verify  # noqa: F401  (imported for its start-up cost)

    return True


def compare(gold: str, answer: str, float_rounding: int, timeout_s: float) -> dict[str, Any]:
    """Parse both texts and compare them (runs in the worker). Returns whether they are
    equivalent and the parsed forms (empty when a text did not parse)."""
    from math_verify import parse, verify

    seconds = max(1, math.ceil(timeout_s))
    parsed_gold = parse(gold, parsing_timeout=seconds)
    parsed_answer = parse(answer, parsing_timeout=seconds)
    equal = bool(
        parsed_gold
        and parsed_answer
        and verify(
            parsed_gold, parsed_answer, float_rounding=float_rounding, timeout_seconds=seconds
        )
    )
    return {
        "equal": equal,
        "parsed_expected": str(parsed_gold[-1]) if parsed_gold else None,
        "parsed_answer": str(parsed_answer[-1]) if parsed_answer else None,
    }


def _boxed(text: str) -> str:
    return "\\boxed{" + text + "}"


class MathChecker:
    """Runs :func:`compare` in deadline workers; one per service, shared by all items."""

    def __init__(self, processes: int = 1) -> None:
        self.workers = DeadlineWorkers(processes)

    def warm(self) -> None:
        """Start the workers and import math-verify in them (a second or two each)."""
        self.workers.warm(_import_math_verify)

    def check(self, completion: str, reference: str, spec: MathSpec) -> GraderResult:
        """1 when the extracted answer is equivalent to the reference, else 0; None (with
        an error) when the deadline passed or the worker failed."""
        found = extract(completion, spec.extract)
        if spec.extract == "none":
            answer = prose(completion)
        elif found.text is None:
            return GraderResult(0.0, {"extracted_by": found.method, "answer": None})
        else:
            answer = _boxed(found.text)
        gold = _boxed(extract_reference(reference, spec.extract))
        evidence: dict[str, Any] = {
            "extracted_by": found.method,
            "answer": clip_text(found.text),
        }
        try:
            outcome = self.workers.run(
                compare, (gold, answer, spec.float_rounding, spec.timeout_s), spec.timeout_s
            )
        except WorkersBusy as exc:
            return GraderResult(None, evidence, f"math-verify busy: {exc}")
        except DeadlineExceeded as exc:
            return GraderResult(0.0, evidence | {"deadline": str(exc)})
        except WorkerFailed as exc:
            return GraderResult(None, evidence, f"math-verify failed: {exc}")
        evidence |= {k: clip_text(v) for k, v in outcome.items() if k != "equal"}
        return GraderResult(float(outcome["equal"]), evidence)

    def close(self) -> None:
        """Stop the workers."""
        self.workers.close()
