"""The ``rewardsvc fuzz-graders`` command (registered by ``rewardsvc.cli``).

It runs the fuzzer in this process (no service, no judge) and exits 1 when a grader gives
a false positive that no documented choice explains, so that CI can run it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewardsvc.fuzzing.report import as_json, as_markdown
from rewardsvc.fuzzing.runner import fuzz
from rewardsvc.fuzzing.targets import TARGETS

ConfigArgs = Callable[[argparse.ArgumentParser], None]


def cmd_fuzz(args: argparse.Namespace) -> int:
    """Run the fuzzer, write or print its report; 1 on an unexplained false positive."""
    report = fuzz(args.seed, args.rounds, args.grader or None)
    markdown = as_markdown(report)
    if args.report:
        Path(args.report).write_text(markdown, encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps(as_json(report), indent=2) + "\n", encoding="utf-8")
    if not args.report:
        sys.stdout.write(markdown)
    print(f"unexplained false positives: {report.unexplained}", file=sys.stderr)
    return 1 if report.unexplained else 0


def register(sub: Any, config_args: ConfigArgs | None = None) -> None:
    """Add ``fuzz-graders`` to the ``rewardsvc`` subcommands (it reads no config)."""
    p = sub.add_parser(
        "fuzz-graders",
        help="fuzz the deterministic graders against a stricter reference check",
        description="Generate adversarial completions (several final answers, retractions, "
        "unicode and LaTeX tricks, nested boxes, negations, junk, truncation) for every "
        "grader, compare each grader with a stricter reference check, and report false "
        "positives and negatives per grader and mutation family. Exit 1 when a false "
        "positive is not a documented choice.",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the generator (default 0)")
    p.add_argument(
        "--rounds", type=int, default=3, help="passes of every family over every item (default 3)"
    )
    p.add_argument(
        "--grader",
        action="append",
        choices=[t.name for t in TARGETS],
        help="fuzz only this grader (repeatable; default all)",
    )
    p.add_argument("--report", help="write the Markdown report here instead of stdout")
    p.add_argument("--json", help="also write the counts as JSON here")
    p.set_defaults(func=cmd_fuzz)
