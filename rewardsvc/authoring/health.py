"""``rewardsvc rubrics health RUN``: is the rubric still telling completions apart?

Reports a run's rubric health (the monitor's :mod:`rewardsvc.monitor.health`): the share of
groups whose rewards have zero spread, each criterion's pass rate, saturation and
discrimination, the saturated criteria by name, and the ``non_discriminative`` alert. Read
from a running service's ``GET /v1/monitor`` (``--url``), or computed from a reward log
(``--log``) by replaying its lines into a monitor with the rubric library's ``monitor:``
settings (``--rubrics``; the defaults without it).

Exit status: 0, 1 when ``non_discriminative`` fires for a run, 2 when nothing could be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from rewardsvc.core.monitor_spec import NON_DISCRIMINATIVE, MonitorConfig
from rewardsvc.monitor import Monitor
from rewardsvc.monitor.health import measure
from rewardsvc.monitor.replay import BadLine, Replay

ConfigArgs = Callable[[argparse.ArgumentParser], None]
Report = list[dict[str, Any]]


class HealthError(Exception):
    """Nothing to report (the message says why)."""


def register(sub: Any, config_args: ConfigArgs) -> None:
    """Register ``health`` in the ``rubrics`` group."""
    p = sub.add_parser("health", help="report a run's rubric health (zero spread, saturation)")
    p.add_argument("run", help="the run's name (the requests' run; 'default' without one)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--url", help="read the monitor of the service at this URL")
    source.add_argument("--log", type=Path, help="compute it from this reward log file")
    p.add_argument("--rubric", help="only this rubric's run")
    p.add_argument("--api-key", help="the service's API key (default $REWARDSVC_API_KEY)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    config_args(p)
    p.set_defaults(func=cmd_health)


def from_url(url: str, run: str, rubric: str | None, api_key: str | None) -> Report:
    """The run's health as the service's monitor reports it."""
    params = {"run": run, **({"rubric": rubric} if rubric else {})}
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(f"{url.rstrip('/')}/v1/monitor", params=params, headers=headers)
    except httpx.HTTPError as exc:
        raise HealthError(f"{url}: {exc}") from exc
    if response.status_code != 200:
        raise HealthError(f"GET {url}/v1/monitor: HTTP {response.status_code}: {response.text}")
    out = []
    for r in response.json()["runs"]:
        alert = next((a for a in r["alerts"] if a["name"] == NON_DISCRIMINATIVE), None)
        out.append(_entry(r["rubric"], r["run"], r["samples"], r["health"], alert))
    return out


def from_log(
    path: Path, run: str, rubric: str | None, config_for: Callable[[str], MonitorConfig]
) -> tuple[Report, list[str]]:
    """The run's health replayed from the reward log at ``path``, and the problems met
    (``file:line: why``; a bad line is skipped, the others still count)."""
    monitor = Monitor(config_for)
    replay = Replay(monitor, run, rubric)
    problems: list[str] = []
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise HealthError(f"{path}: {exc.strerror}") from exc
    with handle:
        for number, text in enumerate(handle, 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
                if not isinstance(line, dict):
                    raise BadLine("not a JSON object")
                replay.feed(line)
            except (ValueError, TypeError) as exc:  # json's errors and BadLine are ValueErrors
                problems.append(f"{path}:{number}: {exc}")
    replay.flush()
    out = []
    for state in monitor.runs(run=run):
        # The window as it is now (the last evaluation may be a few samples behind).
        health = measure(state.window, state.config.health, state.window.health_inputs).report()
        alert = state.tracker.alerts.get(NON_DISCRIMINATIVE)
        found = None
        if alert is not None:
            found = {"state": alert.state, "value": alert.value, "criteria": list(alert.criteria)}
        out.append(_entry(state.rubric, state.run, state.samples, health, found))
    return out, problems


def _entry(
    rubric: str, run: str, samples: int, health: dict[str, Any] | None, alert: Any
) -> dict[str, Any]:
    if alert is not None:
        alert = {k: alert[k] for k in ("state", "value", "criteria")}
    return {"rubric": rubric, "run": run, "samples": samples, "health": health, "alert": alert}


COLUMNS = ("criterion", "pass rate", "saturated", "discrim.", "scores", "groups")
WIDTHS = (-28, 9, 9, 9, 7, 7)
"""The table's columns and widths (negative: left-aligned)."""


def _row(cells: tuple[str, ...]) -> str:
    return "  " + " ".join(
        f"{c:<{-w}}" if w < 0 else f"{c:>{w}}" for c, w in zip(cells, WIDTHS, strict=True)
    )


def _figures(h: dict[str, Any]) -> list[str]:
    """A run's summary line, saturated criteria and per-criterion table."""
    share = "–" if h["zero_spread_share"] is None else f"{h['zero_spread_share']:.3f}"
    saturated = [c for c in h["criteria"] if c["saturated"]]
    named = ", ".join(
        f"{c['criterion']} ({c['saturated']}, {c['pass_rate']:.3f})" for c in saturated
    )
    lines = [
        f"  window: {h['samples']} ok items, {h['groups']} groups, "
        f"{h['zero_spread_groups']} with zero spread (share {share})",
        f"  saturated criteria: {named or 'none'}",
    ]
    if h["criteria"]:
        lines.append(_row(COLUMNS))
    for c in h["criteria"]:
        d = "–" if c["discrimination"] is None else f"{c['discrimination']:.4f}"
        cells = (c["criterion"], f"{c['pass_rate']:.3f}", c["saturated"] or "–", d)
        lines.append(_row((*cells, str(c["samples"]), str(c["groups"]))))
    return lines


def render(report: Report) -> str:
    """The report as text: per run, the alert, the summary, the saturated criteria and a
    table of every criterion."""
    lines: list[str] = []
    for r in report:
        alert = r["alert"]
        state = "not raised" if alert is None else alert["state"]
        lines.append(
            f"{r['rubric']} / {r['run']}: {r['samples']} samples; {NON_DISCRIMINATIVE}: {state}"
        )
        lines.extend(["  not evaluated yet"] if r["health"] is None else _figures(r["health"]))
    return "\n".join(lines)


def _config_for(args: argparse.Namespace) -> Callable[[str], MonitorConfig]:
    """The library's monitor settings when ``--rubrics`` is given, else the defaults."""
    if not args.rubrics:
        return lambda _rubric: MonitorConfig()
    from rewardsvc.application.monitoring import monitor_config
    from rewardsvc.application.root import load_registry, settings_with

    registry = load_registry(settings_with(args.rubrics, args.judges))
    return lambda rubric: monitor_config(registry, rubric)


def cmd_health(args: argparse.Namespace) -> int:
    """Print the report; the exit status says whether the alert fires (see the module)."""
    try:
        if args.url:
            key = args.api_key or os.environ.get("REWARDSVC_API_KEY")
            report, problems = from_url(args.url, args.run, args.rubric, key), list[str]()
        else:
            report, problems = from_log(args.log, args.run, args.rubric, _config_for(args))
    except HealthError as exc:
        print(f"rewardsvc rubrics health: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem, file=sys.stderr)
    if not report:
        print(f"rewardsvc rubrics health: no run {args.run!r}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else render(report))
    firing = any(r["alert"] is not None and r["alert"]["state"] == "firing" for r in report)
    return 1 if firing else 0
