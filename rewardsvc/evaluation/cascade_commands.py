"""The ``rewardsvc cascade calibrate`` subcommand (registered by ``rewardsvc.cli``): fit a
cascaded rubric's bands on labelled data (:mod:`.cascade_calibrate`), in-process."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from rewardsvc.evaluation.commands import ConfigArgs, _config_args


def register(sub: Any, config_args: ConfigArgs = _config_args) -> None:
    """Add ``cascade calibrate`` to the ``rewardsvc`` subcommands."""
    cascade = sub.add_parser("cascade", help="cascades of judges")
    inner = cascade.add_subparsers(dest="cascade_command", required=True)
    cal = inner.add_parser(
        "calibrate", help="fit a cascaded rubric's escalation bands on labelled data"
    )
    cal.add_argument(
        "data",
        help="JSON lines {prompt, completion, label} (the eval format), with reference "
        "where the rubric requires one",
    )
    config_args(cal)
    cal.add_argument("--rubric", required=True, help="rubric id, or a rubric YAML file")
    target = cal.add_mutually_exclusive_group()
    target.add_argument(
        "--max-disagreement",
        type=float,
        help="most items whose reward (cut at --threshold) differs from the last stage "
        "alone's, at 95 %% confidence (default 0.02)",
    )
    target.add_argument("--max-escalation", type=float, help="most questions passed on")
    cal.add_argument("--threshold", type=float, default=0.5, help="reward cut (default 0.5)")
    cal.add_argument("--step", type=float, default=0.025, help="band grid step (default 0.025)")
    cal.add_argument("--batch", type=int, default=8, help="items per batch (default 8)")
    cal.add_argument("--limit", type=int, help="only the first N rows")
    cal.add_argument("--out", help="write the fitted cascade section (YAML) here")
    cal.add_argument("--plot", help="write a PNG of the curves here")
    cal.add_argument("--json", help="write the whole report (curves included) as JSON here")
    cal.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Score every row with every stage, sweep the bands, print the chosen ones."""
    from rewardsvc.application.root import settings_with
    from rewardsvc.evaluation import cascade_calibrate as cal
    from rewardsvc.evaluation import cascade_sweep, runner
    from rewardsvc.evaluation.scorers import LocalScorer

    rows = [r for r in runner.labelled_rows(Path(args.data)) if "completion" in r]
    rows = rows[: args.limit] if args.limit is not None else rows

    async def run() -> dict[str, Any]:
        scorer = await LocalScorer.build(args.rubric, settings_with(args.rubrics, args.judges))
        try:
            scores = await cal.score_stages(scorer.engine, scorer.rubric, rows, args.batch)
        finally:
            await scorer.aclose()
        chosen, curves = cascade_sweep.fit(
            scores.items,
            cal.reward_of(scorer.rubric),
            args.threshold,
            args.step,
            args.max_disagreement,
            args.max_escalation,
        )
        return cal.report(scorer.rubric, scores, chosen, curves)

    try:
        result = asyncio.run(run())
    except (cal.RefusedRow, cal.NothingScored) as exc:
        print(f"rewardsvc: error: {args.data}: {exc}", file=sys.stderr)
        return 2
    if args.out:
        cal.write_fragment(result, Path(args.out))
    if args.plot:
        cal.plot(result, Path(args.plot))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    if result["dropped"]:
        print(
            f"rewardsvc: rows left out, their last stage's judges failed: "
            f"{len(result['dropped'])} ({', '.join(result['dropped'][:10])})",
            file=sys.stderr,
        )
    summary = {k: result[k] for k in ("rubric", "items", "last_stage_accuracy", "chosen")}
    print(json.dumps(summary, indent=2))
    return 0 if all(p is not None for p in result["chosen"]) else 1
