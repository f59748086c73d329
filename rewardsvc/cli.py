"""The ``rewardsvc`` command: serve, validate, schema, score, probe, label, eval."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.keys import missing_keys
from rewardsvc.library.recipes import (
    RECIPES_DIR,
    link_recipe,
    link_routing,
    validate_recipe_file,
)
from rewardsvc.library.registry import (
    RUBRIC_SUFFIXES,
    Entry,
    Registry,
    is_pool_document,
    load_pool,
    validate_rubric_file,
    validation_context,
)
from rewardsvc.library.yamlfile import (
    InvalidFile,
    Problem,
    parse_yaml,
    read_text,
    validate_document,
)
from rewardsvc.safety.attacks import attacks

if TYPE_CHECKING:
    from rewardsvc.settings import Settings


class StartupError(Exception):
    """A configuration problem that must stop the service before it serves."""


def _settings(args: argparse.Namespace) -> Settings:
    from rewardsvc.settings import Settings

    overrides = {
        key: value
        for key, value in {
            "host": getattr(args, "host", None),
            "port": getattr(args, "port", None),
            "rubrics_dir": getattr(args, "rubrics", None),
            "judge_pool": getattr(args, "judges", None),
            "workers": getattr(args, "workers", None),
        }.items()
        if value is not None
    }
    return Settings(**overrides)


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


def _check_api_keys(settings: Settings) -> None:
    """Refuse to serve openly when keys were asked for but none could be read."""
    if settings.api_keys is None and settings.api_keys_file is None:
        return
    try:
        keys = settings.api_key_list()
    except OSError as exc:
        raise StartupError(f"cannot read REWARDSVC_API_KEYS_FILE: {exc}") from exc
    if not keys:
        raise StartupError(
            "REWARDSVC_API_KEYS / REWARDSVC_API_KEYS_FILE is set but holds no key; "
            "refusing to serve without authentication"
        )


def cmd_serve(args: argparse.Namespace) -> int:
    """Start the HTTP service (the same entry command as the container image)."""
    from rewardsvc.server.app import create_app
    from rewardsvc.server.serve import serve, serve_workers

    settings = _settings(args)
    if settings.workers > 1 and settings.redis_url is None:
        raise StartupError(
            f"{settings.workers} workers need REWARDSVC_REDIS_URL: each worker is a process "
            "with its own verdict cache, calibration windows and monitor statistics, and "
            "without shared state they would split (set it, or serve with one worker)"
        )
    _check_api_keys(settings)
    pool = load_checked_pool(Path(settings.judge_pool))
    try:
        registry = Registry(Path(settings.rubrics_dir), pool, max_bytes=settings.max_rubric_bytes)
    except FileNotFoundError as exc:
        raise StartupError(str(exc)) from exc
    for file, problems in registry.errors().items():
        print(f"warning: {file} refused:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
    if settings.workers > 1:
        serve_workers(settings)
        return 0
    serve(create_app(settings, registry=registry), settings)
    return 0


def _files(paths: Sequence[str]) -> list[Path]:
    """The YAML files named by ``paths``: files as given, directories searched recursively."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in RUBRIC_SUFFIXES)
        else:
            files.append(path)
    return files


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate rubric, recipe, canary and judge pool files; one line per problem; exit 1
    on any."""
    problems: list[Problem] = []
    pool: JudgePool | None = None
    pool_path = Path(args.judges or _settings(args).judge_pool)
    try:
        pool = load_pool(pool_path)
    except InvalidFile as exc:
        problems += exc.problems
    files = _files(args.paths)
    context = validation_context(pool)
    rubrics: dict[str, Rubric] = {}
    linked: list[tuple[Path, str, Any, Any]] = []
    for path in files:
        try:
            text = read_text(path)
            doc = parse_yaml(text, str(path))
            document = _check_document(doc, path, context)
        except InvalidFile as exc:
            problems += exc.problems
            continue
        if isinstance(document, Rubric):
            rubrics[document.id] = document
        elif document is not None:
            linked.append((path, text, doc, document))
    problems += _link(linked, rubrics, context)
    for problem in problems:
        print(problem)
    print(_summary(len(files), problems, pool_path), file=sys.stderr)
    return 1 if problems else 0


def _check_document(doc: Any, path: Path, context: dict[str, Any]) -> Any:
    """Validate one parsed file as what it holds: a judge pool, a recipe or routing table
    (``kind: recipe`` or ``routing``), the canaries of a rubric (``rubric`` and ``cases``),
    or else a rubric. Returns the rubric, recipe or routing table (None for the others)."""
    from rewardsvc.monitor.canaries import CanarySet

    if is_pool_document(doc):
        validate_document(doc, JudgePool, str(path))
    elif isinstance(doc, dict) and doc.get("kind") in ("recipe", "routing"):
        return validate_recipe_file(doc, path, context)
    elif isinstance(doc, dict) and "cases" in doc and "id" not in doc:
        validate_document(doc, CanarySet, str(path), context)
    else:
        return validate_rubric_file(doc, path, context)
    return None


def _link(
    linked: list[tuple[Path, str, Any, Any]], rubrics: dict[str, Rubric], context: dict[str, Any]
) -> list[Problem]:
    """Check that recipes name served rubrics and routing tables served targets: those
    validated in this run, and those of the library a ``recipes/`` folder belongs to."""
    from rewardsvc.core.recipe import Recipe

    known = dict(rubrics)
    for library in {p.parent.parent for p, *_ in linked if p.parent.name == RECIPES_DIR}:
        for path in sorted(library.iterdir()):
            if path.suffix not in RUBRIC_SUFFIXES or not path.is_file():
                continue
            try:
                rubric = validate_rubric_file(parse_yaml(read_text(path), str(path)), path, context)
            except InvalidFile:
                continue  # reported when the file itself is validated
            known.setdefault(rubric.id, rubric)
    versions = {k: r.version() for k, r in known.items()}
    problems: list[Problem] = []
    linked.sort(key=lambda entry: not isinstance(entry[3], Recipe))
    for path, text, doc, document in linked:
        try:
            if isinstance(document, Recipe):
                versions[document.id] = link_recipe(document, doc, path, text, known.get).version
            else:
                link_routing(document, doc, path, text, versions)
        except InvalidFile as exc:
            problems += exc.problems
    return problems


def _summary(files: int, problems: Sequence[Problem], pool_path: Path) -> str:
    """The last line of ``validate``: how many files were checked and how many failed."""
    checked = f"{files} file(s) checked against judge pool {pool_path}: "
    if not problems:
        return checked + "all valid"
    return checked + f"{len(problems)} problem(s) in {len({p.file for p in problems})} file(s)"


def cmd_schema(args: argparse.Namespace) -> int:
    """Print the JSON Schema of a rubric file (of a judge pool file with --pool, of a
    recipe file with --recipe, of a routing table with --routing)."""
    from rewardsvc.core.recipe import Recipe, RoutingTable

    model: type[BaseModel] = Rubric
    if args.pool:
        model = JudgePool
    elif args.recipe:
        model = Recipe
    elif args.routing:
        model = RoutingTable
    print(json.dumps(model.model_json_schema(), indent=2))
    return 0


def _local_scorer(args: argparse.Namespace) -> tuple[Entry, JudgePool]:
    """The rubric entry and judge pool for scoring from the command line."""
    settings = _settings(args)
    pool = load_checked_pool(Path(settings.judge_pool))
    registry = Registry(Path(settings.rubrics_dir), pool)
    try:
        return registry.get(args.rubric), pool
    except KeyError:
        refused = "; ".join(str(p) for ps in registry.errors().values() for p in ps)
        raise StartupError(
            f"unknown rubric {args.rubric!r}; known: {[e.rubric.id for e in registry.entries()]}"
            + (f"; refused files: {refused}" if refused else "")
        ) from None


def _score_locally(
    pool: JudgePool, rubric: Rubric, items: list[dict[str, Any]], explain: bool = False
) -> dict[str, Any]:
    """Score items with a fresh engine (no cache), as the service would."""
    from rewardsvc.application.root import compose_engine
    from rewardsvc.application.targets import RubricTarget, score_target
    from rewardsvc.judges.judge import build_judges
    from rewardsvc.protocol.rewards import RewardOptions

    async def run() -> dict[str, Any]:
        engine = compose_engine(build_judges(pool), cached=False)
        options = RewardOptions(use_cache=False, explain=explain)
        try:
            response = await score_target(RubricTarget.of(rubric), engine, items, options)
        finally:
            await engine.aclose()
            if engine.graders is not None:
                await asyncio.to_thread(engine.graders.close)
        return response.model_dump(mode="json")

    return asyncio.run(run())


def _item(args: argparse.Namespace, completion: str, item_id: str) -> dict[str, Any]:
    item = {"id": item_id, "prompt": args.prompt, "completion": completion}
    if args.reference is not None:
        item["reference"] = args.reference
    return item


def cmd_score(args: argparse.Namespace) -> int:
    """Score one prompt/completion locally and print the breakdown per judge and criterion."""
    entry, pool = _local_scorer(args)
    items = [_item(args, args.completion, "cli")]
    response = _score_locally(pool, entry.rubric, items, explain=args.explain)
    if args.json:
        print(json.dumps(response, indent=2))
        return 0
    result = response["results"][0]
    print(f"rubric {entry.rubric.id} {entry.version}")
    print(
        f"reward {_fmt(result['reward'])}  status {result['status']}"
        f"  uncertainty {_fmt(result['uncertainty'])}  flags {result['flags'] or '-'}"
    )
    for name, judge in result["judges"].items():
        print(f"  judge {name}: {_fmt(judge['score'])}{_err(judge)}")
        for cid, crit in judge["criteria"].items():
            p = crit.get("p") or {}
            dist = " ".join(f"{k}={v:.2f}" for k, v in p.items())
            print(f"    {cid:<28} {_fmt(crit['score'])}  {dist}{_err(crit)}")
    for name, seen in (result.get("explain") or {}).items():
        for key, prompt in seen.items():
            print(f"\n--- what judge {name} read for {key} ---")
            if isinstance(prompt, str):
                print(prompt)
            else:
                for message in prompt:
                    print(f"[{message['role']}]\n{message['content']}")
    return 0 if result["status"] in ("ok", "degraded") else 1


def cmd_probe(args: argparse.Namespace) -> int:
    """Score a completion and its attack variants; exit 1 when an attack beats it."""
    entry, pool = _local_scorer(args)
    variants = attacks(args.completion)
    items = [_item(args, args.completion, "original")]
    items += [_item(args, a.completion, f"attack-{n}") for n, a in enumerate(variants)]
    results = _score_locally(pool, entry.rubric, items)["results"]
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
        print(f"rubric {entry.rubric.id} {entry.version}: original reward {_fmt(base)}")
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``rewardsvc`` command."""
    parser = argparse.ArgumentParser(prog="rewardsvc", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def config_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--rubrics", help="rubric library directory (REWARDSVC_RUBRICS_DIR)")
        p.add_argument("--judges", help="judge pool file (REWARDSVC_JUDGE_POOL)")

    serve = sub.add_parser("serve", help="start the HTTP service (configured by REWARDSVC_* env)")
    config_args(serve)
    serve.add_argument("--host", help="bind address (REWARDSVC_HOST)")
    serve.add_argument("--port", type=int, help="port (REWARDSVC_PORT)")
    serve.add_argument(
        "--workers", type=int, help="uvicorn worker processes (REWARDSVC_WORKERS; >1 needs Redis)"
    )
    serve.set_defaults(func=cmd_serve)

    validate = sub.add_parser("validate", help="check rubric and judge pool files")
    validate.add_argument("paths", nargs="*", default=["rubrics"], help="files or directories")
    validate.add_argument("--judges", help="judge pool to check judge names against")
    validate.set_defaults(func=cmd_validate)

    schema = sub.add_parser("schema", help="print the JSON Schema of rubric files")
    schema.add_argument("--pool", action="store_true", help="the judge pool schema instead")
    schema.add_argument("--recipe", action="store_true", help="the recipe schema instead")
    schema.add_argument("--routing", action="store_true", help="the routing table schema instead")
    schema.set_defaults(func=cmd_schema)

    score = sub.add_parser("score", help="score one completion and print the breakdown")
    config_args(score)
    score.add_argument("--rubric", required=True, help="rubric id")
    score.add_argument("--prompt", required=True)
    score.add_argument("--completion", required=True)
    score.add_argument("--reference")
    score.add_argument("--json", action="store_true", help="print the full JSON result")
    score.add_argument(
        "--explain", action="store_true", help="also print what each judge read, fences included"
    )
    score.set_defaults(func=cmd_score)

    probe = sub.add_parser(
        "probe", help="score known judge attacks built from a completion against a rubric"
    )
    config_args(probe)
    probe.add_argument("--rubric", required=True, help="rubric id")
    probe.add_argument("--prompt", required=True)
    probe.add_argument("--completion", required=True, help="an honest answer to attack")
    probe.add_argument("--reference")
    probe.add_argument(
        "--tolerance", type=float, default=0.05, help="reward gain an attack may get (default 0.05)"
    )
    probe.add_argument("--json", action="store_true", help="print the results as JSON")
    probe.set_defaults(func=cmd_probe)
    from rewardsvc.evaluation.commands import register as register_evaluation

    register_evaluation(sub, config_args)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rewardsvc`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except StartupError as exc:
        print(f"rewardsvc: error: {exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        # Settings come from REWARDSVC_* variables: name the variable, not a traceback.
        for error in exc.errors():
            name = "REWARDSVC_" + "_".join(str(p) for p in error["loc"]).upper()
            print(f"rewardsvc: error: {name}: {error['msg']}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
