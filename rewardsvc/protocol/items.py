"""Wire models of the rollouts requests carry: an :class:`Item`, its prompt and completion
as a string or as chat messages (:class:`Message`, with tool calls) and Responses-API
items (:class:`ResponseItem`), together :data:`Text`, and the criteria an item brings of
its own (:data:`ItemCriteria`). ``POST /v1/rewards`` reads items; the group, preference,
trainer and agent routes read the same texts and criteria.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)

from rewardsvc.core.code_spec import MAX_WORKSPACE_BYTES, MAX_WORKSPACE_FILES, files_problem


class FunctionCall(BaseModel):
    """The function a chat tool call names, with its arguments as the policy wrote them."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(description="The tool's name.")
    arguments: str | dict[str, Any] = Field(
        default="", description="A JSON string (as OpenAI sends it) or an object."
    )


class ToolCall(BaseModel):
    """One tool call of an assistant chat message (OpenAI ``tool_calls``)."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(default=None, description="Ties the call to its tool message.")
    type: str = Field(default="function")
    function: FunctionCall


ItemCriteria = Annotated[
    list[Any] | None,
    Field(
        description="This item's own criteria (a dataset's rubric column): criterion objects as a "
        "rubric file writes them (id optional: c1, c2, ...), or in options.criteria_format. With "
        "the batch rubric as template they make the item's rubric (options.criteria_mode), "
        "validated on its own: a bad one, or one over max_rubric_bytes as JSON, rejects this item "
        "only. Untrusted, fenced for the judges; a scoped key needs 'inline:*' to send them."
    ),
]
"""The criteria an item (a group, a pair) brings of its own."""


class Message(BaseModel):
    """One chat message: role, text or content parts, tool calls and the call a tool
    message answers. Text parts are read; image parts (``image_url`` with a ``data:`` URL,
    or a URL of the judge pool's ``media_domains``; Responses ``input_image``) are checked,
    bounded and kept as images, never fetched (an image refused rejects its item, naming
    the part); other parts (audio, files) become a placeholder and the ``non_text_part``
    flag; other keys are ignored."""

    model_config = ConfigDict(extra="ignore")

    role: str = Field(min_length=1, description="system, user, assistant, tool, ...")
    content: str | list[dict[str, Any]] | None = Field(
        default=None,
        description="Text, or OpenAI content parts: text parts are read, image parts "
        '({"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}) kept '
        "as images (see 'Images in items').",
    )
    tool_calls: list[ToolCall] | None = Field(
        default=None, description="An assistant message's tool calls."
    )
    tool_call_id: str | None = Field(
        default=None, description="A tool message: the id of the call it answers."
    )
    reasoning_content: str | None = Field(
        default=None, description="Reasoning text, as vLLM's reasoning parsers return it."
    )


class ResponseItem(BaseModel):
    """One OpenAI Responses-API item: ``function_call`` (call_id, name, arguments),
    ``function_call_output`` (call_id, output), ``custom_tool_call`` (call_id, name, input)
    and its ``custom_tool_call_output``, ``mcp_call`` (name, arguments, output),
    ``reasoning`` (summary); an item of another type is kept as a placeholder with the
    ``non_text_part`` flag. (A ``message`` item is read as a :class:`Message`.)"""

    model_config = ConfigDict(extra="ignore")

    type: str = Field(min_length=1)
    call_id: str | None = None
    name: str | None = None
    arguments: str | dict[str, Any] | None = None
    output: str | list[dict[str, Any]] | None = None
    summary: list[dict[str, Any]] | None = None
    content: str | list[dict[str, Any]] | None = None
    input: str | None = None
    id: str | None = Field(default=None, description="The item's id (ties an mcp_call's output).")

    @model_validator(mode="after")
    def _required(self) -> ResponseItem:
        if self.type in ("function_call", "custom_tool_call", "mcp_call") and self.name is None:
            raise ValueError(f"name: a {self.type} item needs the tool's name")
        if self.type in ("function_call_output", "custom_tool_call_output") and (
            self.output is None
        ):
            raise ValueError(f"output: a {self.type} item needs its output")
        return self


def _entry_kind(value: Any) -> str:
    """A chat message (it has a role) or a Responses-API item of another type."""
    if isinstance(value, dict):
        kind = value.get("type")
        return "message" if kind in (None, "message") and "role" in value else "item"
    return "item" if isinstance(value, ResponseItem) else "message"


Entry = Annotated[
    Annotated[Message, Tag("message")] | Annotated[ResponseItem, Tag("item")],
    Discriminator(_entry_kind),
]

Text = str | list[Entry]

REFERENCE = (
    "a string, or chat messages whose image parts are read as the prompt's are (a judge "
    "sees them where the reference is shown); a grader that compares text reads the "
    "reference's text without its images, and gives no score when it holds only images."
)
"""What a reference may be, for the wire fields' descriptions."""


def _bounded_files(files: dict[str, str]) -> dict[str, str]:
    problem = files_problem(files, MAX_WORKSPACE_FILES, MAX_WORKSPACE_BYTES)
    if problem is not None:
        raise ValueError(problem)
    return files


Workspace = Annotated[dict[str, str], AfterValidator(_bounded_files)]
"""An agent's workspace: relative path -> UTF-8 text, bounded and checked."""
WORKSPACE = (
    f"relative POSIX path -> UTF-8 text, at most {MAX_WORKSPACE_FILES} files and "
    f"{MAX_WORKSPACE_BYTES} bytes of paths and text in all; each path relative, without "
    "'..', NUL or a leading '/', at most 255 characters"
)
"""What a :data:`Workspace` is, for the wire fields' descriptions."""


class Item(BaseModel):
    """One rollout to score."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(
        default=None, max_length=256, description="Echoed in the result; defaults to the index."
    )
    prompt: Text = Field(description="What the policy was asked: a string or chat messages.")
    completion: Text = Field(
        description="What the policy answered (untrusted): a string or chat messages."
    )
    reference: Text | None = Field(
        default=None, description=f"Reference answer or label: {REFERENCE}"
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Free-form; echoed nowhere, logged with the reward."
    )
    criteria: ItemCriteria = None
    files: Workspace | None = Field(
        default=None,
        description=f"The agent's workspace (untrusted): {WORKSPACE}. A code grader "
        "(unit_tests) runs these files instead of the completion's program, with the task's "
        "test files and runner configuration restored over them. Never shown to a judge.",
    )
