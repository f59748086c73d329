"""``rewardsvc rubrics import``: a rubric dataset's rows as rewardsvc rows with criteria.

Reads JSON lines of a dataset whose rubric is a column (HealthBench, RaR, plain strings,
the Tinker cookbook's rubric recipe, rewardsvc's own), and writes one JSON line per row,
``{"id", "prompt", "reference"?, "criteria"}``, the criteria in rewardsvc's form (read by
:mod:`rewardsvc.core.criteria_formats`, which also says where each format's rows keep
their parts). A bad row is reported as ``FILE:LINE: field: message`` on stderr and
skipped; the others are written. The exit code is 1 when any row was rejected, 2 when
the input cannot be read or the output written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rewardsvc.core.criteria_formats import (
    FORMATS,
    CriteriaFormat,
    CriteriaFormatError,
    DatasetRow,
)
from rewardsvc.core.errors import FieldProblem

_DEFAULTS = "; ".join(
    f"{name}: {f.row.rubric}, {'/'.join(f.row.prompt)}"
    + (f", {'/'.join(f.row.reference)}" if f.row.reference else "")
    for name, f in FORMATS.items()
)


def register(sub: Any, config_args: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``import`` to the ``rubrics`` commands (it needs no judges: no config args)."""
    p = sub.add_parser(
        "import",
        help="convert a rubric dataset (JSON lines) to rewardsvc rows with criteria",
        description="Convert each row's rubric column to rewardsvc criteria. A bad row is "
        "reported as FILE:LINE: field: message and skipped; exit 1 when any row was "
        "rejected, 2 when the input cannot be read.",
    )
    p.add_argument("input", help="JSON lines, one dataset row per line")
    p.add_argument("output", help='JSON lines {"id", "prompt", "reference"?, "criteria"}')
    p.add_argument(
        "--format",
        required=True,
        choices=list(FORMATS),
        help="the rubric column's format: "
        + "; ".join(f"{name}: {f.description}" for name, f in FORMATS.items()),
    )
    p.add_argument(
        "--rubric-field", help="the column holding the rubric (default by format, see below)"
    )
    p.add_argument("--prompt-field", help="the column holding the prompt (text or messages)")
    p.add_argument("--reference-field", help="the column holding a reference answer")
    p.add_argument("--id-field", help="the column holding the row's id (default: id, else line)")
    p.epilog = f"Default columns (rubric, prompt, reference) by format: {_DEFAULTS}."
    p.set_defaults(func=cmd_import)


@dataclass
class Summary:
    """What one import did."""

    rows: int = 0
    imported: int = 0
    criteria: int = 0
    rejected: int = 0

    def line(self, source: str, target: str) -> str:
        """The summary line: rows read, imported with their criteria, rejected."""
        return (
            f"{source}: {self.rows} row(s), {self.imported} imported with {self.criteria} "
            f"criteria to {target}, {self.rejected} rejected"
        )


def _layout(args: argparse.Namespace, fmt: CriteriaFormat) -> DatasetRow:
    """The format's columns, with those the command line names instead."""
    row = fmt.row
    return DatasetRow(
        rubric=args.rubric_field or row.rubric,
        prompt=(args.prompt_field,) if args.prompt_field else row.prompt,
        reference=(args.reference_field,) if args.reference_field else row.reference,
        id=(args.id_field,) if args.id_field else row.id,
    )


def _first(row: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if k in row), None)


def _prompt(row: dict[str, Any], keys: tuple[str, ...]) -> tuple[Any, list[FieldProblem]]:
    """The row's prompt: non-empty text, or a list of chat messages (objects with a role)."""
    key = _first(row, keys)
    if key is None:
        others = f" (nor {', '.join(keys[1:])})" if len(keys) > 1 else ""
        return None, [FieldProblem((keys[0],), f"missing{others}")]
    value = row[key]
    if isinstance(value, str) and value.strip():
        return value, []
    if isinstance(value, list) and value:
        bad = [i for i, m in enumerate(value) if not isinstance(m, dict) or "role" not in m]
        if not bad:
            return value, []
        return None, [FieldProblem((key, bad[0]), "a chat message needs a role")]
    return None, [FieldProblem((key,), "must be non-empty text or a list of chat messages")]


def convert_row(row: Any, fmt: CriteriaFormat, layout: DatasetRow, line: int) -> dict[str, Any]:
    """One dataset row as a rewardsvc row (its id, else its line number); raises
    :class:`CriteriaFormatError` with the row's problems, located from the row."""
    if not isinstance(row, dict):
        raise CriteriaFormatError([FieldProblem((), "a row must be a JSON object")])
    prompt, problems = _prompt(row, layout.prompt)
    criteria: list[dict[str, Any]] = []
    if layout.rubric not in row:
        problems.append(FieldProblem((layout.rubric,), "missing"))
    else:
        try:
            criteria = fmt.read(row[layout.rubric])
        except CriteriaFormatError as exc:
            problems += exc.prefixed((layout.rubric,))
    out: dict[str, Any] = {"id": str(line), "prompt": prompt}
    id_key = _first(row, layout.id)
    if id_key is not None:
        value = row[id_key]
        if (isinstance(value, str) and value) or type(value) is int:
            out["id"] = str(value)
        else:
            problems.append(FieldProblem((id_key,), "must be non-empty text or an integer"))
    ref_key = _first(row, layout.reference)
    if ref_key is not None and row[ref_key] is not None:
        if not isinstance(row[ref_key], str):
            problems.append(FieldProblem((ref_key,), "must be text"))
        out["reference"] = row[ref_key]
    if problems:
        raise CriteriaFormatError(problems)
    out["criteria"] = criteria
    return out


def _lines(path: Path) -> Iterator[tuple[int, str | None]]:
    """The file's lines with their numbers (None for a line that is not UTF-8)."""
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError:
                yield number, None


def _parse(text: str | None) -> Any:
    if text is None:
        raise CriteriaFormatError([FieldProblem((), "not UTF-8 text")])
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CriteriaFormatError(
            [FieldProblem((), f"not JSON: {exc.msg} (column {exc.colno})")]
        ) from exc


def import_rows(
    source: Path, out: IO[str], fmt: CriteriaFormat, layout: DatasetRow, err: IO[str]
) -> Summary:
    """Convert every row of ``source`` into ``out``; each bad row reported on ``err`` as
    ``FILE:LINE: field: message`` and skipped (blank lines are not rows)."""
    summary = Summary()
    seen: dict[str, int] = {}
    for number, text in _lines(source):
        if text is not None and not text.strip():
            continue
        summary.rows += 1
        try:
            row = convert_row(_parse(text), fmt, layout, number)
            if row["id"] in seen:
                message = f"duplicate row id {row['id']!r} (first on line {seen[row['id']]})"
                raise CriteriaFormatError([FieldProblem((), message)])
        except CriteriaFormatError as exc:
            summary.rejected += 1
            for problem in exc.problems:
                print(f"{source}:{number}: {problem}", file=err)
            continue
        seen[row["id"]] = number
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        summary.imported += 1
        summary.criteria += len(row["criteria"])
    return summary


def cmd_import(args: argparse.Namespace) -> int:
    """Import the rows; print the summary; exit 1 when any row was rejected."""
    fmt = FORMATS[args.format]
    source, target = Path(args.input), Path(args.output)
    # Written beside the target and renamed at the end: a failed import leaves no half file.
    part = target.with_name(target.name + ".part")
    try:
        with part.open("w", encoding="utf-8") as out:
            summary = import_rows(source, out, fmt, _layout(args, fmt), sys.stderr)
        os.replace(part, target)
    except OSError as exc:
        print(f"rewardsvc: error: {exc}", file=sys.stderr)
        return 2
    finally:
        part.unlink(missing_ok=True)  # gone after the rename; else the half file
    print(summary.line(str(source), str(target)), file=sys.stderr)
    return 1 if summary.rejected else 0
