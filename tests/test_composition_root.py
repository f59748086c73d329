"""One composition root: the registry and the engine are built only in
``rewardsvc.application.root``, and the server, ``rewardsvc eval`` and the red team get
the same engine from the same settings (issue 37)."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Any

import pytest

from rewardsvc import cli_local
from rewardsvc.evaluation import commands as eval_commands
from rewardsvc.library.registry import UnknownRubric
from rewardsvc.redteam import commands as redteam_commands
from rewardsvc.scoring.engine import Engine
from rewardsvc.server.service import start_service
from rewardsvc.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rewardsvc"
COMPOSITION_ROOT = PACKAGE / "application" / "root.py"
# The classes only the root may build, by the module that defines each.
BUILT_AT_THE_ROOT = {
    "rewardsvc.library.registry": "Registry",
    "rewardsvc.scoring.engine": "Engine",
}


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _imported_classes(tree: ast.Module, module: str) -> dict[str, str]:
    """The local names that bind a root-built class in ``module``, to the class's name."""
    package = module.rsplit(".", 1)[0]
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        source = node.module or ""
        if node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            source = f"{base}.{source}" if source else base
        wanted = BUILT_AT_THE_ROOT.get(source)
        for alias in node.names:
            if wanted is not None and alias.name == wanted:
                names[alias.asname or alias.name] = wanted
    return names


def _constructions(path: Path) -> list[str]:
    """Where ``path`` builds a Registry or an Engine: a call of the class, or the class
    handed to a call (``asyncio.to_thread(Registry, ...)``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = _imported_classes(tree, _module_of(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for part in (node.func, *node.args):
            if isinstance(part, ast.Name) and part.id in names:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {names[part.id]}")
            elif isinstance(part, ast.Attribute) and part.attr in BUILT_AT_THE_ROOT.values():
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {part.attr}")
    return found


def test_registry_and_engine_are_built_only_at_the_composition_root() -> None:
    """No module but ``application/root.py`` builds a Registry or an Engine (they were
    built in cli.py, cli_local.py, redteam/local.py, evaluation/scorers.py and
    authoring/health.py, each with its own idea of the settings)."""
    elsewhere = [
        site
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != COMPOSITION_ROOT
        for site in _constructions(path)
    ]
    assert elsewhere == []
    # The check sees the constructions it looks for.
    assert {site.rsplit(" ", 1)[1] for site in _constructions(COMPOSITION_ROOT)} == {
        "Registry",
        "Engine",
    }


def _limits(engine: Engine) -> dict[str, Any]:
    """What an engine was built with from settings: text bound, graders, calibration
    windows, and each judge's configuration (limits included) and identity."""
    assert engine.graders is not None
    return {
        "max_text_chars": engine.max_text_chars,
        "grader_timeout_s": engine.graders.timeout_s,
        "grader_workers": engine.graders.workers.processes,
        "windows": engine.windows.max_keys,
        "judges": {
            name: (judge.config.model_dump(), judge.cache_identity())  # type: ignore[attr-defined]
            for name, judge in engine.judges.items()
        },
    }


@pytest.fixture
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A library of one rubric, the CPU pool, and limits unlike the defaults, all set in
    the environment (as a deployment sets them for every command)."""
    text = (ROOT / "rubrics" / "short-answer-correctness.yaml").read_text(encoding="utf-8")
    (tmp_path / "short-answer-correctness.yaml").write_text(text, encoding="utf-8")
    env = {
        "REWARDSVC_RUBRICS_DIR": str(tmp_path),
        "REWARDSVC_JUDGE_POOL": str(ROOT / "deploy" / "cpu-judge" / "judges.yaml"),
        "REWARDSVC_MAX_TEXT_CHARS": "4321",
        "REWARDSVC_GRADER_TIMEOUT_S": "3.5",
        "REWARDSVC_GRADER_WORKERS": "1",
        "REWARDSVC_RELOAD": "false",
        "REWARDSVC_CACHE_PATH": str(tmp_path / "verdicts.sqlite"),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("REWARDSVC_REDIS_URL", raising=False)
    return env


def _args() -> argparse.Namespace:
    """The command line of ``eval``, ``redteam`` or ``score`` on the library's rubric, its
    paths left to the environment."""
    return argparse.Namespace(
        url=None,
        api_key=None,
        rubric="short-answer-correctness",
        rubrics=None,
        judges=None,
        criteria_format="rewardsvc",
        data_source=None,
    )


async def test_eval_and_the_red_team_get_the_servers_engine(environment: dict[str, str]) -> None:
    """From the same settings, ``rewardsvc eval``'s and the red team's engines hold what
    the server's holds: text bound, graders, calibration windows, judges with their
    limits; not the server's cache."""
    args = _args()
    service = await start_service(Settings())
    evaluation = await eval_commands._scorer(args)
    try:
        server = _limits(service.app.engine)
        assert server["max_text_chars"] == 4321 and server["grader_timeout_s"] == 3.5
        assert _limits(evaluation.engine) == server  # type: ignore[attr-defined]
        redteam = await redteam_commands._scorer(args.rubric, args)
        try:
            assert _limits(redteam.engine) == server
            # In-process runs measure the judges: never the server's cache file.
            assert service.app.engine.cache.path is not None
            assert redteam.engine.cache.path is None
        finally:
            await redteam.aclose()
        assert evaluation.engine.cache.path is None  # type: ignore[attr-defined]
    finally:
        await evaluation.aclose()
        await service.aclose()


async def test_every_command_reads_the_library_within_the_servers_bound(
    environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rubric file over ``REWARDSVC_MAX_RUBRIC_BYTES`` is refused by the server, and so by
    ``rewardsvc eval``, the red team and ``rewardsvc score`` (they built their registries
    with the default bound, and scored a rubric the server refuses)."""
    monkeypatch.setenv("REWARDSVC_MAX_RUBRIC_BYTES", "1024")  # the rubric file is 1.9 KB
    args = _args()
    service = await start_service(Settings())
    try:
        with pytest.raises(UnknownRubric):
            service.app.registry.get(args.rubric)
    finally:
        await service.aclose()
    with pytest.raises(UnknownRubric):
        await eval_commands._scorer(args)
    with pytest.raises(UnknownRubric):
        await redteam_commands._scorer(args.rubric, args)
    with pytest.raises(UnknownRubric):
        cli_local._local_scorer(args)


def _calls_of(path: Path, name: str) -> list[int]:
    """The lines of ``path`` that call ``name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
    ]


async def test_commands_take_their_settings_and_judge_pool_from_the_root(
    environment: dict[str, str],
) -> None:
    """One settings path: ``rewardsvc serve``/``score``/``probe`` built their Settings in
    ``cli_local`` beside the root's ``settings_with``, and the red team's ``--attacker``
    loaded the judge pool file again instead of taking the judge from the pool its
    application was composed with."""
    assert _calls_of(PACKAGE / "cli_local.py", "Settings") == []
    assert _calls_of(PACKAGE / "redteam" / "commands.py", "load_pool") == []
    args = _args()
    args.port, args.workers = 8123, None
    assert cli_local._settings(args).port == 8123
    assert cli_local._settings(args).max_text_chars == 4321  # the environment's
    scorer = await redteam_commands._scorer(args.rubric, args)
    try:
        name = next(iter(scorer.app.registry.pool.judges))
        args.attacker = name
        attacker = redteam_commands._attacker(args, scorer)
        assert attacker is not None
        assert attacker.config is scorer.app.registry.pool.judges[name]
        await attacker.aclose()
        args.attacker = "nobody"
        with pytest.raises(SystemExit, match="no judge 'nobody'"):
            redteam_commands._attacker(args, scorer)
    finally:
        await scorer.aclose()
