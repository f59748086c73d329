"""Where every bench writes its results: one ``--out`` folder, git-ignored by default.

``bench/results/`` holds the tracked results that the docs quote; a bench run as its docs
show writes to ``bench/results/local/`` (git-ignored) instead, so that trying a bench
never overwrites a tracked result. ``--out bench/results`` (what ``make bench`` passes)
writes the tracked ones. Light on purpose (no psutil, no aiohttp): the benches that run
in the service's environment import it too.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
"""The tracked results, written only when asked: ``--out bench/results``."""
LOCAL_RESULTS_DIR = RESULTS_DIR / "local"
"""Where every bench writes by default (git-ignored)."""


def add_out_argument(parser: argparse.ArgumentParser) -> None:
    """``--out``: the folder a bench writes its results to, each file under its own name."""
    parser.add_argument(
        "--out",
        type=Path,
        default=LOCAL_RESULTS_DIR,
        help="results folder (default bench/results/local/, git-ignored; "
        "--out bench/results updates the tracked results)",
    )


def write_results(folder: Path, name: str, result: dict[str, Any], markdown: str) -> None:
    """A bench's figures: ``name``.json and ``name``.md in ``folder`` (its ``--out``), and
    the Markdown printed."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (folder / f"{name}.md").write_text(markdown)
    print(markdown)
