"""The ``rewardsvc redteam`` command (registered by ``rewardsvc.cli``) and the replay of
its regression file (``rewardsvc probe --replay``, called by ``rewardsvc.cli_local``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewardsvc.redteam.attacker import Attacker
    from rewardsvc.redteam.local import EngineScorer
    from rewardsvc.redteam.regression import Regression
    from rewardsvc.redteam.search import ItemOutcome

ConfigArgs = Callable[[argparse.ArgumentParser], None]


def register(sub: Any, config_args: ConfigArgs) -> None:
    """Add ``redteam`` to the ``rewardsvc`` subcommands."""
    p = sub.add_parser(
        "redteam", help="search for completions that beat an honest wrong answer and stay wrong"
    )
    config_args(p)
    p.add_argument("items", help='JSON lines {"id", "prompt", "completion", "reference"|"keep"}')
    p.add_argument(
        "--rubric", required=True, help="rubric id of the library, or a rubric file (.yaml)"
    )
    p.add_argument("--budget", type=int, default=2000, help="judge calls in all (default 2000)")
    p.add_argument("--out", required=True, help="the regression file to write (JSON)")
    p.add_argument("--seed", type=int, default=0, help="seed of the mutations (default 0)")
    p.add_argument("--beam", type=int, default=4, help="parents kept a generation (default 4)")
    p.add_argument("--children", type=int, default=8, help="mutants a generation (default 8)")
    p.add_argument(
        "--tolerance", type=float, default=0.05, help="margin an attack needs (default 0.05)"
    )
    p.add_argument("--attacker", help="judge of the pool that rewrites attacks (default: none)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument(
        "--canaries",
        help="also write the attacks that beat their baseline as a monitor canary file "
        "(YAML; put it in the monitor's canary folder)",
    )
    p.set_defaults(func=cmd_redteam)


async def _scorer(rubric: str, args: argparse.Namespace) -> EngineScorer:
    # Imported on use: registering the command must not load the judges' HTTP stack.
    from rewardsvc.application.root import settings_with
    from rewardsvc.redteam.local import EngineScorer

    return await EngineScorer.build(rubric, settings_with(args.rubrics, args.judges))


def _attacker(args: argparse.Namespace, scorer: EngineScorer) -> Attacker | None:
    """The ``--attacker`` judge, from the judge pool the scorer's application was composed
    with (the pool is loaded once, by the composition root)."""
    from rewardsvc.redteam.attacker import Attacker

    if args.attacker is None:
        return None
    pool = scorer.app.registry.pool
    if args.attacker not in pool.judges:
        raise SystemExit(f"rewardsvc: error: --attacker: no judge {args.attacker!r} in the pool")
    return Attacker(args.attacker, pool.judges[args.attacker])


def _progress(o: ItemOutcome) -> None:
    best = o.margin(o.best())
    print(
        f"redteam: item {o.item.id}: {o.calls} calls, {len(o.scored)} scored, best margin "
        f"{_fmt(best)}",
        file=sys.stderr,
        flush=True,
    )


async def _run(args: argparse.Namespace) -> Regression:
    from rewardsvc.redteam.gold import read_items
    from rewardsvc.redteam.operators import operators
    from rewardsvc.redteam.regression import Regression, found_attack, summarize
    from rewardsvc.redteam.search import Search

    items = read_items(Path(args.items))
    scorer = await _scorer(args.rubric, args)
    try:
        attacker = _attacker(args, scorer)
    except BaseException:
        await scorer.aclose()
        raise
    search = Search(
        scorer,
        operators(),
        seed=args.seed,
        beam=args.beam,
        children=args.children,
        rewriter=None if attacker is None else attacker.rewrite,
        on_batch=_progress,
    )
    try:
        share = args.budget // max(len(items), 1)
        outcomes = [await search.run(item, share) for item in items]
    finally:
        await scorer.aclose()
        if attacker is not None:
            await attacker.aclose()
    found = [f for o in outcomes if (f := found_attack(o, args.tolerance)) is not None]
    return Regression(
        rubric=args.rubric,
        rubric_version=scorer.version,
        judges=scorer.identities(),
        seed=args.seed,
        tolerance=args.tolerance,
        summary=summarize(outcomes, args.budget, args.tolerance),
        attacks=found,
    )


def _write_canaries(reg: Regression, out: Path) -> None:
    from rewardsvc.redteam.canaries import canaries_of, write_canaries

    canaries = canaries_of(reg)
    if canaries is None:
        print(f"no attack beat its baseline with a reference: {out} not written")
    else:
        write_canaries(canaries, out)
        print(f"{len(canaries.cases)} canaries written to {out}")


def cmd_redteam(args: argparse.Namespace) -> int:
    """Run the search, write the regression file, print the summary; exit 1 when an
    attack beat the honest wrong answer by more than the tolerance."""
    reg = asyncio.run(_run(args))
    Path(args.out).write_text(reg.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if args.canaries:
        _write_canaries(reg, Path(args.canaries))
    s = reg.summary
    if args.json:
        print(s.model_dump_json(indent=2))
    else:
        print(f"rubric {reg.rubric} {reg.rubric_version}: {s.calls} of {s.budget} judge calls")
        print(f"  attack success rate {s.attack_success_rate:.2f} over {s.items} items")
        print(f"  best margin {_fmt(s.best_margin)} (probe catalogue {_fmt(s.probe_best_margin)})")
        for a in reg.attacks:
            mark = "  <- beats" if a.succeeded else ""
            print(
                f"  {a.item:<16} {_fmt(a.baseline_reward)} -> {_fmt(a.reward)}"
                f"  {'+'.join(a.families) or '-'}  flags {','.join(a.flags) or '-'}{mark}"
            )
        for flag, families in s.caught.items():
            print(f"  flag {flag}: " + ", ".join(f"{f} {n}" for f, n in families.items()))
    return 1 if any(a.succeeded for a in reg.attacks) else 0


def _fmt(value: float | None) -> str:
    return "null" if value is None else f"{value:+.3f}" if value < 0 else f"{value:.3f}"


async def _replay(reg: Regression, args: argparse.Namespace) -> tuple[list[Any], list[str]]:
    from rewardsvc.redteam.regression import comparable, replay_items, replay_rows

    scorer = await _scorer(reg.rubric, args)
    try:
        results = await scorer.score(replay_items(reg))
    finally:
        await scorer.aclose()
    why = comparable(reg, scorer.version, scorer.identities())
    return replay_rows(reg, results, args.tolerance), why


def cmd_replay(args: argparse.Namespace) -> int:
    """``probe --replay FILE``: score a regression file's attacks and baselines again; exit
    1 when an attack still beats its baseline by more than ``--tolerance``."""
    from rewardsvc.redteam.regression import Regression

    reg = Regression.model_validate_json(Path(args.replay).read_text(encoding="utf-8"))
    rows, why = asyncio.run(_replay(reg, args))
    failed = [r for r in rows if r["fails"]]
    if args.json:
        print(json.dumps({"comparable": not why, "why": why, "attacks": rows}, indent=2))
    else:
        for reason in why:
            print(f"not comparable: {reason}", file=sys.stderr)
        print(f"replay of {args.replay}: rubric {reg.rubric}, {len(rows)} attacks")
        for r in rows:
            mark = "  <- FAILS" if r["fails"] else ""
            print(
                f"  {r['item']:<16} recorded {_fmt(r['recorded'])} replayed {_fmt(r['reward'])}"
                f"  margin {_fmt(r['margin'])}  flags {','.join(r['flags']) or '-'}{mark}"
            )
        print(
            f"{len(failed)} of {len(rows)} attacks beat their baseline by more than "
            f"{args.tolerance}"
        )
    return 1 if failed else 0
