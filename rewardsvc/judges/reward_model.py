"""Reward models and process reward models on vLLM's pooling runner (``method: reward_model``).

A :class:`RewardModel` is the strategy of a pool judge whose model is a classifier, not a
chat model: it is asked no criterion questions, it scores the whole item. The item goes as
the conversation the reward model was trained on (the task as the user's message, the
policy's reply as the assistant's); the server applies the model's chat template
(``add_generation_prompt`` false: the conversation ends with the reply). The scalar is read
from ``POST /classify`` (``data[0].probs[label]``) or ``POST /pooling`` with ``task:
classify`` (``data[0].data[label]``), as the judge's ``reward_model.endpoint`` says, and
mapped into [0, 1] by its ``transform``: ``sigmoid`` asks for the raw logit
(``use_activation: false``) and applies ``sigmoid((logit - center) / scale)``;
``probability`` takes the server's own activation. The verdict's within-judge variance is 0:
a reward model gives a point score, so what the ensemble rules see of its uncertainty is its
distance from the other judges (the between-judge variance that ``uwo`` and the reported
uncertainty use), and the rubric's calibration (zscore or rank) puts it on their scale.

A **process reward model** (``reward_model.step_separator`` set) scores every step of a
trajectory in ONE call: the steps of the policy as one assistant message, each followed by
the separator, sent to ``POST /pooling`` with ``task: token_classify``; the server's STEP
pooler (``--pooler-config`` ``tok_pooling_type: STEP``, ``step_tag_id`` the separator's
token) returns one row per separator, row k being step k's score. The separator is broken
in untrusted text (the judge's defuser), so a completion cannot add or move a step; a
reply with another number of rows than steps fails every step. vLLM's ``/pooling`` serves
only the task of the server's ``--pooler-config`` (and a server whose task is
``token_classify`` has no ``/classify``), so a process reward model also scores a whole item
through that call: its score of the last step, which sees the whole solution.

vLLM mounts ``/classify`` and ``/pooling`` at the server root, not under ``/v1``: the routes
here say so (``from_root``) and the judge's base URLs keep ending in ``/v1`` like every
judge's (``/v1/models`` answers the readiness probe).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from rewardsvc.core.pool import JudgeConfig, RewardModelSettings, Sampling
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.scoring_methods import method_entry
from rewardsvc.core.trajectory import Trajectory
from rewardsvc.core.verdict import Verdict
from rewardsvc.judges.backends import Backend
from rewardsvc.judges.failures import ReplyFailed
from rewardsvc.judges.imagery import blind
from rewardsvc.judges.limits import least_tokens
from rewardsvc.judges.methods import Call
from rewardsvc.judges.prompts import Prompt
from rewardsvc.judges.routing import Affinity, affinity_key
from rewardsvc.judges.shapes import ApiShape, Reply, usage
from rewardsvc.safety.defuse import WORD_JOINER, Defuser

Messages = list[dict[str, str]]
"""Chat messages as vLLM's pooling requests take them."""

UNASKED = "a reward model scores whole items; it is asked no questions"
"""Why a reward model refuses criterion, holistic and comparison questions."""

# The task's roles that a chat template knows; anything else in a task reads as the user's.
_CHAT_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class PoolingRoute:
    """One pooling endpoint of vLLM, at the server root (``from_root``)."""

    path: str
    from_root: bool = True

    def well_formed(self, response: Any) -> TypeGuard[Reply]:
        """A JSON object whose ``data`` is a non-empty list of objects."""
        if not isinstance(response, dict):
            return False
        data = response.get("data")
        return isinstance(data, list) and bool(data) and all(isinstance(d, dict) for d in data)


CLASSIFY = PoolingRoute("/classify")
POOLING = PoolingRoute("/pooling")


def task_messages(rollout: Rollout, defuser: Defuser) -> Messages:
    """The task as chat messages: the trajectory's own system/user/assistant turns when it
    has them as plain messages, else the rollout's prompt as one user message."""
    trajectory = rollout.trajectory
    if trajectory is not None and trajectory.task and not trajectory.rich:
        turns = [e for e in trajectory.task if e.kind == "message"]
        if turns and all(e.role in _CHAT_ROLES for e in turns):
            return [{"role": e.role, "content": _shown(e.text, defuser)} for e in turns]
    return [{"role": "user", "content": _shown(rollout.prompt, defuser)}]


def _shown(text: str, defuser: Defuser) -> str:
    """Untrusted ``text`` as a reward model reads it: the placeholder where each image
    stood (a reward model reads text only), control tokens broken."""
    return defuser.defuse(blind(text))


def conversation(rollout: Rollout, defuser: Defuser) -> Messages:
    """The item as a reward model reads it: the task, then the policy's reply (defused)."""
    reply = {"role": "assistant", "content": _shown(rollout.completion, defuser)}
    return [*task_messages(rollout, defuser), reply]


def step_texts(rollout: Rollout) -> list[str]:
    """The text of each assistant step of the policy (a plain completion is one step)."""
    trajectory = rollout.trajectory
    if trajectory is None:
        return [rollout.completion]
    texts: list[str] = []
    start = 0
    for k in range(trajectory.step_count):
        end = len(trajectory.upto(k).events)
        texts.append(Trajectory((), trajectory.events[start:end]).plain("events"))
        start = end
    return texts


def _spans(left: str, right: str, separator: str) -> bool:
    """Whether ``separator`` occurs across the junction of ``left`` and ``right``."""
    reach = len(separator) - 1
    return separator in left[len(left) - reach :] + right[:reach]


def step_conversation(rollout: Rollout, separator: str, defuser: Defuser) -> Messages:
    """The task, then the steps as one assistant message, each step followed by
    ``separator``: it occurs there and nowhere else (broken wherever it occurs in the steps'
    own text, and a word joiner where a step's first or last characters would make one
    with the separator beside them, as ``"a\\n"`` does before ``"\\n\\n"``)."""
    if separator not in defuser.extra_tokens:
        defuser = Defuser([*defuser.extra_tokens, separator])
    steps = ""
    for text in step_texts(rollout):
        part = _shown(text, defuser)
        if _spans(steps, part, separator):
            part = WORD_JOINER + part
        if _spans(part, separator, separator):
            part += WORD_JOINER
        steps += part + separator
    return [*task_messages(rollout, defuser), {"role": "assistant", "content": steps}]


@dataclass(frozen=True)
class PoolingRequest:
    """One pooling call in the making: its route, body (the backend adds the model), the
    conversation it carries and how its reply becomes verdicts (raising ``ReplyFailed``)."""

    route: PoolingRoute
    body: dict[str, Any]
    messages: Messages
    read: Callable[[Reply], list[Verdict]]
    affinity: Affinity | None = None

    @property
    def seen(self) -> Messages:
        """The conversation the reward model reads."""
        return self.messages

    async def send(self, backend: Backend, deadline: float | None) -> Reply:
        """Send it through the judge's ``backend`` (retries, breakers, routing)."""
        return await backend.send(self.route, self.body, deadline, affinity=self.affinity)

    def overflow(self, limit: int | None) -> str | None:
        """Why the conversation cannot fit a context of ``limit`` tokens (None: it may)."""
        text = "\n".join(m["content"] for m in self.messages)
        least = least_tokens(text)
        if limit is None or least <= limit:
            return None
        return (
            f"the conversation ({len(text)} characters, at least {least} tokens) does not "
            f"fit the reward model's context of {limit} tokens"
        )


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class RewardModel:
    """The scoring strategy of a ``method: reward_model`` judge (see the module docstring).

    It asks no questions: criteria, holistic prompts and comparisons are refused (the
    planning reads ``scores_whole_item`` and asks ``asks.WholeItem`` or ``asks.AllSteps``).
    """

    name = "reward_model"
    batches_criteria = False
    scores_whole_item = True

    def __init__(self, settings: RewardModelSettings):
        self.settings = settings
        self.route = CLASSIFY if settings.endpoint == "classify" else POOLING

    @property
    def scores_steps(self) -> bool:
        """Whether it is a process reward model: every step of a trajectory in one call."""
        return self.settings.step_separator is not None

    @property
    def separator(self) -> str:
        """The step separator (a process reward model's; empty otherwise)."""
        return self.settings.step_separator or ""

    def output_tokens(self, sampling: Sampling) -> int:
        """Nothing is decoded: the score is read at the prompt's positions."""
        return 0

    async def score(self, call: Call, prompt: Prompt) -> Verdict:
        """Refused: a reward model answers no criterion question."""
        raise NotImplementedError(UNASKED)

    async def compare(self, call: Call, prompt: Prompt) -> Verdict:
        """Refused: a reward model answers no comparison question."""
        raise NotImplementedError(UNASKED)

    def instruction(
        self, choices: tuple[str, ...], what: str, shape: ApiShape, reasoning: int
    ) -> str:
        """Refused: a reward model reads the conversation, no question of ours."""
        raise NotImplementedError(UNASKED)

    def value(self, raw: float) -> float:
        """A raw output mapped into [0, 1] by the transform."""
        if self.settings.transform == "probability":
            return min(1.0, max(0.0, raw))
        z = (raw - self.settings.center) / self.settings.scale
        # Split by sign so that exp never overflows for a large |z|.
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)

    def _activation(self) -> bool:
        return self.settings.transform == "probability"

    def item_request(self, rollout: Rollout, defuser: Defuser) -> PoolingRequest:
        """The call scoring ``rollout`` as a whole: its conversation to ``/classify`` (or
        ``/pooling`` with ``task: classify``); for a process reward model, whose server
        serves only step scores, its steps call, read as the score of the last step."""
        if self.scores_steps:
            steps = self.steps_request(rollout, defuser)
            return replace(steps, read=lambda reply: steps.read(reply)[-1:])
        messages = conversation(rollout, defuser)
        body: dict[str, Any] = {"messages": messages, "use_activation": self._activation()}
        if self.route is POOLING:
            body["task"] = "classify"
        # The items of one task meet one replica, whose prefix cache holds the task.
        group = affinity_key(rollout.prompt)
        affinity = Affinity(item=affinity_key(rollout.prompt, rollout.completion), group=group)
        return PoolingRequest(self.route, body, messages, self.read_item, affinity)

    def steps_request(self, rollout: Rollout, defuser: Defuser) -> PoolingRequest:
        """The call scoring every step of ``rollout``: its steps joined by the separator to
        ``/pooling`` with ``task: token_classify``."""
        messages = step_conversation(rollout, self.separator, defuser)
        body = {
            "messages": messages,
            "task": "token_classify",
            "use_activation": self._activation(),
        }
        steps = rollout.step_count()
        group = affinity_key(rollout.prompt)
        return PoolingRequest(
            POOLING, body, messages, lambda r: self.read_steps(r, steps), Affinity(group, group)
        )

    def read_item(self, reply: Reply) -> list[Verdict]:
        """The item's verdict (one) from a ``/classify`` or ``/pooling`` reply; raises
        :class:`ReplyFailed` when the label's value is not there."""
        prompt_tokens, _ = usage(reply)
        entry = reply["data"][0]
        values = entry.get("probs") if self.route is CLASSIFY else entry.get("data")
        label = self.settings.label
        raw = _number(values[label]) if isinstance(values, list) and label < len(values) else None
        shown = json.dumps(values)[:200]
        if raw is None:
            raise ReplyFailed(
                f"no finite output at label {label}: {shown}", shown, prompt_tokens, 0
            )
        return [
            Verdict(score=self.value(raw), variance=0.0, raw=shown, prompt_tokens=prompt_tokens)
        ]

    def read_steps(self, reply: Reply, steps: int) -> list[Verdict]:
        """One verdict per step from a ``token_classify`` reply with one row per separator;
        raises :class:`ReplyFailed` when the rows do not match the steps."""
        prompt_tokens, _ = usage(reply)
        rows = reply["data"][0].get("data")
        shown = json.dumps(rows)[:200]
        if not isinstance(rows, list) or len(rows) != steps:
            count = len(rows) if isinstance(rows, list) else 0
            raise ReplyFailed(
                f"{count} step scores for {steps} steps (is the server's step_tag_id the "
                f"token of the step separator {self.separator!r}?)",
                shown,
                prompt_tokens,
                0,
            )
        label = self.settings.label
        verdicts = []
        for k, row in enumerate(rows):
            cells = row if isinstance(row, list) else [row]
            raw = _number(cells[label]) if label < len(cells) else None
            if raw is None:
                raise ReplyFailed(f"step {k}: no finite output at label {label}", shown, 0, 0)
            # Every verdict carries the whole call's cost: the engine counts a shared call once.
            verdicts.append(
                Verdict(score=self.value(raw), raw=json.dumps(row), prompt_tokens=prompt_tokens)
            )
        return verdicts


def scorer_for(config: JudgeConfig) -> RewardModel | None:
    """The reward-model strategy of a judge whose method scores whole items (defaults when
    it has no ``reward_model`` settings), or None for an LLM judge."""
    if not method_entry(config.method).whole_item:
        return None
    return RewardModel(config.reward_model or RewardModelSettings())
