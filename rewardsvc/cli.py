"""The ``rewardsvc`` command: serve, validate, schema, score, probe, label, eval, cascade,
rubrics, redteam, fuzz-graders."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from rewardsvc.cli_local import (
    StartupError,
    _settings,
    cmd_probe,
    cmd_score,
    load_checked_pool,
)
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.library.recipes import (
    RECIPES_DIR,
    link_recipe,
    link_routing,
    validate_recipe_file,
)
from rewardsvc.library.registry import (
    RUBRIC_SUFFIXES,
    UnknownRubric,
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

GOLDEN_DIR = "golden"
"""The library's folder of golden sets (``rubrics/golden/<rubric-id>.yaml``)."""

if TYPE_CHECKING:
    from rewardsvc.settings import Settings


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
    from rewardsvc.application.root import load_registry
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
    registry = load_registry(settings, pool)
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
    """The YAML files named by ``paths``: files as given, directories searched recursively
    (FileNotFoundError for a path that names nothing)."""
    files: list[Path] = []
    for raw in paths:
        path = _existing(raw)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in RUBRIC_SUFFIXES)
        else:
            files.append(path)
    return files


def _existing(raw: str) -> Path:
    """``raw`` as a path; FileNotFoundError (one line and exit 2, see :func:`main`) when it
    names nothing."""
    path = Path(raw)
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), raw)
    return path


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate rubric, recipe, canary, golden set and judge pool files; one line per
    problem; exit 1 on any (2 when a path or ``--judges`` names nothing)."""
    problems: list[Problem] = []
    pool: JudgePool | None = None
    pool_path = _existing(args.judges) if args.judges else Path(_settings(args).judge_pool)
    files = _files(args.paths)
    try:
        pool = load_pool(pool_path)
    except InvalidFile as exc:
        problems += exc.problems
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
    (``kind: recipe`` or ``routing``), a set of items written for a rubric (its canaries,
    its golden set: :class:`~rewardsvc.monitor.rubric_sets.RubricSet`), or else a rubric.
    Returns the rubric, recipe, routing table or set (None for a pool)."""
    from rewardsvc.monitor.canaries import CanarySet
    from rewardsvc.monitor.golden_set import GoldenSet

    rubric_set = next((kind for kind in (CanarySet, GoldenSet) if kind.describes(doc)), None)
    if is_pool_document(doc):
        validate_document(doc, JudgePool, str(path))
    elif isinstance(doc, dict) and doc.get("kind") in ("recipe", "routing"):
        return validate_recipe_file(doc, path, context)
    elif rubric_set is not None:
        return validate_document(doc, rubric_set, str(path), context)
    else:
        return validate_rubric_file(doc, path, context)
    return None


def _link(
    linked: list[tuple[Path, str, Any, Any]], rubrics: dict[str, Rubric], context: dict[str, Any]
) -> list[Problem]:
    """Check that recipes name served rubrics, routing tables served targets and sets of a
    rubric (golden sets) their rubric's criteria: those validated in this run, and those of
    the library a ``recipes/`` or ``golden/`` folder belongs to."""
    from rewardsvc.core.recipe import Recipe
    from rewardsvc.monitor.rubric_sets import RubricSet

    known = dict(rubrics)
    folders = (RECIPES_DIR, GOLDEN_DIR)
    for library in {p.parent.parent for p, *_ in linked if p.parent.name in folders}:
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
        if isinstance(document, RubricSet):
            of = known.get(document.rubric)
            criteria = None if of is None else [c.id for c in of.criteria]
            problems += document.rubric_problems(doc, str(path), criteria)
            continue
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


DATA_SOURCE_HELP = (
    "the item's metadata.data_source: a routing table scores it with its route's recipe or "
    "rubric (needed unless the table has a default route)"
)


def _add_local(sub: Any, config_args: Callable[[argparse.ArgumentParser], None]) -> None:
    """``score`` and ``probe``: one completion scored in-process, and attacks on it."""
    score = sub.add_parser("score", help="score one completion and print the breakdown")
    config_args(score)
    score.add_argument(
        "--rubric", required=True, help="id of a library rubric, recipe or routing table"
    )
    score.add_argument("--prompt", required=True)
    score.add_argument("--completion", required=True)
    score.add_argument("--reference")
    score.add_argument("--data-source", help=DATA_SOURCE_HELP)
    score.add_argument("--json", action="store_true", help="print the full JSON result")
    score.add_argument(
        "--explain", action="store_true", help="also print what each judge read, fences included"
    )
    score.set_defaults(func=cmd_score)

    probe = sub.add_parser(
        "probe", help="score known judge attacks built from a completion against a rubric"
    )
    config_args(probe)
    probe.add_argument(
        "--rubric", help="id of a library rubric, recipe or routing table (unless --replay)"
    )
    probe.add_argument("--prompt", help="(required unless --replay)")
    probe.add_argument("--completion", help="an honest answer to attack (required unless --replay)")
    probe.add_argument("--reference")
    probe.add_argument("--data-source", help=DATA_SOURCE_HELP)
    probe.add_argument(
        "--tolerance", type=float, default=0.05, help="reward gain an attack may get (default 0.05)"
    )
    probe.add_argument(
        "--replay",
        metavar="FILE",
        help="score the attacks of a `rewardsvc redteam` regression file again instead; "
        "exit 1 when one beats its honest baseline by more than --tolerance",
    )
    probe.add_argument("--json", action="store_true", help="print the results as JSON")
    probe.set_defaults(func=cmd_probe)


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
    serve.add_argument(
        "--reward-log",
        metavar="FILE",
        help="append one JSON line per scored item to FILE, the file `rewardsvc rubrics "
        "health --log` reads (REWARDSVC_REWARD_LOG; default: no log)",
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

    _add_local(sub, config_args)
    from rewardsvc.authoring.commands import register as register_authoring
    from rewardsvc.evaluation.cascade_commands import register as register_cascade
    from rewardsvc.evaluation.commands import register as register_evaluation
    from rewardsvc.fuzzing.commands import register as register_fuzzing
    from rewardsvc.redteam.commands import register as register_redteam

    registers = (register_evaluation, register_cascade, register_authoring, register_redteam)
    for register in (*registers, register_fuzzing):
        register(sub, config_args)
    return parser


def _fail(*lines: str) -> int:
    """Print why the command cannot run, one line each, and return its exit status (2)."""
    for line in lines:
        print(f"rewardsvc: error: {line}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rewardsvc`` console script.

    What stops a command before it can work is one line on stderr and exit status 2, never
    a traceback: a configuration problem, an unknown rubric id, a file named on the command
    line (or by a setting) that is missing, unreadable or invalid.
    """
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (StartupError, UnknownRubric) as exc:
        return _fail(str(exc))
    except InvalidFile as exc:
        return _fail(*(str(p) for p in exc.problems))
    except OSError as exc:
        if exc.filename is None:
            raise  # not about a file: a fault to see whole
        return _fail(f"{exc.filename}: {exc.strerror or exc}")
    except ValidationError as exc:
        # Settings come from REWARDSVC_* variables: name the variable, not a traceback.
        return _fail(
            *(
                f"REWARDSVC_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
                for e in exc.errors()
            )
        )


if __name__ == "__main__":
    sys.exit(main())
