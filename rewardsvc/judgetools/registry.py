"""The judge tools, one registry: :data:`TOOLS` by name, each bound to one item by :func:`bind`.

A tool is a :class:`ToolSpec`: its name, description and JSON-schema parameters (its
OpenAI function schema), the most characters of its output the judge is shown, and
``call`` (the item's :class:`ToolContext`, the arguments, the sandbox seconds left) giving
a :class:`~rewardsvc.judges.toolloop.ToolOutput`. A failure (a bad argument, a file the
item does not hold, a sandbox that could not run) is an error output the judge reads,
never raised.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardsvc.core.code_spec import UnitTestsSpec
from rewardsvc.core.rollout import Rollout
from rewardsvc.graders.code import PROGRAM_FAULTS, PYTHON, Sandbox, program_of
from rewardsvc.graders.result import GraderResult
from rewardsvc.graders.unit_tests import code_of, unit_tests
from rewardsvc.judges.toolresults import Tool, ToolOutput
from rewardsvc.sandbox.run import Limits, RunRequest, RunResult

SNIPPET = "_judge_snippet.py"
"""The file a ``run_code`` snippet is written to, beside the item's files."""
SNIPPET_CHARS = 8_000
"""Longest snippet ``run_code`` runs."""
RUN_WALL_S = 10.0
"""Most wall seconds of one ``run_code`` run (less when the loop has less left)."""
RUN_OUTPUT_BYTES = 64 * 1024
"""Most stdout and stderr of one ``run_code`` run kept, each."""
LISTED_FILES = 256
"""Most paths ``list_files`` lists."""


@dataclass(frozen=True)
class ToolContext:
    """What the tools of one item may see: the ``rollout`` (its files, or its program),
    the task's tests (``tests``, the ``unit_tests`` spec, when it has some), the
    deterministic graders' results on it (``evidence``, by grader name) and the
    ``sandbox`` its runs go to. Nothing of other items, judges or rewards.

    ``tested`` is the result of the ``unit_tests`` grader that ran ``tests`` on this
    rollout (None when none did): ``run_tests`` shows it rather than run the same tests on
    the same files again."""

    rollout: Rollout
    sandbox: Sandbox = field(default_factory=lambda: Sandbox(None))
    tests: UnitTestsSpec | None = None
    evidence: Mapping[str, GraderResult] = field(default_factory=dict)
    tested: GraderResult | None = None

    def files(self) -> dict[str, str]:
        """The item's files: its workspace, else its program (as the tests import it)."""
        if self.tests is not None:
            return code_of(self.rollout, self.tests) or {}
        if self.rollout.files:
            return dict(self.rollout.files)
        program = program_of(self.rollout.completion)
        return {} if program is None else {"solution.py": program}


class ToolSpec(Protocol):
    """One registry entry: a tool's name, description, JSON-schema parameters and the most
    characters of its output shown."""

    @property
    def name(self) -> str:
        """The name the judge calls it by."""
        ...

    @property
    def description(self) -> str:
        """What it does, as the judge reads it."""
        ...

    @property
    def parameters(self) -> dict[str, Any]:
        """Its arguments' JSON schema."""
        ...

    @property
    def output_chars(self) -> int:
        """The most characters of one output the judge is shown."""
        ...

    async def call(
        self, ctx: ToolContext, arguments: Mapping[str, Any], sandbox_s: float
    ) -> ToolOutput:
        """The output of one call on ``ctx``'s item."""
        ...


def _arguments(
    optional: Mapping[str, dict[str, Any]] | None = None, **required: dict[str, Any]
) -> dict[str, Any]:
    """A tool's parameter schema: an object of the ``required`` and ``optional`` properties
    and no other (a small judge forced by the schema cannot add any)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


def _error(text: str) -> ToolOutput:
    return ToolOutput(text, error=True)


def _string(arguments: Mapping[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    return value if isinstance(value, str) else None


def _decoded(data: bytes, truncated: bool) -> str:
    text = data.decode("utf-8", "replace")
    return text + ("\n[output over the limit: the rest was dropped]" if truncated else "")


@dataclass(frozen=True)
class ListFiles:
    """The item's file paths and sizes."""

    name: str = "list_files"
    description: str = "List the response's files (path and size in bytes)."
    parameters: dict[str, Any] = field(default_factory=lambda: _arguments())
    output_chars: int = 8_000

    async def call(
        self, ctx: ToolContext, arguments: Mapping[str, Any], sandbox_s: float
    ) -> ToolOutput:
        """One line per file, at most :data:`LISTED_FILES`."""
        files = ctx.files()
        lines = [f"{p} ({len(t.encode())} bytes)" for p, t in sorted(files.items())]
        more = len(lines) - LISTED_FILES
        text = "\n".join(lines[:LISTED_FILES]) + (f"\n[{more} more]" if more > 0 else "")
        return ToolOutput(text or "(no files)")


@dataclass(frozen=True)
class ReadFile:
    """One of the item's files, read-only."""

    name: str = "read_file"
    description: str = "Read one of the response's files by its path (as list_files gives it)."
    parameters: dict[str, Any] = field(
        default_factory=lambda: _arguments(path={"type": "string", "maxLength": 512})
    )
    output_chars: int = 6_000

    async def call(
        self, ctx: ToolContext, arguments: Mapping[str, Any], sandbox_s: float
    ) -> ToolOutput:
        """The file's text; an error for a path the item does not hold."""
        path = _string(arguments, "path")
        if path is None:
            return _error("path: a string is required")
        text = ctx.files().get(path)
        if text is None:
            return _error(f"no file {path[:200]!r} in the response (list_files lists them)")
        return ToolOutput(text)


@dataclass(frozen=True)
class RunCode:
    """A Python snippet in the sandbox, beside the item's files."""

    name: str = "run_code"
    description: str = (
        "Run a Python snippet in an isolated sandbox (no network) whose working directory "
        "holds the response's files; returns the exit code, stdout and stderr."
    )
    parameters: dict[str, Any] = field(
        default_factory=lambda: _arguments(code={"type": "string", "maxLength": SNIPPET_CHARS})
    )
    output_chars: int = 4_000

    async def call(
        self, ctx: ToolContext, arguments: Mapping[str, Any], sandbox_s: float
    ) -> ToolOutput:
        """The run's exit code and output, or why it did not run."""
        code = _string(arguments, "code")
        if code is None or len(code) > SNIPPET_CHARS:
            return _error(f"code: a string of at most {SNIPPET_CHARS} characters is required")
        wall = min(RUN_WALL_S, sandbox_s)
        if wall <= 0:
            return _error("no sandbox time left for this verdict")
        files = {p: t.encode("utf-8", "surrogatepass") for p, t in ctx.files().items()}
        files[SNIPPET] = code.encode("utf-8", "surrogatepass")
        limits = Limits(cpu_s=max(1, int(wall)), wall_s=wall, output_bytes=RUN_OUTPUT_BYTES)
        # Not -I (which leaves the work directory off sys.path): the snippet imports the files.
        argv = (PYTHON, "-E", "-s", SNIPPET)
        result = await ctx.sandbox.run(RunRequest(argv, files, limits=limits))
        return _run_output(result)


def _run_output(result: RunResult) -> ToolOutput:
    """A run as the judge reads it: a sandbox that could not run is an error; a program
    killed at its limits is the program's outcome."""
    if result.failure is not None and result.failure not in PROGRAM_FAULTS:
        return _error(f"the sandbox could not run it: {result.failure}: {result.detail[:200]}")
    head = f"exit code: {result.exit_code}" + (
        f" (stopped: {result.failure})" if result.failure else ""
    )
    out = _decoded(result.stdout, result.stdout_truncated)
    err = _decoded(result.stderr, result.stderr_truncated)
    return ToolOutput(f"{head}\nstdout:\n{out}\nstderr:\n{err}", sandbox_s=result.wall_s)


@dataclass(frozen=True)
class _Metered(Sandbox):
    """A sandbox handle that adds up the wall seconds of the runs it makes."""

    spent: list[float] = field(default_factory=list)

    async def run(self, request: RunRequest) -> RunResult:
        """As :meth:`Sandbox.run`, its wall time kept."""
        result = await Sandbox.run(self, request)
        self.spent.append(result.wall_s)
        return result


@dataclass(frozen=True)
class RunTests:
    """The task's own hidden tests, run as the ``unit_tests`` grader runs them."""

    name: str = "run_tests"
    description: str = (
        "Run the task's hidden unit tests against the response's code in the sandbox; "
        "returns the fraction passed, each test's outcome and any tampering found."
    )
    parameters: dict[str, Any] = field(default_factory=lambda: _arguments())
    output_chars: int = 4_000

    async def call(
        self, ctx: ToolContext, arguments: Mapping[str, Any], sandbox_s: float
    ) -> ToolOutput:
        """The grader's score and evidence (its error when it gave no score): the
        ``unit_tests`` grader's own result when it ran these tests on these files and
        scored (no run, no sandbox seconds), else a run of its own."""
        spec = ctx.tests
        if spec is None:
            return _error("this task has no tests to run")
        if ctx.tested is not None and ctx.tested.score is not None:
            return _tests_output(ctx.tested, 0.0)
        if sandbox_s < spec.wall_s:
            return _error(f"not enough sandbox time left (a run may take {spec.wall_s} s)")
        sandbox = ctx.sandbox
        metered = _Metered(sandbox.lanes, sandbox.group, sandbox.deadline)
        result = await unit_tests(ctx.rollout, spec, metered)
        return _tests_output(result, sum(metered.spent))


def _tests_output(result: GraderResult, sandbox_s: float) -> ToolOutput:
    """A ``unit_tests`` result as ``run_tests`` shows it, its runs' ``sandbox_s``."""
    shown: dict[str, Any] = {
        "score": result.score,
        "flags": list(result.flags),  # what the tamper detector saw the code attempt
        "evidence": result.evidence,
    }
    if result.score is None:
        shown = {"error": result.kind, "detail": result.error}
    return ToolOutput(json.dumps(shown, indent=1), error=result.score is None, sandbox_s=sandbox_s)


@dataclass(frozen=True)
class GraderEvidence:
    """The item's deterministic graders' scores and evidence."""

    name: str = "grader_evidence"
    description: str = (
        "The scores and evidence of the deterministic graders (exact match, tests, ...) "
        "on the response; optionally of one grader by name."
    )
    parameters: dict[str, Any] = field(
        default_factory=lambda: _arguments(optional={"grader": {"type": "string", "maxLength": 64}})
    )
    output_chars: int = 4_000

    async def call(
        self, ctx: ToolContext, arguments: Mapping[str, Any], sandbox_s: float
    ) -> ToolOutput:
        """Every grader's result, or the one named."""
        name = _string(arguments, "grader")
        chosen = dict(ctx.evidence)
        if name is not None:
            if name not in chosen:
                return _error(f"no grader {name[:64]!r}; there are: {sorted(chosen)}")
            chosen = {name: chosen[name]}
        shown = {
            n: {"score": r.score, "evidence": r.evidence, "error": r.kind}
            for n, r in sorted(chosen.items())
        }
        return ToolOutput(json.dumps(shown, indent=1, default=str))


TOOLS: dict[str, ToolSpec] = {
    t.name: t for t in (RunCode(), RunTests(), ReadFile(), ListFiles(), GraderEvidence())
}
"""Every judge tool by name: a new tool is one entry."""


@dataclass
class Later:
    """One item's :class:`ToolContext`, set once it is known: a plan binds an item's tools
    before its request is admitted, and the engine sets ``ctx`` (the graders' results
    among it) after grading the item, before it sends the item's agentic questions."""

    ctx: ToolContext | None = None


@dataclass(frozen=True)
class Bound:
    """A registry tool bound to one item's context: a loop's
    :class:`~rewardsvc.judges.toolloop.Tool`."""

    spec: ToolSpec
    item: Later

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.spec.name

    @property
    def output_chars(self) -> int:
        """The most characters of its output shown."""
        return self.spec.output_chars

    def schema(self) -> dict[str, Any]:
        """Its OpenAI function schema."""
        spec = self.spec
        function = {"name": spec.name, "description": spec.description}
        return {"type": "function", "function": {**function, "parameters": spec.parameters}}

    async def run(self, arguments: dict[str, Any], sandbox_s: float) -> ToolOutput:
        """The tool's output on the bound item (an error while its context is unset)."""
        if self.item.ctx is None:
            return _error("the response's tools are not ready")
        return await self.spec.call(self.item.ctx, arguments, sandbox_s)


def bind(names: Sequence[str], ctx: ToolContext | Later) -> tuple[Tool, ...]:
    """The tools ``names`` bound to ``ctx``'s item (a :class:`Later` one: to its context
    once set); ``ValueError`` for an unknown name."""
    unknown = sorted(set(names) - set(TOOLS))
    if unknown:
        raise ValueError(f"tools: unknown {unknown}; known: {sorted(TOOLS)}")
    item = ctx if isinstance(ctx, Later) else Later(ctx)
    return tuple(Bound(TOOLS[n], item) for n in names)
