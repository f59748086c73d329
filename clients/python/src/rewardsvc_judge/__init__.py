"""rewardsvc as a verifiers (0.4, v1 API) judge plugin.

Plug it into a task config by its id, the name of this module::

    [[env.taskset.task.judges]]
    id = "rewardsvc_judge"
    url = "http://HOST:8000"          # or REWARDSVC_URL
    rubric = "short-answer-correctness"
    answer_field = "answer"           # the task field sent as the reference ("" for none)
    view = "last_reply"               # or "full_trace": the whole transcript is judged
    run = "my-run"                    # or REWARDSVC_RUN
    criteria_field = "criteria"       # the task field holding its own rubric ("" for none)
    criteria_format = "healthbench"   # that field's format; criteria_mode = "extend" to add

verifiers imports ``verifiers.v1.judges.<id>``, else the top-level module ``<id>``, and takes
the one Judge subclass it exports in ``__all__``; the config class is found from the judge's
generic parameters, and refuses unknown fields. ``score(task, trace)`` returns the reward as
a float under the judge's reward name (``name``, else the id). A sample whose reward cannot be
produced (judges still failing after ``judge_error_wait`` seconds of re-sending, a rejected
item, the service unreachable) raises, so verifiers errors the rollout instead of scoring
it 0; the verdict's status, uncertainty and flags go to ``trace.info["rewardsvc"]``.
"""

from __future__ import annotations

import os
from typing import Any

from verifiers.v1 import Judge, JudgeConfig, JudgeView, TaskData, Trace

from rewardsvc_client._adapt import ENV_URL, LoopClients, Settings, verdict, wire_item
from rewardsvc_client._retrying import drive, resending
from rewardsvc_client.errors import RewardServiceError, no_reward

PLUGIN_ID = "rewardsvc_judge"


RewardsvcJudgeError = RewardServiceError
"""The former name of what the judge raises (kept for users' code): every exception of
``rewardsvc_client.errors``."""


class RewardsvcJudgeConfig(JudgeConfig):
    """Where rewardsvc is and what it scores; unknown fields are refused."""

    id: str = PLUGIN_ID
    url: str = ""
    """The service, e.g. http://127.0.0.1:8000; empty: $REWARDSVC_URL."""
    rubric: str = ""
    """A rubric id of the service's library; empty: $REWARDSVC_RUBRIC."""
    answer_field: str = "answer"
    """The task field sent as the reference; empty or a missing field sends none."""
    question_field: str = ""
    """The task field sent as the prompt; empty: the task's prompt (messages kept)."""
    view: JudgeView = "last_reply"
    """What the judge sees of the rollout: the last reply, or the full transcript."""
    run: str = ""
    """The training run's name; empty: $REWARDSVC_RUN."""
    api_key_env: str = "REWARDSVC_API_KEY"
    """The environment variable holding the service's API key, if any."""
    judge_error_wait: float = 120.0
    """Seconds a judge_error rollout is re-sent before the judge raises."""
    criteria_field: str = "criteria"
    """The task field holding the task's own rubric (sent as the item's criteria); empty
    or a missing field sends none."""
    criteria_format: str = ""
    """The format of that field (``healthbench``, ``rar``...); empty: the service's default."""
    criteria_mode: str = ""
    """``replace`` or ``extend`` the rubric's criteria; empty: the service's default."""
    request_timeout: float = 300.0


class RewardsvcJudge(Judge[float, RewardsvcJudgeConfig]):
    """Scores a verifiers v1 rollout with a rewardsvc rubric."""

    def settings(self) -> Settings:
        """The client settings of this judge's config (environment for what it leaves out)."""
        config = self.config
        return Settings.resolve(
            config.url or os.environ.get(ENV_URL),
            config.rubric or None,
            api_key=os.environ.get(config.api_key_env) or None,
            timeout=config.request_timeout,
            run=config.run or None,
            criteria_format=config.criteria_format or None,
            criteria_mode=config.criteria_mode or None,
        )

    def item(self, task: TaskData, trace: Trace) -> dict[str, Any]:
        """The rewardsvc item of one rollout."""
        config = self.config
        if config.question_field:
            prompt: Any = str(getattr(task, config.question_field, "") or "")
        elif isinstance(task.prompt, list):
            prompt = [{"role": m.role, "content": task_text(m.content)} for m in task.prompt]
        else:
            prompt = task.prompt_text
        completion = trace.transcript if config.view == "full_trace" else trace.last_reply
        label = getattr(task, config.answer_field, None) if config.answer_field else None
        field = config.criteria_field
        criteria = getattr(task, field, None) if field else None
        metadata = {"trainer": "verifiers", "trace": trace.id}
        return wire_item(0, prompt, completion, metadata, label, criteria)

    async def score(self, task: TaskData, trace: Trace) -> float:
        """The rollout's reward; raises ``RewardsvcNoReward`` when the service gave it none,
        and the client's ``TransportError``, ``RefusedError`` or ``DeadlineExceededError``
        when the request failed (all ``RewardServiceError``)."""
        settings = self.settings()
        steps = resending(
            settings, [self.item(task, trace)], 2, judge_error_wait=self.config.judge_error_wait
        )
        (result,) = await drive(LoopClients.shared(settings).get(), steps)
        trace.info["rewardsvc"] = verdict(result)
        if result.reward is None:
            raise no_reward(result)
        return result.reward


def task_text(content: Any) -> Any:
    """Message content as the service takes it: a string, or its text parts."""
    if content is None or isinstance(content, str):
        return content or ""
    parts = [
        getattr(p, "text", None) or (p.get("text") if isinstance(p, dict) else None)
        for p in content
    ]
    return "\n".join(p for p in parts if p)


__all__ = ["RewardsvcJudge"]
