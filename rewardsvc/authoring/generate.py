"""``rewardsvc rubrics generate INPUT OUTPUT``: a rubric for each prompt, written by a judge.

INPUT holds JSON lines ``{id, prompt, reference?, chosen?, rejected?}`` (``prompt``,
``chosen`` and ``rejected`` a string or chat messages); OUTPUT gets one per-prompt rubric
row ``{id, prompt, reference?, criteria}`` per row, the criteria rewardsvc criterion
objects: the shape ``rewardsvc rubrics import`` writes and per-item criteria take. The
generator is a judge of the pool (``--generator``), reached at the base URLs of the pool
file only; what is asked and checked is in ``generation_prompt``, ``generation_check`` and
``generation_run``.

Resumable by id: rows whose id is already in OUTPUT are skipped, and each row is appended
and flushed as soon as it is done (in input order), so a killed run loses at most the rows
in flight; a last line cut by a kill is dropped before appending. A bad input row (not
JSON, a field missing or of the wrong type: ``file:line: field: ...``) or a row whose
generation failed is a reject, in the report and in ``--rejects``, never in OUTPUT: the
next run tries it again. The report (stderr, and ``--report FILE`` as JSON) counts rows,
generated, skipped and rejected rows with reasons, criteria per prompt and the category
mix. Exit status: 0, or 1 when a row was rejected, 2 when the run could not start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rewardsvc.authoring.generation_prompt import Limits, Source
from rewardsvc.core.errors import field_problems
from rewardsvc.library.registry import load_pool
from rewardsvc.library.yamlfile import InvalidFile
from rewardsvc.protocol.items import Text

if TYPE_CHECKING:
    from rewardsvc.authoring.generation_run import Generator, Outcome, Tally

ConfigArgs = Callable[[argparse.ArgumentParser], None]


class SourceRow(BaseModel):
    """One input row of ``rubrics generate``; other keys of the row are ignored."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=256, description="The row's id (resume key).")
    prompt: Text = Field(description="The task: a string or chat messages.")
    reference: str | None = Field(default=None, description="A reference answer (RaR).")
    chosen: Text | None = Field(default=None, description="A preferred response (contrastive).")
    rejected: Text | None = Field(default=None, description="A rejected response (contrastive).")

    @field_validator("id", mode="before")
    @classmethod
    def _number_id(cls, value: object) -> object:
        # Datasets number their rows: an integer id is its decimal text.
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _pair(self) -> SourceRow:
        if (self.chosen is None) != (self.rejected is None):
            missing = "rejected" if self.rejected is None else "chosen"
            raise ValueError(f"{missing}: contrastive generation needs both chosen and rejected")
        return self

    def source(self) -> Source:
        """The row's texts as the generator reads them (messages as a transcript)."""
        prompt = self.prompt if isinstance(self.prompt, str) else _task(self.prompt)
        return Source(
            prompt,
            self.reference,
            _reply(self.prompt, self.chosen),
            _reply(self.prompt, self.rejected),
        )


def _task(prompt: Text) -> str:
    from rewardsvc.application.items import trajectory_of

    return trajectory_of(prompt, "").plain("task")


def _reply(prompt: Text, response: Text | None) -> str | None:
    from rewardsvc.application.items import trajectory_of

    if response is None or isinstance(response, str):
        return response
    return trajectory_of(prompt, response).plain("events")


@dataclass(frozen=True)
class Read:
    """One non-blank input line: its row (and the raw object, echoed in the output), or
    why it cannot be read (``file:line: ...``) and its id when it has one."""

    line: int
    id: str | None
    raw: dict[str, Any] | None = None
    row: SourceRow | None = None
    reason: str | None = None


def read_sources(path: Path) -> Iterator[Read]:
    """Each non-blank line of ``path``, read or refused on its own."""
    from rewardsvc.application.items import unreadable_text

    seen: set[str] = set()
    with path.open(encoding="utf-8", errors="surrogateescape") as lines:
        for n, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            where = f"{path}:{n}"
            try:
                raw = json.loads(text)
            except ValueError as exc:
                yield Read(n, None, reason=f"{where}: not JSON ({exc})")
                continue
            if not isinstance(raw, dict):
                yield Read(n, None, reason=f"{where}: a row must be a JSON object")
                continue
            row_id = str(raw.get("id")) if raw.get("id") is not None else None
            bad = unreadable_text(raw)
            if bad is not None:
                yield Read(n, row_id, reason=f"{where}: {bad}")
                continue
            try:
                row = SourceRow.model_validate(raw)
            except ValidationError as exc:
                problems = "; ".join(str(p) for p in field_problems(exc.errors(), raw))
                yield Read(n, row_id, reason=f"{where}: {problems}")
                continue
            if row.id in seen:
                yield Read(n, row.id, reason=f"{where}: id: {row.id!r} is also an earlier row's")
                continue
            seen.add(row.id)
            yield Read(n, row.id, raw, row)


def done_ids(path: Path) -> set[str]:
    """The ids already in OUTPUT. A last line without its newline (a run killed while
    writing it) is cut off, so the next row starts on a line of its own."""
    if not path.is_file():
        return set()
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with path.open("r+b") as f:
            f.truncate(keep)
        data = data[:keep]
    ids: set[str] = set()
    for n, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            ids.add(str(json.loads(line)["id"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise _fail(
                f"{path}:{n}: not an output row ({exc}); "
                "fix or move the file before resuming into it"
            ) from exc
    return ids


def _fail(message: str) -> SystemExit:
    """The exit of a run that cannot start (status 2), its reason on stderr."""
    print(f"rewardsvc: error: {message}", file=sys.stderr)
    return SystemExit(2)


def _write(out: IO[str], row: dict[str, Any]) -> None:
    out.write(json.dumps(row, ensure_ascii=False) + "\n")
    out.flush()


async def run(generator: Generator, args: argparse.Namespace, tally: Tally) -> None:
    """Generate the rubric of every INPUT row not yet in OUTPUT, ``--concurrency`` at a
    time, appending each to OUTPUT in input order."""
    output = Path(args.output)
    done = done_ids(output)
    window: deque[asyncio.Task[Outcome]] = deque()

    def settle(outcome: Outcome, out: IO[str]) -> None:
        if outcome.row is not None:
            _write(out, outcome.row)
        tally.add(outcome)

    with output.open("a", encoding="utf-8") as out:
        try:
            for read in read_sources(Path(args.input)):
                tally.rows += 1
                if read.row is None or read.raw is None:
                    tally.reject(read.id, read.line, read.reason or "unreadable")
                    continue
                if read.row.id in done:
                    tally.skipped += 1
                    continue
                call = generator.generate(read.row.id, read.line, read.row.source(), read.raw)
                window.append(asyncio.create_task(call))
                if len(window) >= args.concurrency:
                    settle(await window.popleft(), out)
            while window:
                settle(await window.popleft(), out)
        finally:
            for task in window:
                task.cancel()
            await generator.aclose()


def _limits(args: argparse.Namespace) -> Limits:
    try:
        return Limits(args.min_criteria, args.max_criteria, args.max_text_chars)
    except ValueError as exc:
        raise _fail(f"{exc}") from exc


def _generator(args: argparse.Namespace) -> Generator:
    """The generator judge the options name, from the pool file of the settings (the
    environment's, ``--judges`` instead when given; its URLs only)."""
    # Imported on use: registering the command must not load the judges' HTTP stack.
    from rewardsvc.application.root import settings_with
    from rewardsvc.authoring.generation_run import Generator

    pool_path = Path(settings_with(args.rubrics, args.judges).judge_pool)
    try:
        pool = load_pool(pool_path)
    except (InvalidFile, OSError) as exc:
        raise _fail(f"judge pool {pool_path}: {exc}") from exc
    name = args.generator or next(iter(pool.judges))
    if name not in pool.judges:
        raise _fail(
            f"--generator: no judge {name!r} in {pool_path}; it defines {sorted(pool.judges)}"
        )
    config = pool.judges[name]
    if args.timeout is not None:
        # One generation writes hundreds of tokens: far longer than a judge's verdict.
        config = config.model_copy(update={"timeout_s": args.timeout, "call_deadline_s": None})
    return Generator(
        name,
        config,
        _limits(args),
        retries=args.retries,
        max_tokens=args.max_tokens,
        frequency_penalty=args.frequency_penalty,
    )


def summary(report: dict[str, Any]) -> str:
    """The report as a few lines of text."""
    lines = [
        f"rubrics generate: {report['rows']} rows: {report['generated']} generated, "
        f"{report['skipped']} already in {report['output']}, {report['rejected']} rejected "
        f"({report['calls']} calls to {report['generator']}, {report['elapsed_s']} s)"
    ]
    per = report["criteria_per_prompt"]
    if per is not None:
        mix = ", ".join(f"{k} {v}" for k, v in report["categories"].items())
        lines.append(
            f"criteria per prompt: min {per['min']}, mean {per['mean']}, max {per['max']}; "
            f"categories: {mix}; duplicates dropped {report['duplicates_dropped']}, "
            f"ids renamed {report['ids_renamed']}, retries {report['retries']}"
        )
    for reject in report["rejects"]:
        lines.append(f"rejected {reject['id']!r} (line {reject['line']}): {reject['reason']}")
    return "\n".join(lines)


def cmd_generate(args: argparse.Namespace) -> int:
    """Generate the rubrics; print the report to stderr (and ``--report``); exit 1 on a
    rejected row."""
    bad = [
        name
        for name, ok in (
            ("--concurrency >= 1", args.concurrency >= 1),
            ("--retries >= 0", args.retries >= 0),
            ("--frequency-penalty in -2..2", -2 <= args.frequency_penalty <= 2),
            ("--max-tokens >= 1", args.max_tokens is None or args.max_tokens >= 1),
            ("--timeout in (0, 3600]", args.timeout is None or 0 < args.timeout <= 3600),
        )
        if not ok
    ]
    if bad:
        raise _fail(f"need {', '.join(bad)}")
    if not Path(args.input).is_file():
        raise _fail(f"INPUT {args.input} not found")
    from rewardsvc.authoring.generation_run import Tally

    generator = _generator(args)
    tally = Tally()
    asyncio.run(run(generator, args, tally))
    report = tally.report(
        generator.calls,
        input=args.input,
        output=args.output,
        generator=generator.name,
        model=generator.config.model,
    )
    print(summary(report), file=sys.stderr)
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.rejects:
        with Path(args.rejects).open("w", encoding="utf-8") as out:
            for reject in report["rejects"]:
                _write(out, reject)
    return 1 if report["rejected"] else 0


def register(sub: Any, config_args: ConfigArgs) -> None:
    """Add ``rubrics generate`` to the ``rubrics`` commands."""
    p = sub.add_parser("generate", help="write a rubric for each prompt with a judge of the pool")
    p.add_argument("input", help="JSON lines {id, prompt, reference?, chosen?, rejected?}")
    p.add_argument("output", help="per-prompt rubric rows {id, prompt, reference?, criteria}")
    config_args(p)
    p.add_argument("--generator", help="the pool's judge that writes (default: its first)")
    p.add_argument("--min-criteria", type=int, default=3, help="fewest criteria (default 3)")
    p.add_argument("--max-criteria", type=int, default=8, help="most criteria (default 8)")
    p.add_argument(
        "--max-text-chars", type=int, default=200, help="longest criterion text (default 200)"
    )
    p.add_argument("--max-tokens", type=int, help="output budget (default: what the limits need)")
    p.add_argument("--timeout", type=float, help="seconds per call (default: the judge's)")
    p.add_argument(
        "--retries", type=int, default=1, help="new tries of a refused reply (default 1)"
    )
    p.add_argument(
        "--frequency-penalty",
        type=float,
        default=0.0,
        help="OpenAI frequency_penalty, -2..2 (default 0); small models repeat a criterion "
        "under greedy decoding, 0.5 to 1 stops most of it",
    )
    p.add_argument("--concurrency", type=int, default=4, help="rows in flight (default 4)")
    p.add_argument("--rejects", help="write the rejected rows here (JSON lines)")
    p.add_argument("--report", help="write the report here as JSON")
    p.set_defaults(func=cmd_generate)
