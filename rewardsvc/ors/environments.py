"""ORS environment files and their task files, read once when the service starts.

An environment file (YAML) names the environment, what scores it (a library rubric,
recipe or routing table id) and its task file; the task file holds the tasks, as JSON
Lines (one task per line) or YAML (a list of tasks, or ``{tasks: [...]}``). Each task has
a prompt (text or chat messages), an optional reference and per-item criteria, metadata,
and the split it belongs to (``train`` unless named). Problems are refused with the file
and line, and the service does not start.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rewardsvc.library.yamlfile import (
    InvalidFile,
    Problem,
    load_file,
    parse_yaml,
    read_text,
    validate_document,
)
from rewardsvc.protocol.rewards import RewardOptions

ENV_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
TASK_FILE_MAX_BYTES = 64 * 1024 * 1024
TASK_FILE_MAX_VALUES = 2_000_000
TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class EnvironmentFile(BaseModel):
    """An ORS environment: its name, its scorer, its tasks."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(
        pattern=ENV_NAME.pattern,
        description="The environment's name: the first path segment of its ORS routes.",
    )
    target: str = Field(description="The library rubric, recipe or routing table id.")
    tasks: Path = Field(description="The task file (.jsonl, .yaml), relative to this file.")
    description: str = ""
    tool: str = Field(
        default="answer",
        pattern=TOOL_NAME.pattern,
        description="The name of the tool the policy answers with.",
    )
    run: str | None = Field(default=None, description="The run its rewards are recorded in.")
    options: RewardOptions | None = Field(default=None, description="As in /v1/rewards.")


class Message(BaseModel):
    """One chat turn of a task's prompt."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant"]
    content: str


class TaskIn(BaseModel):
    """One task of a task file."""

    model_config = ConfigDict(extra="forbid")
    id: str | None = Field(default=None, description="Default: <split>-<index>.")
    prompt: str | list[Message] = Field(min_length=1)
    reference: str | None = None
    criteria: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    split: str = Field(default="train", min_length=1, max_length=64)


@dataclass(frozen=True)
class OrsTask:
    """One task as served: its split, index within the split and id."""

    id: str
    split: str
    index: int
    task: TaskIn

    @property
    def spec(self) -> dict[str, Any]:
        """The task spec clients see: what identifies the task, never its reference or
        criteria (what the policy must not read)."""
        spec: dict[str, Any] = {"id": self.id, "split": self.split, "index": self.index}
        if self.task.metadata:
            spec["metadata"] = self.task.metadata
        return spec

    def item(self, answer: str) -> dict[str, Any]:
        """The item of ``/v1/rewards`` that scores ``answer`` to this task."""
        item: dict[str, Any] = {"id": self.id, "prompt": self.prompt_value(), "completion": answer}
        if self.task.reference is not None:
            item["reference"] = self.task.reference
        if self.task.criteria is not None:
            item["criteria"] = self.task.criteria
        if self.task.metadata:
            item["metadata"] = self.task.metadata
        return item

    def prompt_value(self) -> str | list[dict[str, str]]:
        """The prompt as an item carries it: text, or chat messages."""
        prompt = self.task.prompt
        return prompt if isinstance(prompt, str) else [m.model_dump() for m in prompt]

    def messages(self) -> list[Message]:
        """The prompt as chat messages (text: one user message)."""
        prompt = self.task.prompt
        return [Message(role="user", content=prompt)] if isinstance(prompt, str) else prompt


@dataclass(frozen=True)
class OrsEnvironment:
    """An environment: its file's settings and its tasks by split, in file order."""

    config: EnvironmentFile
    splits: dict[str, list[OrsTask]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The environment's name."""
        return self.config.name

    def find(self, spec: dict[str, Any]) -> OrsTask | None:
        """The served task ``spec`` describes (as ``spec`` gave it out), else None."""
        tasks = self.splits.get(str(spec.get("split")), [])
        index = spec.get("index")
        if isinstance(index, int) and 0 <= index < len(tasks) and tasks[index].spec == spec:
            return tasks[index]
        return None


def load_environment(path: Path) -> OrsEnvironment:
    """The environment of file ``path`` with its tasks (raises InvalidFile)."""
    config = load_file(path, EnvironmentFile)
    tasks_path = config.tasks if config.tasks.is_absolute() else path.parent / config.tasks
    raw = _read_tasks(tasks_path)
    splits: dict[str, list[OrsTask]] = {}
    seen: dict[str, int] = {}
    for line, task in raw:
        tasks = splits.setdefault(task.split, [])
        task_id = task.id or f"{task.split}-{len(tasks)}"
        if task_id in seen:
            raise InvalidFile(
                [Problem(str(tasks_path), line, "id", f"task id {task_id!r} is used twice")]
            )
        seen[task_id] = line
        tasks.append(OrsTask(task_id, task.split, len(tasks), task))
    if not splits:
        raise InvalidFile([Problem(str(tasks_path), 1, "", "the task file holds no task")])
    return OrsEnvironment(config, splits)


def _read_tasks(path: Path) -> list[tuple[int, TaskIn]]:
    """The tasks of a task file with their line numbers."""
    text = read_text(path, TASK_FILE_MAX_BYTES)
    if path.suffix == ".jsonl":
        return _read_jsonl(text, str(path))
    doc = parse_yaml(text, str(path), TASK_FILE_MAX_VALUES)
    listed = doc.get("tasks") if isinstance(doc, dict) else doc
    if not isinstance(listed, list):
        raise InvalidFile([Problem(str(path), 1, "", "expected a list of tasks or {tasks: [...]}")])
    lc = getattr(listed, "lc", None)
    tasks: list[tuple[int, TaskIn]] = []
    problems: list[Problem] = []
    for i, entry in enumerate(listed):
        # Each entry on its own: a problem's line is that of its own key.
        try:
            tasks.append((_yaml_line(lc, i), validate_document(entry, TaskIn, str(path))))
        except InvalidFile as exc:
            problems.extend(exc.problems)
    if problems:
        raise InvalidFile(problems)
    return tasks


def _yaml_line(lc: Any, index: int) -> int:
    """The 1-based line of entry ``index`` of a parsed YAML list (1 when unknown)."""
    try:
        return int(lc.item(index)[0]) + 1
    except (AttributeError, KeyError, TypeError, IndexError):
        return 1


def _read_jsonl(text: str, name: str) -> list[tuple[int, TaskIn]]:
    """The tasks of a JSON Lines text (blank lines skipped)."""
    tasks: list[tuple[int, TaskIn]] = []
    problems: list[Problem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            tasks.append((number, TaskIn.model_validate(json.loads(line))))
        except json.JSONDecodeError as exc:
            problems.append(Problem(name, number, "", f"not JSON: {exc.msg}"))
        except ValidationError as exc:
            for error in exc.errors():
                path = ".".join(str(p) for p in error["loc"])
                problems.append(Problem(name, number, path, error["msg"]))
    if problems:
        raise InvalidFile(problems)
    return tasks


def load_environments(paths: list[Path]) -> dict[str, OrsEnvironment]:
    """The environments of ``paths`` by name, in order (raises InvalidFile, also for a
    name used twice)."""
    found: dict[str, OrsEnvironment] = {}
    for path in paths:
        env = load_environment(path)
        if env.name in found:
            raise InvalidFile([Problem(str(path), 1, "name", f"{env.name!r} is used twice")])
        found[env.name] = env
    return found
