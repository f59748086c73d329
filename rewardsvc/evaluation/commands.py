"""The ``rewardsvc label`` and ``rewardsvc eval`` subcommands (registered by ``rewardsvc.cli``).

In-process by default (the rubric library and judge pool of ``--rubrics``/``--judges`` or
the REWARDSVC_* settings); against a running service with ``--url`` (its key from
``--api-key`` or ``REWARDSVC_API_KEY``). A progress bar goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from rewardsvc.core import comparative as cmp
from rewardsvc.core.criteria_formats import CriteriaFormatName

if TYPE_CHECKING:
    from rewardsvc.evaluation.scorers import Scorer

ConfigArgs = Callable[[argparse.ArgumentParser], None]


def _config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rubrics", help="rubric library directory (REWARDSVC_RUBRICS_DIR)")
    p.add_argument("--judges", help="judge pool file (REWARDSVC_JUDGE_POOL)")


def _common(p: argparse.ArgumentParser, config_args: ConfigArgs) -> None:
    config_args(p)
    p.add_argument("--rubric", required=True, help="rubric id, or a rubric YAML file")
    p.add_argument("--url", help="score with the service at this URL instead of in-process")
    p.add_argument("--api-key", help="the service's API key (default $REWARDSVC_API_KEY)")
    p.add_argument("--batch", type=int, default=8, help="rows per request (default 8)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--criteria-format",
        choices=get_args(CriteriaFormatName),
        default="rewardsvc",
        help="format of the rows' own criteria column, a per-prompt rubric (default rewardsvc)",
    )


def register(sub: Any, config_args: ConfigArgs = _config_args) -> None:
    """Add ``label`` and ``eval`` to the ``rewardsvc`` subcommands."""
    lab = sub.add_parser("label", help="judge pairs in both orders into chosen/rejected rows")
    lab.add_argument("input", help='JSON lines {"id", "prompt", "a", "b"}')
    lab.add_argument("output", help="TRL preference rows {id, prompt, chosen, rejected}")
    lab.add_argument("--held", help="ties and inconsistent pairs (default OUTPUT with .held.jsonl)")
    lab.add_argument(
        "--margin",
        type=float,
        default=cmp.DEFAULT_MARGIN,
        help=f"tie unless |p - 0.5| > margin (default {cmp.DEFAULT_MARGIN})",
    )
    _common(lab, config_args)
    lab.set_defaults(func=cmd_label)

    ev = sub.add_parser("eval", help="measure a rubric and its judges against labelled data")
    ev.add_argument(
        "data", help="JSON lines: {prompt, completion, label} or {prompt, chosen, rejected}"
    )
    ev.add_argument("--json", action="store_true", help="print the report as JSON")
    ev.add_argument("--plot", help="write a PNG of the metrics here")
    ev.add_argument("--bootstrap", type=int, default=1000, help="resamples for the CIs (0: none)")
    ev.add_argument("--limit", type=int, help="only the first N rows")
    _common(ev, config_args)
    ev.set_defaults(func=cmd_eval)


async def _scorer(args: argparse.Namespace) -> Scorer:
    # Imported on use: registering the commands must not load the service for ``validate``.
    from rewardsvc.evaluation.scorers import LocalScorer, RemoteScorer

    if args.url:
        key = args.api_key or os.environ.get("REWARDSVC_API_KEY")
        return await RemoteScorer(
            args.url, args.rubric, key, criteria_format=args.criteria_format
        ).load()
    from rewardsvc.application.root import settings_with

    settings = settings_with(args.rubrics, args.judges)
    return await LocalScorer.build(args.rubric, settings, args.criteria_format)


class _NoBar:
    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int) -> None:
        """Nothing to show."""


def _bar(total: int, desc: str, off: bool) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # the bar is a convenience; the work does not need it
        return _NoBar()
    return tqdm(total=total, desc=desc, unit="row", file=sys.stderr, disable=off)


def cmd_label(args: argparse.Namespace) -> int:
    """Label pairs; print the counts; exit 1 when some pairs could not be judged."""
    from rewardsvc.evaluation import runner

    rows = runner.read_rows(Path(args.input))
    out = Path(args.output)
    held = Path(args.held) if args.held else out.with_suffix(".held.jsonl")

    async def run() -> dict[str, int]:
        scorer = await _scorer(args)
        try:
            with _bar(len(rows), "label", args.no_progress) as bar:
                return await runner.label(
                    scorer,
                    rows,
                    out,
                    held,
                    margin=args.margin,
                    batch=args.batch,
                    progress=bar.update,
                )
        finally:
            await scorer.aclose()

    counts = asyncio.run(run())
    print(
        f"{counts['labelled']} labelled -> {out}; {counts['held']} ties or inconsistent -> "
        f"{held}; {counts['skipped']} already done; {counts['failed']} failed (rerun to retry)"
    )
    return 1 if counts["failed"] else 0


def cmd_eval(args: argparse.Namespace) -> int:
    """Score labelled data; print the Markdown table (or JSON); write the PNG if asked."""
    from rewardsvc.evaluation import report, runner

    rows = runner.labelled_rows(Path(args.data))
    if args.limit is not None:
        rows = rows[: args.limit]

    async def run() -> dict[str, Any]:
        scorer = await _scorer(args)
        try:
            with _bar(len(rows), "eval", args.no_progress) as bar:
                return await runner.evaluate(
                    scorer, rows, resamples=args.bootstrap, batch=args.batch, progress=bar.update
                )
        finally:
            await scorer.aclose()

    result = asyncio.run(run())
    if args.plot:
        report.plot(result, Path(args.plot))
    print(json.dumps(result, indent=2) if args.json else report.markdown(result))
    return 0
