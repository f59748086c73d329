"""Wire models of the Open Reward Standard (ORS) routes (``rewardsvc.server.ors``).

ORS is an HTTP + SSE protocol for RL environments: an environment lists splits and tasks
and describes its tools; a session is opened on one task, the policy calls tools, and each
tool output carries ``reward`` and ``finished``. These models are the shapes the
``openreward`` client (0.1.167) sends and reads, written from its client code; field names
follow it, so some are camelCase or terse where ORS chose so.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SplitType = Literal["train", "validation", "test"]
ToolErrorReason = Literal["not_found", "name_collision", "input_validation", "episode_finished"]


class SplitOut(BaseModel):
    """One split of an environment's tasks."""

    name: str
    type: SplitType = Field(
        description="train, validation or test: the split's own name when it is one of them, "
        "else validation."
    )


class SplitRequest(BaseModel):
    """Body of ``POST …/tasks`` and ``POST …/num_tasks``."""

    model_config = ConfigDict(extra="forbid")
    split: str


class TaskRequest(BaseModel):
    """Body of ``POST …/task``: one task by split and index."""

    model_config = ConfigDict(extra="forbid")
    split: str
    index: int


class TaskRangeRequest(BaseModel):
    """Body of ``POST …/task_range``: the tasks of ``range(start, stop)`` (Python slice
    semantics, negative and missing bounds included)."""

    model_config = ConfigDict(extra="forbid")
    split: str
    start: int | None = None
    stop: int | None = None


class TaskOut(BaseModel):
    """``POST …/task``: one task spec and the environment it belongs to."""

    task: dict[str, Any]
    env_name: str


class TasksOut(BaseModel):
    """``POST …/tasks`` and ``POST …/task_range``: task specs in index order."""

    tasks: list[dict[str, Any]]
    env_name: str


class NumTasksOut(BaseModel):
    """``POST …/num_tasks``."""

    num_tasks: int


class CreateRequest(BaseModel):
    """Body of ``POST /create``: the task a session plays, by split and index or as a task
    spec (which must be one the environment serves: no request brings its own task)."""

    model_config = ConfigDict(extra="forbid")
    env_name: str | None = Field(default=None, description="The environment; default: the first.")
    task_spec: dict[str, Any] | None = None
    split: str | None = None
    index: int | None = None
    toolset_name: str | None = Field(
        default=None, description="ORS built-in toolsets are not served: must be null."
    )


class SessionOut(BaseModel):
    """``POST /create``, ``/delete`` and ``/delete_session``: the session id."""

    sid: str


class StatusOut(BaseModel):
    """``POST /ping``: the session is alive."""

    status: Literal["ok"] = "ok"


class VersionOut(BaseModel):
    """``GET /version``."""

    version: str
    build_sha: str | None = None


class TextBlock(BaseModel):
    """A text content block (of a prompt, a message or a tool output)."""

    text: str
    detail: dict[str, Any] | None = None
    type: Literal["text"] = "text"


class MessageOut(BaseModel):
    """One role-tagged turn of a task's prompt (``GET …/messages``)."""

    role: Literal["system", "user", "assistant"]
    blocks: list[TextBlock]
    detail: dict[str, Any] | None = None


class ToolSpec(BaseModel):
    """A tool the policy may call: its name, description and JSON Schema input."""

    name: str
    description: str
    input_schema: dict[str, Any] | None


class ToolsOut(BaseModel):
    """``GET …/tools`` and ``GET …/task_tools``."""

    tools: list[ToolSpec]
    terminal_tool: None = Field(
        default=None, description="No terminal tool: the answer is an ordinary tool call."
    )
    supports_score_group: bool = Field(
        default=False, description="Group scoring (…/score_group) is not served."
    )
    message_block_types: list[str] = Field(default_factory=lambda: ["text"])


class ToolCallRequest(BaseModel):
    """Body of ``POST …/call``: one tool call; ``task_id`` resumes a call whose stream was
    cut (the server replays its result instead of running it again)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    input: dict[str, Any]
    task_id: str | None = None


class ToolOutput(BaseModel):
    """What a tool returned: text for the policy, rewardsvc's result as ``metadata``, the
    reward and whether the episode is over."""

    blocks: list[TextBlock]
    metadata: dict[str, Any] | None = Field(
        default=None,
        description="The item's reward result as /v1/rewards returns it (status, judges, "
        "flags, uncertainty, version), with the target's reference under 'rubric'.",
    )
    reward: float | None = None
    finished: bool = False


class ToolSuccess(BaseModel):
    """A tool call that ran: the ``end`` event of the call's stream."""

    ok: Literal[True] = True
    output: ToolOutput


class ToolError(BaseModel):
    """A tool call that was refused without a reward: a malformed call (the policy may
    reformulate) or a call after the episode finished. A judge failure is not this: it is
    the stream's ``error`` event."""

    ok: Literal[False] = False
    error: str
    reason: ToolErrorReason
