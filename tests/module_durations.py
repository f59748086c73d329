"""A pytest plugin: the wall time of each test module, its slowest printed, all kept to compare.

Every phase of every test (setup, call, teardown: the judges and services a module's fixtures
start count where they start) is summed per module. At the end of the session the terminal
summary shows the 15 slowest modules of the run, and ``--module-times FILE`` (default
``bench/results/local/test-modules.md``, git-ignored) is rewritten as a Markdown table of
every module measured so far, slowest first: a module this run measured gets its new time,
with the time it had before in the ``previous`` column; the others keep their last figures,
so that a run of a few modules does not erase the whole suite's.
Registered by ``tests/conftest.py``; documented in docs/development/contributing.md.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

DEFAULT_FILE = (
    Path(__file__).resolve().parents[1] / "bench" / "results" / "local" / "test-modules.md"
)
SHOWN = 15
HEADER = "| module | seconds | tests | previous (s) | measured |"
ROW = re.compile(
    r"^\| `(?P<module>[^`]+)` \| (?P<seconds>[\d.]+) \| (?P<tests>\d+) \| [^|]* "
    r"\| (?P<at>[^|]+) \|$"
)


@dataclass(frozen=True)
class Timing:
    """One module's figures: seconds of wall time over its tests, and how many ran."""

    seconds: float
    tests: int
    measured: str
    previous: float | None = None


class ModuleDurations:
    """Sums the reports' durations per module; renders and merges the table."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.tests: defaultdict[str, int] = defaultdict(int)

    def add(self, nodeid: str, when: str, duration: float) -> None:
        """One phase of one test."""
        module = nodeid.split("::", 1)[0]
        self.seconds[module] += duration
        if when == "call":
            self.tests[module] += 1

    def slowest(self, count: int = SHOWN) -> list[tuple[str, float, int]]:
        """This run's ``count`` slowest modules: (module, seconds, tests)."""
        ranked = sorted(self.seconds.items(), key=lambda kv: kv[1], reverse=True)
        return [(module, seconds, self.tests[module]) for module, seconds in ranked[:count]]

    def merged(self, earlier: dict[str, Timing], now: str) -> dict[str, Timing]:
        """``earlier`` (the file's table) with this run's modules replaced, their old time
        kept as ``previous``."""
        table = dict(earlier)
        for module, seconds in self.seconds.items():
            before = earlier.get(module)
            table[module] = Timing(
                seconds, self.tests[module], now, before.seconds if before else None
            )
        return table

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Hook: count the phase a report is about."""
        self.add(report.nodeid, report.when, report.duration)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Hook: print this run's slowest modules and merge the run into the file."""
        if not self.seconds:
            return
        terminalreporter.write_sep("=", f"slowest {SHOWN} test modules (wall time)")
        for module, seconds, tests in self.slowest():
            terminalreporter.write_line(f"{seconds:9.1f} s  {tests:4d} tests  {module}")
        self.write(datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
        terminalreporter.write_line(f"every module, with its previous time: {self.path}")

    def write(self, now: str) -> None:
        """Rewrite the file with this run merged into what it held."""
        earlier = read_table(self.path.read_text(encoding="utf-8")) if self.path.exists() else {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(render_table(self.merged(earlier, now)), encoding="utf-8")


def read_table(text: str) -> dict[str, Timing]:
    """The modules of a table ``render_table`` wrote (lines it does not recognise skipped)."""
    table = {}
    for line in text.splitlines():
        if match := ROW.match(line):
            table[match["module"]] = Timing(
                float(match["seconds"]), int(match["tests"]), match["at"].strip()
            )
    return table


def render_table(table: dict[str, Timing]) -> str:
    """The file: every module, slowest first."""
    lines = [
        "# Test modules by wall time",
        "",
        "Written by `tests/module_durations.py` at the end of every pytest session (`make test`",
        "runs the whole suite): seconds summed over each module's tests, setup and teardown",
        "included; `previous` is the module's time in the run before the one that measured it.",
        "",
        HEADER,
        "|---|---|---|---|---|",
    ]
    for module, t in sorted(table.items(), key=lambda kv: kv[1].seconds, reverse=True):
        previous = "" if t.previous is None else f"{t.previous:.1f}"
        lines.append(f"| `{module}` | {t.seconds:.1f} | {t.tests} | {previous} | {t.measured} |")
    return "\n".join(lines) + "\n"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--module-times",
        default=str(DEFAULT_FILE),
        help="Markdown file of the wall time per test module, merged at the end of each run.",
    )


def pytest_configure(config: pytest.Config) -> None:
    path = Path(config.getoption("--module-times"))
    config.pluginmanager.register(ModuleDurations(path), "module-durations")
