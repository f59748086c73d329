"""Criteria batching (method ``batched``): one judge call answers all criteria of one item.

The prompt shows the K questions numbered before the item (shared part, questions, item,
one answer instruction): the questions are the same for every item of the rubric, so they
join the prefix that vLLM's prefix cache keeps, and only the item and the instruction are
computed per call. With per-prompt criteria the questions are the same for every completion
of the prompt, so a GRPO group's calls share everything up to the completion's fence (see
``rewardsvc.judges.prompts``). The reply is one line of K answers separated by single
spaces, answer k holding only criterion k's answer (``yes``, ``no`` or a digit), held to
exactly that by a vLLM structured-outputs regex, so each answer is one constrained
position. A yes/no answer after a space is one token (`` no``), so a reply of K yes/no
answers is K decoded tokens; on a CPU judge every decoded token is an engine step
(measured: a ``k:`` label per answer took 1.3-3x as long for the same answers). Each
criterion's probabilities are read from the top logprobs at its answer position with the
logprob method's own :func:`~rewardsvc.judges.methods.distribution`, so a batched verdict
means what a per-criterion one means (pitfalls, gates and weights apply unchanged).

A position that cannot be read fails that criterion only (``unparseable``); a failed call
fails them all with the call's error kind. A reasoning judge (``rewardsvc.judges.reasoning``)
thinks first: the answer line is read from the positions after its reasoning, and every
criterion's verdict carries the one reasoning.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Criterion, Rubric, View
from rewardsvc.core.trajectory import DEFAULT_FIT_CHARS
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges import prompts
from rewardsvc.judges.answers import Unparseable, distribution, top_logprobs
from rewardsvc.judges.fencing import indent_outside_fences
from rewardsvc.judges.items import item_view
from rewardsvc.judges.methods import Call, distributed
from rewardsvc.judges.prompts import Prompt
from rewardsvc.judges.questions import Question, TokenAnswer, criterion_question
from rewardsvc.judges.shapes import ApiShape, Position, choices, usage
from rewardsvc.safety.defuse import DEFAULT_DEFUSER, Defuser

# Between two answers of the reply. No answer of any scale holds it.
SEPARATOR = " "


@dataclass(frozen=True)
class Batch:
    """One batched judge call: the rendered prompt and the criteria it asks, in order."""

    prompt: Prompt
    ids: tuple[str, ...]
    questions: tuple[Question, ...]

    @property
    def seen(self) -> prompts.Seen:
        """What the judge reads of the call."""
        return self.prompt.seen

    def reply_pattern(self) -> str:
        """The structured-outputs regex: answer k is one of criterion k's answers."""
        return SEPARATOR.join(
            f"({'|'.join(re.escape(c) for c in q.choices)})" for q in self.questions
        )

    def reply_tokens(self) -> int:
        """Output budget: the longest allowed reply in characters (a token spells at least
        one), plus the end-of-sequence token."""
        return len(SEPARATOR.join(max(q.choices, key=len) for q in self.questions)) + 1

    def alternatives(self, most: int) -> int:
        """Top logprobs to ask for: what the widest scale's answer prefixes need."""
        return max(top_logprobs(q, most) for q in self.questions)


def _ask(rubric: Rubric, criterion: Criterion, shape: ApiShape, defuser: Defuser) -> Question:
    """Criterion ``criterion``'s question without its one-answer instruction (its last line:
    the batch has one instruction for all)."""
    single = criterion_question(rubric, criterion, TokenAnswer(), shape, defuser=defuser)
    return replace(single, text=single.text.rsplit("\n", 1)[0])


def _numbered(k: int, rubric: Rubric, criterion: Criterion, question: Question) -> str:
    """Question ``k`` of the list, its later lines indented under its number; an item's own
    criterion keeps its fenced block at the start of its lines."""
    if rubric.from_item(criterion):
        return f"{k}. " + indent_outside_fences(question.text, "   ")
    return f"{k}. " + question.text.replace("\n", "\n   ")


def batch_prompt(
    rubric: Rubric,
    criteria: Sequence[Criterion],
    rollout: Rollout,
    shape: ApiShape,
    defuser: Defuser = DEFAULT_DEFUSER,
    fit_chars: int = DEFAULT_FIT_CHARS,
    sees: bool = False,
) -> Batch:
    """The batched call for ``criteria`` of one item (all in one view: the first's); its
    images shown as image parts when the judge ``sees`` them."""
    if not criteria:
        raise ValueError("a batch needs at least one criterion")
    questions = tuple(_ask(rubric, c, shape, defuser) for c in criteria)
    scales = sorted(
        {"yes or no" if q.choices == ("yes", "no") else "/".join(q.choices) for q in questions}
    )
    count = len(questions)
    pairs = zip(criteria, questions, strict=True)
    asked = [_numbered(k, rubric, c, q) for k, (c, q) in enumerate(pairs, 1)]
    # The format is told before the item, where the prefix cache keeps it; after the item
    # comes only a short reminder, the one part of the instruction computed per call.
    lead = (
        f"Answer the {count} numbered questions below about the response shown after them. "
        f"The reply is one line: the {count} answers in order, separated by single spaces, "
        f"each only the answer ({'; '.join(scales)}).\n" + "\n".join(asked)
    )
    tail = (
        f"Answers to the {count} numbered questions above, in order, on one line:\n"
        if shape.continues_text  # a base model continues the text: the reply comes next
        else f"Answer the {count} numbered questions above about this response, in order, "
        "on one line."
    )
    # Only the text of this question is rendered; the batch's own questions hold the scales.
    block = Question(tail, (), ())
    view = item_view(rubric, criteria[0])
    prompt = prompts.render(
        rubric,
        rollout,
        block,
        shape,
        defuser=defuser,
        view=view,
        fit_chars=fit_chars,
        lead=lead,
        sees=sees,
    )
    return Batch(prompt, tuple(c.id for c in criteria), questions)


def read_positions(
    questions: Sequence[Question], positions: Sequence[Position]
) -> list[tuple[dict[str, float], float, float] | Unparseable]:
    """Each question's ``(probs, mean, variance)`` from the decoded positions, or the
    :class:`Unparseable` that says why its answer could not be read.

    The reply is rebuilt from the decoded tokens; answer k is criterion k's, and the token
    covering its first character is the answer position. A token that spans the separator
    too (`` no``) is read with that lead stripped from every alternative.
    """
    starts: list[int] = []
    text = ""
    for token, _ in positions:
        starts.append(len(text))
        text += token
    out: list[tuple[dict[str, float], float, float] | Unparseable] = []
    offset = 0
    answers = text.split(SEPARATOR)
    for k, question in enumerate(questions, start=1):
        answer = answers[k - 1] if k - 1 < len(answers) else ""
        at = offset
        offset += len(answer) + len(SEPARATOR)
        if not answer:
            out.append(Unparseable(f"no answer {k} in the reply"))
            continue
        index = max(i for i, s in enumerate(starts) if s <= at)
        lead = text[starts[index] : at]
        _, top = positions[index]
        shown = [(t[len(lead) :], lp) for t, lp in top if t.startswith(lead)]
        try:
            out.append(distribution(question, shown))
        except Unparseable as exc:
            out.append(exc)
    return out


def by_view(rubric: Rubric, criteria: Sequence[Criterion]) -> list[list[Criterion]]:
    """Criteria grouped by the item view their call shows (one prompt shows one view), in
    rubric order: one batched call per group."""
    groups: dict[View | None, list[Criterion]] = {}
    for c in criteria:
        groups.setdefault(item_view(rubric, c), []).append(c)
    return list(groups.values())


class SharedCall:
    """One batched call whose verdicts several waiters read, one criterion each: started by
    the first of them (criteria served by a cache never start it)."""

    def __init__(self, run: Callable[[], Awaitable[dict[str, Verdict]]]):
        self._run = run
        self._task: asyncio.Future[dict[str, Verdict]] | None = None

    async def verdict(self, criterion: str) -> Verdict:
        """Criterion ``criterion``'s verdict, starting the call if it is not under way."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())
        # Shielded: one criterion's waiter going away must not cancel the others' call.
        verdicts = await asyncio.shield(self._task)
        return verdicts.get(criterion) or Verdict.failed(f"the batched call left out {criterion!r}")


async def score_batch(call: Call, batch: Batch) -> dict[str, Verdict]:
    """Send the batched call; each criterion's verdict by id (``BackendError`` passes)."""
    # One dict: the reader's fields (``logprobs`` for a reasoning judge) and the shape's
    # logprob fields may name the same key.
    fields = {
        **call.reader.request(batch.reply_tokens()),
        "temperature": call.sampling.temperature,
        **call.shape.logprob_fields(batch.alternatives(call.sampling.top_logprobs)),
        "structured_outputs": {"regex": batch.reply_pattern()},
    }
    response = await call.send(batch.prompt, **fields)
    choice = choices(response)[0]
    prompt_tokens, completion_tokens = usage(response)
    raw = call.shape.text(choice)
    answers = raw.split(SEPARATOR)
    # A reasoning judge's answers are the positions after its reasoning (raises when the
    # reasoning did not end within the budget: the call fails for every criterion).
    positions, thought = call.reader.positions(call.shape, choice, response)
    read = read_positions(batch.questions, positions)
    verdicts: dict[str, Verdict] = {}
    for k, (cid, result) in enumerate(zip(batch.ids, read, strict=True)):
        answer = answers[k] if k < len(answers) else ""
        # Every verdict carries the whole call's cost: the engine counts a batch once.
        if isinstance(result, Unparseable):
            verdicts[cid] = Verdict(
                score=None,
                error=f"unparseable: {result} (batched reply {json.dumps(raw)})",
                error_kind="unparseable",
                raw=answer,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
            continue
        verdicts[cid] = distributed(result, answer, prompt_tokens, completion_tokens, thought)
    return verdicts


def call_outcome(verdicts: Iterable[Verdict]) -> Verdict:
    """One verdict standing for the whole batched call, for the observer's call metrics:
    the first failure if a position failed, else a success (score: the mean)."""
    every = list(verdicts)
    for v in every:
        if not v.ok:
            return v
    scores = [v.score for v in every if v.score is not None]
    first = every[0]
    return replace(first, score=sum(scores) / len(scores), probs=None, raw="")
