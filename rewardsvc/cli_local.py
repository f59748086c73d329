"""The ``rewardsvc`` commands that score in this process: ``score`` and ``probe``.

They compose an engine through ``rewardsvc.application`` (no cache, no monitor) and score
as the service would, with a library rubric, recipe or routing table (one id space, as
``POST /v1/rewards``); also here, what every command needs to read its configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewardsvc.core.pool import JudgePool
from rewardsvc.judges.keys import missing_keys
from rewardsvc.library.registry import Registry, load_pool
from rewardsvc.library.yamlfile import InvalidFile
from rewardsvc.safety.attacks import attacks

if TYPE_CHECKING:
    from rewardsvc.application.targets import Target
    from rewardsvc.settings import Settings


class StartupError(Exception):
    """A configuration problem that must stop the service before it serves."""


def _settings(args: argparse.Namespace) -> Settings:
    """The settings of the environment with the command line's options (those it has)."""
    from rewardsvc.application.root import settings_with

    options = ("host", "port", "workers", "reward_log")
    return settings_with(
        getattr(args, "rubrics", None),
        getattr(args, "judges", None),
        **{name: getattr(args, name, None) for name in options},
    )


def load_checked_pool(path: Path) -> JudgePool:
    """Load the judge pool, refusing a missing file, an invalid one, or unset API key variables."""
    if not path.is_file():
        raise StartupError(
            f"judge pool file {path} not found (set REWARDSVC_JUDGE_POOL or --judges)"
        )
    try:
        pool = load_pool(path)
    except InvalidFile as exc:
        raise StartupError(f"invalid judge pool file:\n{exc}") from exc
    missing = missing_keys(pool)
    if missing:
        raise StartupError(
            f"judge pool {path} needs these environment variables, which are unset: "
            + ", ".join(missing)
        )
    return pool


def _local_scorer(args: argparse.Namespace) -> tuple[Target, Registry, Settings]:
    """The library rubric, recipe or routing table ``--rubric`` names, its library and the
    settings for scoring from the command line (UnknownRubric when none has that id)."""
    from rewardsvc.application.root import load_registry
    from rewardsvc.application.targets import RoutingTarget, library_target

    settings = _settings(args)
    registry = load_registry(settings, load_checked_pool(Path(settings.judge_pool)))
    target = library_target(registry, args.rubric)
    if target is None:
        raise registry.unknown(args.rubric)
    if isinstance(target, RoutingTarget) and target.table.default is None:
        sources = sorted(target.table.routes)
        if args.data_source not in sources:
            # Without a default route, an item whose source is not routed is rejected.
            raise StartupError(
                f"routing table {target.id!r} picks its recipe or rubric by the item's data "
                f"source: give --data-source, one of {', '.join(sources)}"
            )
    return target, registry, settings


def _score_locally(
    local: tuple[Target, Registry, Settings], items: list[dict[str, Any]], explain: bool = False
) -> dict[str, Any]:
    """Score items with the library's target in a fresh application (no cache, no
    monitor), as the service would."""
    from rewardsvc.application.root import compose_local
    from rewardsvc.application.targets import score_target
    from rewardsvc.protocol.rewards import RewardOptions

    target, registry, settings = local

    async def run() -> dict[str, Any]:
        app = await compose_local(settings, registry)
        options = RewardOptions(use_cache=False, explain=explain)
        try:
            response = await score_target(target, app.engine, items, options)
        finally:
            await app.aclose()
        return response.model_dump(mode="json")

    return asyncio.run(run())


def _item(args: argparse.Namespace, completion: str, item_id: str) -> dict[str, Any]:
    item: dict[str, Any] = {"id": item_id, "prompt": args.prompt, "completion": completion}
    if args.reference is not None:
        item["reference"] = args.reference
    if args.data_source is not None:
        item["metadata"] = {"data_source": args.data_source}
    return item


def cmd_score(args: argparse.Namespace) -> int:
    """Score one prompt/completion locally and print the breakdown per judge and criterion
    (per component first, for a recipe)."""
    local = _local_scorer(args)
    target = local[0]
    items = [_item(args, args.completion, "cli")]
    response = _score_locally(local, items, explain=args.explain)
    if args.json:
        print(json.dumps(response, indent=2))
        return 0
    result = response["results"][0]
    print(f"{target.kind} {target.id} {target.version}")
    if result.get("scored_by"):
        scored_by = result["scored_by"]
        print(f"routed to {scored_by['kind']} {scored_by['id']} {scored_by['version']}")
    print(
        f"reward {_fmt(result['reward'])}  status {result['status']}"
        f"  uncertainty {_fmt(result['uncertainty'])}  flags {result['flags'] or '-'}"
        + (f"  error: {result['error']}" if result.get("error") else "")
    )
    _print_judges(result["judges"], "  ")
    for cid, part in (result.get("components") or {}).items():
        why = f"  skipped: {part['skipped']}" if part.get("skipped") else _err(part)
        print(
            f"  component {cid} ({part['kind']}, weight {part['weight']}): "
            f"{_fmt(part['score'])}{why}"
        )
        _print_judges(part["judges"], "    ")
    for name, seen in (result.get("explain") or {}).items():
        for key, prompt in seen.items():
            print(f"\n--- what judge {name} read for {key} ---")
            if isinstance(prompt, str):
                print(prompt)
            else:
                for message in prompt:
                    print(f"[{message['role']}]\n{message['content']}")
    return 0 if result["status"] in ("ok", "degraded") else 1


def _print_judges(judges: dict[str, Any], indent: str) -> None:
    """Each judge's score, then each criterion's with the judge's answer distribution."""
    for name, judge in judges.items():
        print(f"{indent}judge {name}: {_fmt(judge['score'])}{_err(judge)}")
        for cid, crit in judge["criteria"].items():
            p = crit.get("p") or {}
            dist = " ".join(f"{k}={v:.2f}" for k, v in p.items())
            print(f"{indent}  {cid:<28} {_fmt(crit['score'])}  {dist}{_err(crit)}")


def cmd_probe(args: argparse.Namespace) -> int:
    """Score a completion and its attack variants; exit 1 when an attack beats it. With
    ``--replay FILE``, score a red-team regression file's attacks again instead."""
    if args.replay is not None:
        from rewardsvc.redteam.commands import cmd_replay

        return cmd_replay(args)
    if args.rubric is None or args.prompt is None or args.completion is None:
        raise StartupError("probe needs --rubric, --prompt and --completion, or --replay FILE")
    local = _local_scorer(args)
    target = local[0]
    variants = attacks(args.completion)
    items = [_item(args, args.completion, "original")]
    items += [_item(args, a.completion, f"attack-{n}") for n, a in enumerate(variants)]
    results = _score_locally(local, items)["results"]
    base = results[0]["reward"]
    rows = []
    for attack, result in zip(variants, results[1:], strict=True):
        reward = result["reward"]
        delta = None if reward is None or base is None else reward - base
        # A meaning-preserving rewrite should move the reward by at most the tolerance
        # either way; an attack should not raise it by more than the tolerance.
        beats = delta is not None and (
            abs(delta) > args.tolerance if attack.preserves_meaning else delta > args.tolerance
        )
        rows.append(
            {
                "family": attack.family,
                "attack": attack.name,
                "reward": reward,
                "delta": delta,
                "status": result["status"],
                "flags": result["flags"],
                "fails": beats,
            }
        )
    failed = [r for r in rows if r["fails"]]
    if args.json:
        print(json.dumps({"original": results[0], "attacks": rows}, indent=2))
    else:
        print(f"{target.kind} {target.id} {target.version}: original reward {_fmt(base)}")
        print(f"{'family':<20} {'attack':<36} {'reward':>7} {'delta':>7}  flags")
        for r in rows:
            mark = "  <- FAILS" if r["fails"] else ""
            delta = "" if r["delta"] is None else f"{r['delta']:+.3f}"
            print(
                f"{r['family']:<20} {r['attack'][:36]:<36} {_fmt(r['reward']):>7} {delta:>7}"
                f"  {','.join(r['flags']) or '-'}{mark}"
            )
        print(f"{len(failed)} of {len(rows)} variants moved the reward beyond ±{args.tolerance}")
    return 1 if failed else 0


def _fmt(value: float | None) -> str:
    return "null" if value is None else f"{value:.3f}"


def _err(part: dict[str, Any]) -> str:
    return f"  error: {part['error']}" if part.get("error") else ""
