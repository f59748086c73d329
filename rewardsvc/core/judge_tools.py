"""An agentic judge's tools, as its pool entry declares them: which tools it may call, how
each turn's call is chosen and forced, and the bounds of its loop per verdict.

The tools themselves are ``rewardsvc.judgetools``'s registry (a test checks that it holds
exactly :data:`JUDGE_TOOLS`); the loop is ``rewardsvc.judges.toolloop``'s. Pure data: the
pool file is validated here, before anything runs.
"""

from __future__ import annotations

from typing import Literal, Self, get_args

from pydantic import Field, model_validator

from rewardsvc.core.base import StrictModel

ToolName = Literal["run_code", "run_tests", "read_file", "list_files", "grader_evidence"]
JUDGE_TOOLS: tuple[str, ...] = get_args(ToolName)
"""Every judge tool's name (the registry's entries)."""


class JudgeTools(StrictModel):
    """The tools an agentic judge may call before it answers, and its loop's bounds.

    Each bound reached is a failed verdict of its kind (``loop_turns``, ``loop_tool_calls``,
    ``loop_tokens``, ``loop_sandbox``, ``loop_wall``): no score, never 0. All of it is part
    of the verdict cache's identity."""

    allowed: list[ToolName] = Field(
        min_length=1,
        max_length=len(JUDGE_TOOLS),
        description="The tools the judge may call: run_code (a Python snippet in the sandbox "
        "with the item's files), run_tests (the task's hidden tests, as the unit_tests "
        "grader runs them), read_file and list_files (the item's own files, read-only), "
        "grader_evidence (the deterministic graders' results on the item).",
    )
    named: list[ToolName] = Field(
        default_factory=list,
        max_length=8,
        description="Tools called first, one forced call each, in this order.",
    )
    auto_turns: int = Field(
        default=0,
        ge=0,
        le=16,
        description="Turns after the named ones where the judge chooses its tools "
        '(tool_choice "auto": its vLLM server needs --enable-auto-tool-choice and a '
        "--tool-call-parser).",
    )
    forcing: Literal["tool_choice", "schema"] = Field(
        default="tool_choice",
        description="How a named call is forced: tool_choice (the OpenAI form; vLLM 0.32 "
        "serves it only with a --tool-call-parser) or schema (the tool's arguments as the "
        "reply, constrained by its parameter schema through structured outputs: for a "
        "server without tool flags).",
    )
    max_turns: int = Field(default=4, ge=1, le=16, description="Most tool-calling turns.")
    max_tool_calls: int = Field(default=8, ge=1, le=64, description="Most tool calls.")
    max_tokens: int = Field(
        default=24_000,
        ge=256,
        le=1_000_000,
        description="Most tokens (prompt and completion) of all the loop's turns.",
    )
    max_sandbox_s: float = Field(
        default=60.0, gt=0, le=600, description="Most sandbox seconds of the tools' runs."
    )
    max_wall_s: float = Field(
        default=120.0, gt=0, le=1800, description="Most wall time of the loop and verdict."
    )
    turn_tokens: int = Field(
        default=256, ge=16, le=8192, description="Output budget of one tool-calling turn."
    )

    @model_validator(mode="after")
    def _turns(self) -> Self:
        if not set(self.named) <= set(self.allowed):
            raise ValueError("named: every named tool must be allowed")
        if len(set(self.allowed)) != len(self.allowed):
            raise ValueError("allowed: a tool is listed twice")
        turns = len(self.named) + self.auto_turns
        if not 1 <= turns <= self.max_turns:
            raise ValueError(
                f"named and auto_turns give {turns} turns: between 1 and max_turns "
                f"({self.max_turns})"
            )
        return self

    def worst_case(self) -> tuple[int, float]:
        """The most judge calls of one verdict (each turn, then the verdict) and the most
        sandbox seconds: its admission cost."""
        return len(self.named) + self.auto_turns + 1, self.max_sandbox_s
